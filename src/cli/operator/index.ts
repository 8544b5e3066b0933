import { defineCommand } from "citty";
import { authCommand } from "./auth";
import { generateRootTokenCommand } from "./root-token";

/** Operator commands: HTTP clients of a running signer (see `sigil operator <command> --help`). */
export const operatorCommand = defineCommand({
  meta: { name: "operator", description: "Operator commands for a running signer" },
  subCommands: { auth: authCommand, "generate-root-token": generateRootTokenCommand },
});
