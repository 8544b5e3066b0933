// `sigil slashing import` refuses records beyond antislashing.max_future_epochs unless
// --allow-future is given (issue 37): one line naming the first offending validator and epoch or
// slot, a non-zero exit, nothing imported.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runSigil, TempDir } from "../support/cli";
import { GVR, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const [KEY_A = "", KEY_B = ""] = INTEROP_KEYS;
const U64_MAX = ((1n << 64n) - 1n).toString();

/** Mainnet (its genesis time is known, so the bound is on), with a new database. */
function setup(name: string) {
  const config = dir.file(
    `${name}.yaml`,
    `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}\n`,
  );
  const created = runSigil(["slashing", "init", "-c", config]);
  expect(created.code, created.stderr).toBe(0);
  return config;
}

const file = (name: string, data: unknown[]) =>
  dir.file(
    `${name}.json`,
    JSON.stringify({
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      data,
    }),
  );

/** KEY_A within the bound, then KEY_B with an attestation 0 → 2^64 - 1. */
const farFuture = () =>
  file("far-future", [
    {
      pubkey: KEY_A,
      signed_blocks: [{ slot: "11840000" }],
      signed_attestations: [{ source_epoch: "370000", target_epoch: "370001" }],
    },
    {
      pubkey: KEY_B,
      signed_blocks: [],
      signed_attestations: [{ source_epoch: "0", target_epoch: U64_MAX }],
    },
  ]);

function exported(config: string): { pubkey: string }[] {
  const out = join(dir.path, `export-${Math.random().toString(16).slice(2)}.json`);
  const result = runSigil(["slashing", "export", "-c", config, "--file", out]);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(readFileSync(out, "utf8")) as { data: { pubkey: string }[] }).data;
}

describe("sigil slashing import and the future bound", () => {
  test("a far-future record refuses the whole file with one line; --allow-future imports it", () => {
    const config = setup("future");
    const input = farFuture();
    const refused = runSigil(["slashing", "import", "-c", config, "--file", input]);
    expect(refused.code).toBe(1);
    const lines = refused.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^sigil: import refused, nothing was changed: validator ${KEY_B}: attestation source epoch 0, target epoch ${U64_MAX} is more than 2 epochs after the current epoch \\d+ \\(antislashing.max_future_epochs\\); to import such records anyway, add --allow-future$`,
      ),
    );
    // Nothing of it, not even KEY_A's records read before KEY_B's.
    expect(exported(config)).toEqual([]);

    const allowed = runSigil([
      "slashing",
      "import",
      "-c",
      config,
      "--file",
      input,
      "--allow-future",
    ]);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toContain("imported 2 validators (1 block, 2 attestations)");
    expect(
      exported(config)
        .map((v) => v.pubkey)
        .sort(),
    ).toEqual([KEY_A, KEY_B].sort());
  });

  test("a far-future block names its slot and epoch", () => {
    const config = setup("future-block");
    const input = file("far-block", [
      { pubkey: KEY_A, signed_blocks: [{ slot: U64_MAX }], signed_attestations: [] },
    ]);
    const refused = runSigil(["slashing", "import", "-c", config, "--file", input]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `validator ${KEY_A}: block slot ${U64_MAX} (epoch ${(1n << 64n) / 32n - 1n}) is more than 2 epochs`,
    );
  });
});
