import { routePath } from "../../http/table";
import { defineCommand } from "../command";
import { call, clientFromFlags, connectionArgs, jsonArgs, requiredTokenArgs } from "./client";
import { booleanFlag, parseFlags, secretFlag, stringFlag } from "./flags";
import {
  asRecord,
  formatFields,
  formatTable,
  list,
  note,
  printJson,
  printText,
  text,
} from "./output";
import { integerFlag, printRegistrations, printRotationPlan, shareWrapPlan } from "./quorum";

const initArgs = {
  "setup-token": {
    type: "string",
    valueHint: "value|env:VAR",
    required: true,
    description:
      "The one-time setup token from the signer's first start-up log, or env:VAR (required)",
  },
  "share-wrap": {
    type: "string",
    valueHint: "awskms:ARN|age:RECIPIENT,…",
    description:
      "One wrapping key per operator, comma-separated (default: key_sources.cloud_kv.kms_key_arns)",
  },
  threshold: {
    type: "string",
    valueHint: "n",
    description: "Shares needed to unseal (default: key_sources.cloud_kv.kms_threshold)",
  },
  ...connectionArgs,
  ...jsonArgs,
} as const;

export const initCommand = defineCommand({
  meta: {
    name: "init",
    description: "Initialize the signer: split the master key to the operators",
    examples: [
      'sigil operator init --setup-token env:SIGIL_SETUP_TOKEN --share-wrap "$OP1,$OP2,$OP3" --threshold 2',
    ],
    notes: [
      "Each --share-wrap entry is awskms:ARN or age:RECIPIENT (age1…, never the AGE-SECRET-KEY). docs/ceremony.md is the runbook.",
    ],
  },
  args: initArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, initArgs);
    const setupToken = secretFlag(values, "setup-token");
    const wrap = stringFlag(values, "share-wrap");
    const threshold = stringFlag(values, "threshold");
    // Without --share-wrap the signer's configured kms_key_arns (and kms_threshold) apply.
    const plan = wrap === undefined ? undefined : shareWrapPlan(wrap, threshold);
    const client = clientFromFlags(values, false);
    const { body } = await call(client, "POST", routePath("init"), {
      auth: false,
      body: {
        setup_token: setupToken,
        ...(plan && { share_wrap: plan.shareWrap, threshold: plan.threshold }),
        ...(!plan && threshold !== undefined && { threshold: integerFlag("threshold", threshold) }),
      },
    });
    if (booleanFlag(values, "json")) printJson(body);
    else printRegistrations(asRecord(body));
    note(
      "Initialized and sealed. Hand each registration token to its operator over a private channel: each works once (sigil operator register). Nobody can unseal until enough operators have registered.",
    );
  },
});

const registerArgs = {
  "registration-token": {
    type: "string",
    valueHint: "value|env:VAR",
    required: true,
    description:
      "Your one-time registration token from init or rotate quorum, or env:VAR (required)",
  },
  ...connectionArgs,
  ...jsonArgs,
} as const;

export const registerCommand = defineCommand({
  meta: {
    name: "register",
    description: "Trade your registration token for your operator credential",
    examples: ["sigil operator register --registration-token env:SIGIL_REGISTRATION_TOKEN"],
  },
  args: registerArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, registerArgs);
    const token = secretFlag(values, "registration-token");
    const client = clientFromFlags(values, false);
    const { body } = await call(client, "POST", routePath("register"), {
      auth: false,
      body: { registration_token: token },
    });
    const result = asRecord(body);
    if (booleanFlag(values, "json")) printJson(body);
    else
      printText(
        formatFields([
          ["operator", text(result.operator)],
          ["share_wrap", text(result.share_wrap)],
          ["credential", text(result.credential)],
        ]),
      );
    note(
      "Store this operator credential safely now: it is shown only once. With it and your wrapping key (KMS access or age identity) you unseal: sigil operator unseal --credential env:VAR.",
    );
  },
});

const sealArgs = { ...requiredTokenArgs, ...connectionArgs } as const;

export const sealCommand = defineCommand({
  meta: {
    name: "seal",
    description: "Seal the signer now: wipes the master key; signing stops",
    examples: ["sigil operator seal --token env:SIGIL_MANAGEMENT_TOKEN"],
  },
  args: sealArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, sealArgs);
    await call(clientFromFlags(values, "token"), "POST", routePath("seal"), { body: {} });
    printText("state  sealed");
  },
});

const statusArgs = { ...connectionArgs, ...jsonArgs } as const;

export const statusCommand = defineCommand({
  meta: {
    name: "status",
    description: "Show the seal state, the operators and any quorum in progress",
    examples: [
      "sigil operator status",
      "sigil operator status --signer-url https://signer.internal:9000 --ca-cert /etc/sigil/ca.pem --json",
    ],
  },
  args: statusArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, statusArgs);
    const { body } = await call(clientFromFlags(values, false), "GET", routePath("sealStatus"), {
      auth: false,
    });
    if (booleanFlag(values, "json")) return printJson(body);
    const status = asRecord(body);
    printText(
      formatFields([
        ["state", text(status.state)],
        ["seal_id", text(status.seal_id)],
        ["threshold", text(status.threshold)],
      ]),
    );
    const operators = Array.isArray(status.operators) ? status.operators.map(asRecord) : [];
    if (operators.length > 0) {
      printText(
        formatTable(
          ["OPERATOR", "SHARE_WRAP", "REGISTERED"],
          operators.map((op) => [text(op.id), text(op.share_wrap), op.registered ? "yes" : "no"]),
        ),
      );
    }
    const progress = Array.isArray(status.progress) ? status.progress.map(asRecord) : [];
    if (progress.length > 0) {
      printText(
        formatTable(
          ["OPERATION", "SUBMITTED", "BY", "EXPIRES_AT"],
          progress.map((p) => [
            text(p.operation),
            `${text(p.submitted)} of ${text(p.threshold)}`,
            list(p.submitted_by, "-"),
            text(p.expires_at, "never"),
          ]),
        ),
      );
      for (const rotation of progress.filter((p) => p.operation === "rotate-quorum"))
        printRotationPlan(rotation);
    }
  },
});
