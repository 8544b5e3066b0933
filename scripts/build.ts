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

const build = { version: pkg.version, commit: gitCommit() };
const outfile = process.env.SIGIL_OUTFILE ?? "dist/sigil";
const args = [
  "build",
  "--compile",
  "--minify-syntax",
  "--sourcemap=inline",
  `--define=SIGIL_BUILD=${JSON.stringify(build)}`,
  "src/main.ts",
  "--outfile",
  outfile,
];
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
console.log(`built ${outfile}: sigil ${build.version} (commit ${build.commit})`);
