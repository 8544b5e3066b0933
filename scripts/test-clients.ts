// `npm run test:clients [file…]`: the cross-language transport suite (test/clients/transport), which
// `npm test` leaves out (bunfig.toml's pathIgnorePatterns) because it needs Go, a JDK, cargo with
// Debian's reqwest crates and curl. A missing toolchain fails its stack's tests with a line naming
// what to install; SIGIL_TRANSPORT_SKIP=<stack,…> is the only way to skip one. With file
// arguments, only those files run (default: the whole folder).
import { resolve } from "node:path";

const SUITE = "test/clients/transport";
const root = resolve(import.meta.dir, "..");
const targets = process.argv.slice(2);
// `bun test` reads a bare name as a filter, a path only from ./ or /.
const paths = (targets.length > 0 ? targets : [SUITE]).map((target) =>
  target.startsWith("/") || target.startsWith(".") ? target : `./${target}`,
);
const run = Bun.spawn(
  // An empty --path-ignore-patterns clears bunfig.toml's, which names this suite.
  [process.execPath, "test", "--timeout", "300000", "--path-ignore-patterns=", ...paths],
  { cwd: root, stdio: ["inherit", "inherit", "inherit"] },
);
process.exit(await run.exited);
