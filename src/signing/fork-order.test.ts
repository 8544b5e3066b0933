import { describe, expect, test } from "bun:test";
import { parseSpecConfig, type SpecConfigResult } from "./spec-config";

/** A devnet with every fork from Altair to Gloas: each line can be edited by a test. */
const FORKS_YAML = {
  PRESET_BASE: "'minimal'",
  SECONDS_PER_SLOT: "6",
  GENESIS_FORK_VERSION: "0x10000038",
  ALTAIR_FORK_VERSION: "0x20000038",
  ALTAIR_FORK_EPOCH: "0",
  BELLATRIX_FORK_VERSION: "0x30000038",
  BELLATRIX_FORK_EPOCH: "0",
  CAPELLA_FORK_VERSION: "0x40000038",
  CAPELLA_FORK_EPOCH: "0",
  DENEB_FORK_VERSION: "0x50000038",
  DENEB_FORK_EPOCH: "5",
  ELECTRA_FORK_VERSION: "0x60000038",
  ELECTRA_FORK_EPOCH: "10",
  FULU_FORK_VERSION: "0x70000038",
  FULU_FORK_EPOCH: "18446744073709551615",
  GLOAS_FORK_VERSION: "0x80000038",
  GLOAS_FORK_EPOCH: "18446744073709551615",
};

function specWith(changes: Record<string, string | undefined>): SpecConfigResult {
  const merged: Record<string, string | undefined> = { ...FORKS_YAML, ...changes };
  const text = Object.entries(merged)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}: ${value}`)
    .join("\n");
  return parseSpecConfig(text, "devnet/config.yaml");
}

function messages(result: SpecConfigResult): string[] {
  return result.ok ? [] : result.problems.map((p) => `${p.where}: ${p.message}`);
}

describe("devnet fork versions and epochs", () => {
  test("distinct versions and epochs in fork order load; equal epochs and far-future ones pass", () => {
    expect(messages(specWith({}))).toEqual([]);
    expect(
      messages(specWith({ ELECTRA_FORK_EPOCH: "18446744073709551615", DENEB_FORK_EPOCH: "0" })),
    ).toEqual([]);
  });

  test("a fork version equal to an earlier fork's is refused, naming both keys", () => {
    expect(messages(specWith({ DENEB_FORK_VERSION: "0x40000038" }))).toEqual([
      "network: devnet/config.yaml: DENEB_FORK_VERSION: 0x40000038 is CAPELLA_FORK_VERSION too; each fork needs a version of its own (it is part of every signing domain, so the two forks would accept each other's signatures)",
    ]);
    // Hex case does not make a version another one.
    expect(
      messages(specWith({ ALTAIR_FORK_VERSION: "0x1000003A", GENESIS_FORK_VERSION: "0x1000003a" })),
    ).toHaveLength(1);
  });

  test("a fork scheduled before the fork it follows is refused, naming both keys", () => {
    expect(messages(specWith({ ALTAIR_FORK_EPOCH: "10", BELLATRIX_FORK_EPOCH: "0" }))).toEqual([
      "network: devnet/config.yaml: BELLATRIX_FORK_EPOCH: 0 is before ALTAIR_FORK_EPOCH 10; forks activate in the order Altair, Bellatrix, Capella, Deneb, Electra, Fulu, Gloas, each at or after the one before it",
    ]);
    // An unscheduled (far-future) fork cannot come before a scheduled one.
    expect(
      messages(specWith({ DENEB_FORK_EPOCH: "18446744073709551615", ELECTRA_FORK_EPOCH: "10" })),
    ).toEqual([
      "network: devnet/config.yaml: ELECTRA_FORK_EPOCH: 10 is before DENEB_FORK_EPOCH 18446744073709551615; forks activate in the order Altair, Bellatrix, Capella, Deneb, Electra, Fulu, Gloas, each at or after the one before it",
    ]);
  });

  test("a fork the file leaves out is skipped: the next one is compared with the one before", () => {
    expect(
      messages(specWith({ BELLATRIX_FORK_EPOCH: undefined, CAPELLA_FORK_EPOCH: "0" })),
    ).toEqual([]);
    expect(messages(specWith({ BELLATRIX_FORK_EPOCH: undefined, ALTAIR_FORK_EPOCH: "3" }))).toEqual(
      [
        "network: devnet/config.yaml: CAPELLA_FORK_EPOCH: 0 is before ALTAIR_FORK_EPOCH 3; forks activate in the order Altair, Bellatrix, Capella, Deneb, Electra, Fulu, Gloas, each at or after the one before it",
      ],
    );
  });

  test("Gloas is checked like every fork sigil signs for: its own version, after Fulu", () => {
    expect(messages(specWith({ GLOAS_FORK_VERSION: "0x70000038" }))).toEqual([
      "network: devnet/config.yaml: GLOAS_FORK_VERSION: 0x70000038 is FULU_FORK_VERSION too; each fork needs a version of its own (it is part of every signing domain, so the two forks would accept each other's signatures)",
    ]);
    expect(messages(specWith({ FULU_FORK_EPOCH: "20", GLOAS_FORK_EPOCH: "12" }))).toEqual([
      "network: devnet/config.yaml: GLOAS_FORK_EPOCH: 12 is before FULU_FORK_EPOCH 20; forks activate in the order Altair, Bellatrix, Capella, Deneb, Electra, Fulu, Gloas, each at or after the one before it",
    ]);
  });

  test("a malformed version or epoch is reported once, by the reader, not as an order problem", () => {
    const result = messages(specWith({ DENEB_FORK_EPOCH: "soon" }));
    expect(result).toEqual([
      'network: devnet/config.yaml: DENEB_FORK_EPOCH: expected an unsigned 64-bit integer, got "soon"',
    ]);
  });
});
