import { routePath } from "../../http/table";
import { parseAgeIdentityFile } from "../../seal/wrap/age";
import { kmsClientFor } from "../../seal/wrap/awskms";
import { parseWrapSpec, unwrapShare } from "../../seal/wrap/index";
import { WrapError } from "../../seal/wrap/types";
import { defineCommand } from "../command";
import { EXIT_FAILURE, EXIT_USAGE, fail } from "../exit";
import {
  call,
  clientFromFlags,
  connectionArgs,
  jsonArgs,
  type SignerClient,
  tokenArgs,
} from "./client";
import {
  booleanFlag,
  type FlagValues,
  listFlag,
  parseFlags,
  readFlagFile,
  stringFlag,
} from "./flags";
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

export const credentialArgs = {
  credential: {
    type: "string",
    valueHint: "value|env:VAR",
    description:
      "Your operator credential from `sigil operator register`, or env:VAR (preferred: command lines are visible to other users)",
  },
  identity: {
    type: "string",
    valueHint: "file",
    description: "age identity file (AGE-SECRET-KEY-1…) for a share wrapped with age:",
  },
} as const;

/**
 * Fetches this operator's wrapped share, unwraps it here (the operator's own KMS credentials or
 * age identity: the signer never sees them), submits it, and returns the signer's answer.
 */
async function submitOwnShare(
  client: SignerClient,
  values: FlagValues,
  submitPath: string,
): Promise<Record<string, unknown>> {
  const { body } = await call(client, "GET", routePath("share"));
  const fetched = asRecord(body);
  const operator = text(fetched.operator);
  const wrap = String(fetched.share_wrap ?? "");
  const parsed = parseWrapSpec(wrap);
  if (!parsed.ok)
    fail(`the signer returned an unusable share_wrap: ${parsed.reason}`, EXIT_FAILURE);
  const identityPath = stringFlag(values, "identity");
  const ageIdentities =
    identityPath === undefined
      ? undefined
      : parseIdentities(identityPath, readFlagFile("identity", identityPath));
  let share: Uint8Array;
  try {
    share = await unwrapShare(
      parsed.spec,
      new Uint8Array(Buffer.from(String(fetched.wrapped_share ?? ""), "base64")),
      { sealId: String(fetched.seal_id ?? ""), operator },
      { kmsClient: kmsClientFor, ageIdentities, ageIdentityPath: identityPath },
    );
  } catch (error) {
    if (error instanceof WrapError)
      fail(`cannot unwrap ${operator}'s share: ${error.message}`, EXIT_FAILURE);
    throw error;
  }
  const encoded = Buffer.from(share).toString("base64");
  share.fill(0);
  const answer = await call(client, "POST", submitPath, { body: { share: encoded } });
  return asRecord(answer.body);
}

function parseIdentities(path: string, content: string): string[] {
  try {
    return parseAgeIdentityFile(content, path);
  } catch (error) {
    fail(`--identity: ${error instanceof Error ? error.message : String(error)}`, EXIT_USAGE);
  }
}

function printProgress(result: Record<string, unknown>): void {
  const progress = asRecord(result.progress);
  printText(
    formatFields([
      ["operation", text(progress.operation)],
      ["submitted", `${text(progress.submitted)} of ${text(progress.threshold)}`],
      ["submitted_by", list(progress.submitted_by, "-")],
      ["expires_at", text(progress.expires_at, "never")],
    ]),
  );
  printRotationPlan(progress);
}

/** What a rotation in progress would make the new quorum: what an operator approves. */
export function printRotationPlan(
  progress: Record<string, unknown>,
  print: (text: string) => void = printText,
): void {
  const wraps = progress.new_share_wrap;
  if (!Array.isArray(wraps)) return;
  print(`new quorum  ${text(progress.new_threshold)} of ${wraps.length}`);
  print(
    formatTable(
      ["NEW_SHARE_WRAP"],
      wraps.map((wrap) => [text(wrap)]),
    ),
  );
}

/**
 * Shows the rotation this share would approve and asks for a yes on standard input, unless
 * `--yes`: an operator must see the new wrapping keys and threshold before giving up a share.
 */
async function confirmRotation(client: SignerClient, values: FlagValues): Promise<void> {
  const { body } = await call(client, "GET", routePath("sealStatus"), { auth: false });
  const progress = (
    Array.isArray(asRecord(body).progress) ? asRecord(body).progress : []
  ) as unknown[];
  const rotation = progress.map(asRecord).find((p) => p.operation === "rotate-quorum");
  if (!rotation) return; // the signer answers no_rotation to the submission itself
  // With --json standard output is the answer alone; the plan is still shown, on standard error.
  const print = booleanFlag(values, "json") ? note : printText;
  print("Your share approves this quorum rotation:");
  printRotationPlan(rotation, print);
  if (booleanFlag(values, "yes")) return;
  const answer = prompt("Approve it? [y/N]");
  if (!/^y(es)?$/i.test((answer ?? "").trim())) {
    fail(
      "rotation not approved: nothing was submitted (--yes approves without asking)",
      EXIT_FAILURE,
    );
  }
}

const shareArgs = { ...credentialArgs, ...connectionArgs, ...jsonArgs } as const;

export const unsealCommand = defineCommand({
  meta: {
    name: "unseal",
    description: "Submit your unseal share (unwrapped locally)",
    examples: [
      "sigil operator unseal --credential env:SIGIL_OPERATOR_CREDENTIAL --identity ~/.sigil/operator.age",
      "AWS_PROFILE=alice-ops sigil operator unseal --credential env:SIGIL_OPERATOR_CREDENTIAL",
    ],
  },
  args: shareArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, shareArgs);
    const client = clientFromFlags(values, "credential");
    const result = await submitOwnShare(client, values, routePath("unseal"));
    if (booleanFlag(values, "json")) return printJson(result);
    if (result.complete === true) printText("state  unsealed");
    else {
      printProgress(result);
      note("Share accepted; the signer stays sealed until the threshold is reached.");
    }
  },
});

export const generateRootTokenCommand = defineCommand({
  meta: {
    name: "generate-root-token",
    description:
      "Submit your share towards a new management token (quorum; the operator completing it receives the token)",
    examples: [
      "sigil operator generate-root-token --credential env:SIGIL_OPERATOR_CREDENTIAL --identity ~/.sigil/operator.age",
    ],
  },
  args: shareArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, shareArgs);
    const client = clientFromFlags(values, "credential");
    const result = await submitOwnShare(client, values, routePath("generateRoot"));
    if (booleanFlag(values, "json")) printJson(result);
    else if (result.complete === true) {
      printText(
        formatFields([
          ["token", text(result.token)],
          ["accessor", text(result.accessor)],
        ]),
      );
    } else printProgress(result);
    if (result.complete === true) {
      note(
        "Store this management token safely now (a secret manager, not a shell history or a ticket): it is shown only once and grants full management access. Revoke it by its accessor when it is no longer needed.",
      );
    }
  },
});

const rotateArgs = {
  "share-wrap": {
    type: "string",
    valueHint: "awskms:ARN|age:RECIPIENT,…",
    description: "Start: the new operators' wrapping keys, comma-separated (one share each)",
  },
  threshold: { type: "string", valueHint: "n", description: "Start: shares the new quorum needs" },
  cancel: { type: "boolean", description: "Cancel the rotation in progress (with --token)" },
  yes: {
    type: "boolean",
    description: "Submit: approve the rotation shown without asking (check it first)",
  },
  ...tokenArgs,
  ...credentialArgs,
  ...connectionArgs,
  ...jsonArgs,
} as const;

const rotateQuorumCommand = defineCommand({
  meta: {
    name: "quorum",
    description:
      "Re-split the master key to new operators: start with --token (management), then current operators submit shares with --credential",
    examples: [
      'sigil operator rotate quorum --token env:SIGIL_MANAGEMENT_TOKEN --share-wrap "$OP1,$OP2,$OP4" --threshold 2',
      "sigil operator rotate quorum --credential env:SIGIL_OPERATOR_CREDENTIAL --identity ~/.sigil/operator.age",
      "sigil operator rotate quorum --token env:SIGIL_MANAGEMENT_TOKEN --cancel",
    ],
    notes: [
      "Submitting shows the rotation (the new wrapping keys and threshold) and asks before sending your share; --yes skips the question. docs/ceremony.md explains what to check.",
    ],
  },
  args: rotateArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, rotateArgs);
    const json = booleanFlag(values, "json");
    const hasToken = stringFlag(values, "token") !== undefined;
    const hasCredential = stringFlag(values, "credential") !== undefined;
    if (hasToken === hasCredential)
      fail(
        "pass --token (start or --cancel a rotation) or --credential (submit your share), not both",
        EXIT_USAGE,
      );
    if (hasToken) {
      const client = clientFromFlags(values, "token");
      if (booleanFlag(values, "cancel")) {
        await call(client, "DELETE", routePath("cancelRotation"));
        return note("Quorum rotation cancelled; submitted shares were discarded.");
      }
      const started = await call(client, "POST", routePath("startRotation"), {
        body: startBody(values),
      });
      if (json) return printJson(started.body);
      printProgress(asRecord(started.body));
      return note(
        "Rotation started: current operators now run `sigil operator rotate quorum --credential …`; the one completing the quorum receives the new registration tokens.",
      );
    }
    if (booleanFlag(values, "cancel") || stringFlag(values, "share-wrap") !== undefined)
      fail("--share-wrap, --threshold and --cancel go with --token", EXIT_USAGE);
    const client = clientFromFlags(values, "credential");
    await confirmRotation(client, values);
    const result = await submitOwnShare(client, values, routePath("rotationShare"));
    if (json) return printJson(result);
    if (result.complete !== true) return printProgress(result);
    printRegistrations(result);
    note(
      "Quorum rotated: earlier operator credentials no longer work. Hand each registration token to its new operator over a private channel; each works once.",
    );
  },
});

export const rotateCommand = defineCommand({
  meta: {
    name: "rotate",
    description: "Rotation commands",
    examples: [
      'sigil operator rotate quorum --token env:SIGIL_MANAGEMENT_TOKEN --share-wrap "$OP1,$OP2,$OP4" --threshold 2',
    ],
  },
  subCommands: { quorum: rotateQuorumCommand },
});

function startBody(values: FlagValues): { share_wrap: string[]; threshold: number } {
  const wrap = stringFlag(values, "share-wrap");
  if (wrap === undefined)
    fail("starting a rotation needs --share-wrap and --threshold", EXIT_USAGE);
  const plan = shareWrapPlan(wrap, stringFlag(values, "threshold"));
  return { share_wrap: plan.shareWrap, threshold: plan.threshold };
}

/**
 * `--share-wrap` and `--threshold` as the CLI checks them before anything is sent: a missing
 * threshold is named, an age secret key is refused (it is the operator's private half: a
 * recipient, age1…, is meant), and a 1-of-N quorum is allowed with a warning.
 */
export function shareWrapPlan(
  wrap: string,
  threshold: string | undefined,
): { shareWrap: string[]; threshold: number } {
  const shareWrap = listFlag(wrap);
  for (const [i, entry] of shareWrap.entries()) {
    if (/AGE-SECRET-KEY-/i.test(entry)) {
      fail(
        `--share-wrap: entry ${i + 1} is an age secret key (AGE-SECRET-KEY-…), not a recipient: give the operator's public recipient (age1…), and treat that secret key as exposed`,
        EXIT_USAGE,
      );
    }
  }
  if (threshold === undefined) {
    fail(
      `--threshold is missing: how many of the ${shareWrap.length} shares unseal the signer`,
      EXIT_USAGE,
    );
  }
  const count = integerFlag("threshold", threshold);
  if (count === 1 && shareWrap.length > 1) {
    note(
      `sigil: warning: --threshold 1: any one of the ${shareWrap.length} operators can unseal alone; a quorum of 2 or more is what makes the seal a quorum`,
    );
  }
  return { shareWrap, threshold: count };
}

export function integerFlag(name: string, value: string): number {
  if (!/^\d{1,3}$/.test(value.trim())) fail(`--${name} must be a whole number`, EXIT_USAGE);
  return Number(value.trim());
}

export function printRegistrations(result: Record<string, unknown>): void {
  const operators = Array.isArray(result.operators) ? result.operators.map(asRecord) : [];
  printText(
    formatFields([
      ["seal_id", text(result.seal_id)],
      ["threshold", text(result.threshold)],
    ]),
  );
  printText(
    formatTable(
      ["OPERATOR", "SHARE_WRAP", "REGISTRATION_TOKEN"],
      operators.map((op) => [text(op.operator), text(op.share_wrap), text(op.registration_token)]),
    ),
  );
}
