/**
 * The release build: one binary per target in RELEASE_TARGETS, each checked (CPU, embedded blst
 * addon) and run where this machine can, then dist/SHA256SUMS over all of them.
 */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BunPlugin } from "bun";
import { type BlstAddon, obtainBlstAddon } from "./blst-addon";
import { buildStamp, compileSigil } from "./compile";
import { type RunReport, runVersion } from "./run-check";
import { type FileSum, formatSha256Sums, sha256OfFile } from "./sums";
import {
  artifactName,
  blstRequireFor,
  RELEASE_TARGETS,
  type ReleaseTarget,
  SUMS_FILE,
} from "./targets";
import { releaseBinaryProblem } from "./verify";

export interface ReleaseArtifact {
  readonly target: ReleaseTarget;
  readonly path: string;
  readonly bytes: number;
  readonly compileSeconds: number;
  readonly addon: BlstAddon;
  readonly runs: readonly RunReport[];
}

const LEFT_OUT = "sigil-left-out";

/**
 * Embeds the target's own blst addon; every other platform's `require` becomes a module that
 * throws, so the loader's branches for other platforms neither embed a file nor look one up on
 * the filesystem at run time.
 */
function blstPlugin(target: ReleaseTarget, addon: BlstAddon): BunPlugin {
  return {
    name: "sigil-release-blst",
    setup(build) {
      build.onResolve({ filter: /^@chainsafe\/blst-/ }, (args) =>
        blstRequireFor(target, args.path) === "embed"
          ? { path: addon.path }
          : { path: args.path, namespace: LEFT_OUT },
      );
      build.onLoad({ filter: /.*/, namespace: LEFT_OUT }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`${args.path} is not in the sigil-${target.name} build`)});`,
        loader: "js",
      }));
    },
  };
}

async function buildTarget(
  target: ReleaseTarget,
  addons: ReadonlyMap<string, BlstAddon>,
  stagingDir: string,
  distDir: string,
  stamp: ReturnType<typeof buildStamp>,
): Promise<ReleaseArtifact> {
  const addon = addons.get(target.blstPackage);
  if (!addon) throw new Error(`no blst addon obtained for ${target.name}`);
  // Staged as "sigil" so every artifact names itself /$bunfs/root/sigil, as the host build does.
  const staged = join(stagingDir, target.name, "sigil");
  const started = performance.now();
  await compileSigil({
    outfile: staged,
    stamp,
    target: target.bunTarget,
    plugins: [blstPlugin(target, addon)],
  });
  const compileSeconds = (performance.now() - started) / 1000;

  const foreign = [...addons.values()].filter((other) => other.path !== addon.path);
  const problem = releaseBinaryProblem(
    new Uint8Array(readFileSync(staged)),
    target,
    addon.bytes,
    foreign.map((other) => other.bytes),
  );
  if (problem) throw new Error(`${artifactName(target)}: ${problem}`);

  const path = join(distDir, artifactName(target));
  renameSync(staged, path);
  chmodSync(path, 0o755);
  const runs = [runVersion(path, target)];
  if (target.emulatedCpu) runs.push(runVersion(path, target, target.emulatedCpu));
  return { target, path, bytes: statSync(path).size, compileSeconds, addon, runs };
}

/** Builds every release target into `root`/dist and writes dist/SHA256SUMS last. */
export async function buildRelease(root: string): Promise<ReleaseArtifact[]> {
  const distDir = join(root, "dist");
  mkdirSync(distDir, { recursive: true });
  // Sums from an earlier release must never sit beside binaries they do not describe.
  rmSync(join(distDir, SUMS_FILE), { force: true });
  const workDir = mkdtempSync(join(tmpdir(), "sigil-release-"));
  // Inside dist/ so the finished binary is renamed into place, never copied half-written.
  const stagingDir = mkdtempSync(join(distDir, ".release-"));
  try {
    const addons = new Map<string, BlstAddon>();
    for (const target of RELEASE_TARGETS) {
      if (!addons.has(target.blstPackage)) {
        addons.set(
          target.blstPackage,
          obtainBlstAddon(target.blstPackage, target.arch, root, workDir),
        );
      }
    }
    const stamp = buildStamp();
    const artifacts: ReleaseArtifact[] = [];
    for (const target of RELEASE_TARGETS) {
      artifacts.push(await buildTarget(target, addons, stagingDir, distDir, stamp));
    }
    const sums: FileSum[] = [];
    for (const artifact of artifacts) {
      sums.push({ file: artifactName(artifact.target), sha256: await sha256OfFile(artifact.path) });
    }
    const sumsPath = join(distDir, SUMS_FILE);
    await writeFile(`${sumsPath}.partial`, formatSha256Sums(sums));
    renameSync(`${sumsPath}.partial`, sumsPath);
    return artifacts;
  } finally {
    rmSync(stagingDir, { recursive: true, force: true });
    rmSync(workDir, { recursive: true, force: true });
  }
}
