import { defineCommand } from "citty";
import { call, clientFromFlags, connectionArgs, jsonArgs } from "./client";
import { booleanFlag, parseFlags, secretFlag } from "./flags";
import { asRecord, formatFields, note, printJson, printText, text } from "./output";

const rootTokenArgs = {
  "setup-token": {
    type: "string",
    valueHint: "value|env:VAR",
    description:
      "Setup token, or env:VAR to read it from an environment variable (preferred: command lines are visible to other users) (required)",
  },
  ...connectionArgs,
  ...jsonArgs,
} as const;

export const generateRootTokenCommand = defineCommand({
  meta: {
    name: "generate-root-token",
    description: "Obtain a management token (printed once: store it safely)",
  },
  args: rootTokenArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, rootTokenArgs);
    const setupToken = secretFlag(values, "setup-token");
    const client = clientFromFlags(values, false);
    const { body } = await call(client, "POST", "/api/v1/signer/sys/generate-root", {
      body: { setup_token: setupToken },
      auth: false,
    });
    if (booleanFlag(values, "json")) printJson(body);
    else {
      const result = asRecord(body);
      printText(
        formatFields([
          ["token", text(result.token)],
          ["accessor", text(result.accessor)],
        ]),
      );
    }
    note(
      "Store this management token safely now (a secret manager, not a shell history or a ticket): it is shown only once and grants full management access. Revoke it by its accessor when it is no longer needed.",
    );
  },
});
