// Compiles sigil into one executable, dist/sigil, with the version and git commit stamped in.
// The binary needs no node_modules at run time.
import { spawnSync } from "node:child_process";
import pkg from "../package.json" with { type: "json" };

function gitCommit(): string {
  const result = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" });
  if (result.status !== 0) return "unknown";
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], {
    encoding: "utf8",
  });
  return result.stdout.trim() + (dirty.stdout.trim() ? "-dirty" : "");
}

/**
 * The BLS signing worker (src/signing/bls/pool.ts starts it), an entrypoint of its own. With every
 * entrypoint under src/, the binary's embedded file system mirrors src/: the main bundle sits at
 * its root and the worker at signing/bls/worker.js. pool.ts cannot find it from its own location
 * (bundled, its import.meta.url is the binary's), so it is told the path from the root.
 */
const BLS_WORKER = "src/signing/bls/worker.ts";

const build = { version: pkg.version, commit: gitCommit() };
const outfile = process.env.SIGIL_OUTFILE ?? "dist/sigil";
const args = [
  "build",
  "--compile",
  "--minify-syntax",
  "--sourcemap=inline",
  `--define=SIGIL_BUILD=${JSON.stringify(build)}`,
  `--define=SIGIL_BLS_WORKER=${JSON.stringify(`./${BLS_WORKER.slice("src/".length)}`)}`,
  "src/main.ts",
  BLS_WORKER,
  "--outfile",
  outfile,
];
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
console.log(`built ${outfile}: sigil ${build.version} (commit ${build.commit})`);
