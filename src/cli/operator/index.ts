import { defineCommand } from "citty";
import { authCommand } from "./auth";
import { initCommand, registerCommand, sealCommand, statusCommand } from "./ceremony";
import { generateRootTokenCommand, rotateCommand, unsealCommand } from "./quorum";

/** Operator commands: HTTP clients of a running signer (see `sigil operator <command> --help`). */
export const operatorCommand = defineCommand({
  meta: { name: "operator", description: "Operator commands for a running signer" },
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
