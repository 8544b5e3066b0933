// Compiles sigil into one executable that needs no node_modules at run time, with the version and
// git commit stamped in. `bun scripts/build.ts` builds dist/sigil for this machine (what CI and the
// tests use); `--release` builds the Linux release binaries and dist/SHA256SUMS (docs/release.md).
import { join, relative, resolve } from "node:path";
import { buildStamp, compileSigil } from "./build/compile";
import { buildRelease } from "./build/release";
import { artifactName } from "./build/targets";

const ROOT = join(import.meta.dir, "..");
// SIGIL_OUTFILE is taken relative to where the build was started; everything else (git, the
// sourcemaps' paths) relative to the repository.
const startDir = process.cwd();
const hostOutfile = resolve(process.env.SIGIL_OUTFILE ?? join(ROOT, "dist/sigil"));
process.chdir(ROOT);
const args = process.argv.slice(2);
const unknown = args.find((arg) => arg !== "--release");
if (unknown !== undefined) {
  console.error(
    `build: unknown argument ${JSON.stringify(unknown)} (the only option is --release)`,
  );
  process.exit(2);
}

function mebibytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

try {
  if (args.includes("--release")) {
    for (const artifact of await buildRelease(ROOT)) {
      const { addon } = artifact;
      console.log(
        `built dist/${artifactName(artifact.target)}: ${mebibytes(artifact.bytes)} in ` +
          `${artifact.compileSeconds.toFixed(1)} s, blst from ${addon.packageName}@${addon.version} (${addon.source})`,
      );
      for (const run of artifact.runs) {
        console.log(`  ${run.ran ? `ran ${run.how}: ${run.output}` : run.how}`);
      }
    }
    console.log("wrote dist/SHA256SUMS (check with: cd dist && sha256sum -c SHA256SUMS)");
  } else {
    const stamp = buildStamp();
    await compileSigil({ outfile: hostOutfile, stamp });
    const shown = relative(startDir, hostOutfile);
    const where = shown.startsWith("..") ? hostOutfile : shown;
    console.log(`built ${where}: sigil ${stamp.version} (commit ${stamp.commit})`);
  }
} catch (error) {
  console.error(`build: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
