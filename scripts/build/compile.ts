/** One `bun build --compile` of sigil, for this machine or for a release target. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import type { BunPlugin } from "bun";
import pkg from "../../package.json" with { type: "json" };

export interface BuildStamp {
  readonly version: string;
  readonly commit: string;
}

/** The package version and the git commit (with `-dirty` for uncommitted tracked changes). */
export function buildStamp(): BuildStamp {
  const head = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" });
  if (head.status !== 0) return { version: pkg.version, commit: "unknown" };
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], {
    encoding: "utf8",
  });
  return {
    version: pkg.version,
    commit: head.stdout.trim() + (dirty.stdout.trim() ? "-dirty" : ""),
  };
}

/**
 * The worker threads, each an entrypoint of its own: the BLS signing worker (src/bls/pool.ts
 * starts it), the signer's slashing thread (thread-store.ts) and the slashing database's
 * checkpoint worker (wal-checkpoint.ts). With every
 * entrypoint under src/, the binary's embedded file system mirrors src/: the main bundle sits at
 * its root and the BLS worker at bls/worker.js. The module that starts a worker cannot find
 * it from its own location (bundled, its import.meta.url is the binary's), so it is told the path
 * from the root.
 */
const BLS_WORKER = "src/bls/worker.ts";
const CHECKPOINT_WORKER = "src/antislashing/backends/sqlite/wal-checkpoint-worker.ts";
const SLASHING_WORKER = "src/antislashing/backends/sqlite/thread-worker.ts";
const fromBundleRoot = (entry: string) => JSON.stringify(`./${entry.slice("src/".length)}`);
const ROOT = join(import.meta.dir, "../..");

export interface CompileOptions {
  readonly outfile: string;
  readonly stamp: BuildStamp;
  /** A Bun cross-compilation target; this machine when absent. */
  readonly target?: Bun.Build.CompileTarget;
  readonly plugins?: BunPlugin[];
}

/** Compiles src/main.ts and the workers into `outfile`; throws with Bun's messages on failure. */
export async function compileSigil(options: CompileOptions): Promise<void> {
  let result: Bun.BuildOutput;
  try {
    result = await Bun.build({
      entrypoints: [
        join(ROOT, "src/main.ts"),
        join(ROOT, BLS_WORKER),
        join(ROOT, CHECKPOINT_WORKER),
        join(ROOT, SLASHING_WORKER),
      ],
      compile: { outfile: options.outfile, ...(options.target ? { target: options.target } : {}) },
      // ESM bytecode: the binary carries JavaScriptCore bytecode beside the source, so a start
      // does not parse the 5 MB bundle (the empty signer's main thread: 250 → 125 ms of CPU).
      format: "esm",
      bytecode: true,
      minify: { syntax: true },
      sourcemap: "inline",
      define: {
        SIGIL_BUILD: JSON.stringify(options.stamp),
        SIGIL_BLS_WORKER: fromBundleRoot(BLS_WORKER),
        SIGIL_CHECKPOINT_WORKER: fromBundleRoot(CHECKPOINT_WORKER),
        SIGIL_SLASHING_WORKER: fromBundleRoot(SLASHING_WORKER),
      },
      plugins: options.plugins ?? [],
    });
  } catch (error) {
    throw new Error(`bun build failed: ${describeBuildError(error)}`);
  }
  if (!result.success) throw new Error(`bun build failed: ${result.logs.join("\n")}`);
}

function describeBuildError(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(String).join("\n");
  return error instanceof Error ? error.message : String(error);
}
