/**
 * Transport compatibility (harness.ts): Node's http module with a keep-alive Agent, under the
 * machine's `node` (Lodestar runs on Node, not Bun).
 */
import { join } from "node:path";
import { DRIVERS, driverSuite, requireCommand } from "./harness";

driverSuite({
  id: "node-http",
  title: "Node http.Agent keep-alive",
  client: "Lodestar",
  async prepare() {
    const node = requireCommand(
      "node",
      "apt-get install nodejs (Node.js 20 or later)",
      "node-http",
    );
    return { command: [node, join(DRIVERS, "node-http.mjs")] };
  },
});
