import { defineCommand } from "../command";
import { authCommand } from "./auth";
import { initCommand, registerCommand, sealCommand, statusCommand } from "./ceremony";
import { generateRootTokenCommand, rotateCommand, unsealCommand } from "./quorum";

/** Operator commands: HTTP clients of a running signer (see `sigil operator <command> --help`). */
export const operatorCommand = defineCommand({
  meta: {
    name: "operator",
    description: "Operator commands for a running signer",
    examples: [
      "sigil operator status",
      "sigil operator unseal --credential env:SIGIL_OPERATOR_CREDENTIAL --identity ~/.sigil/operator.age",
    ],
    notes: [
      "They reach the signer at --signer-url (default http://127.0.0.1:9000); plain http only to loopback unless --allow-plaintext-signer. docs/ceremony.md and docs/auth.md show them in use.",
    ],
  },
  subCommands: {
    status: statusCommand,
    init: initCommand,
    register: registerCommand,
    unseal: unsealCommand,
    seal: sealCommand,
    "generate-root-token": generateRootTokenCommand,
    rotate: rotateCommand,
    auth: authCommand,
  },
});
