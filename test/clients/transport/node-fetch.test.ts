/**
 * Transport compatibility (harness.ts): Node's global fetch (undici), under the machine's `node`:
 * Lodestar's external signer client calls fetch.
 */
import { join } from "node:path";
import { DRIVERS, driverSuite, requireCommand } from "./harness";

driverSuite({
  id: "node-fetch",
  title: "Node fetch (undici)",
  client: "Lodestar",
  async prepare() {
    const node = requireCommand(
      "node",
      "apt-get install nodejs (Node.js 20 or later)",
      "node-fetch",
    );
    return { command: [node, join(DRIVERS, "node-fetch.mjs")] };
  },
});
