/**
 * A devnet spec config's forks, in the order they activate: each has its own fork version (the
 * version is in every signing domain, so two forks sharing one would accept each other's
 * signatures), and no fork is scheduled before the one it follows (a chain cannot reach Altair
 * after Bellatrix). A far-future epoch (2^64-1, not scheduled) passes, as it is after any other.
 * A fork the spec adds is one entry in forks.ts' FORKS.
 */
import { FORKS as SIGNING_FORKS } from "./forks";
import type { SpecConfigProblem } from "./spec-config";

/**
 * The consensus forks in activation order, as their spec config keys spell them: the forks sigil
 * signs for (forks.ts), Phase 0's keys being `GENESIS_…`.
 */
export const FORKS: readonly string[] = SIGNING_FORKS.map((fork) =>
  fork === "PHASE0" ? "GENESIS" : fork,
);

const VERSION = /^0x[0-9a-fA-F]{8}$/;
const EPOCH = /^[0-9]{1,20}$/;

function setting(spec: Record<string, unknown>, key: string, shape: RegExp): string | undefined {
  const value = spec[key];
  // A missing or malformed value is the spec reader's problem, reported there.
  return typeof value === "string" && shape.test(value.trim()) ? value.trim() : undefined;
}

function forkName(fork: string): string {
  return fork.charAt(0) + fork.slice(1).toLowerCase();
}

/** The fork-version and fork-epoch order problems of `spec` (as read from `source`). */
export function forkOrderProblems(
  spec: Record<string, unknown>,
  source: string,
): SpecConfigProblem[] {
  const problems: SpecConfigProblem[] = [];
  const problem = (key: string, message: string) =>
    problems.push({ where: "network", message: `${source}: ${key}: ${message}` });

  const versionOwner = new Map<string, string>();
  for (const fork of FORKS) {
    const key = `${fork}_FORK_VERSION`;
    const version = setting(spec, key, VERSION)?.toLowerCase();
    if (version === undefined) continue;
    const owner = versionOwner.get(version);
    if (owner === undefined) versionOwner.set(version, key);
    else
      problem(
        key,
        `${version} is ${owner} too; each fork needs a version of its own (it is part of every signing domain, so the two forks would accept each other's signatures)`,
      );
  }

  // Genesis has no epoch key: it is epoch 0.
  let previous: { key: string; epoch: bigint } | undefined;
  for (const fork of FORKS.slice(1)) {
    const key = `${fork}_FORK_EPOCH`;
    const text = setting(spec, key, EPOCH);
    if (text === undefined) continue;
    const epoch = BigInt(text);
    if (previous !== undefined && epoch < previous.epoch) {
      problem(
        key,
        `${epoch} is before ${previous.key} ${previous.epoch}; forks activate in the order ${FORKS.slice(1).map(forkName).join(", ")}, each at or after the one before it`,
      );
    }
    // Each against the fork just before it: the order holds when every neighbouring pair does.
    previous = { key, epoch };
  }
  return problems;
}
