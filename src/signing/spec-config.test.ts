import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NETWORKS } from "./network";
import { PRESETS } from "./preset";
import { configuredNetworkOf, parseSpecConfig, type SpecConfigResult } from "./spec-config";

const MINIMAL = `PRESET_BASE: 'minimal'
CONFIG_NAME: 'kurtosis'
MIN_GENESIS_TIME: 1700000000
GENESIS_FORK_VERSION: 0x10000038
ALTAIR_FORK_VERSION: 0x20000038
ALTAIR_FORK_EPOCH: 0
CAPELLA_FORK_VERSION: 0x40000038
CAPELLA_FORK_EPOCH: 0
DENEB_FORK_VERSION: 0x50000038
DENEB_FORK_EPOCH: 18446744073709551615
SECONDS_PER_SLOT: 6
DEPOSIT_CONTRACT_ADDRESS: 0x4242424242424242424242424242424242424242
BLOB_SCHEDULE:
  - EPOCH: 0
    MAX_BLOBS_PER_BLOCK: 6
`;

const hex = (bytes: Uint8Array | undefined) =>
  bytes ? `0x${Buffer.from(bytes).toString("hex")}` : undefined;

function network(result: SpecConfigResult) {
  if (!result.ok)
    throw new Error(`expected the spec config to load: ${JSON.stringify(result.problems)}`);
  return result.network;
}

function problems(result: SpecConfigResult): string[] {
  if (result.ok) throw new Error("expected the spec config to be refused");
  return result.problems.map((p) => `${p.where}: ${p.message}`);
}

/** MINIMAL with one line replaced (or removed: `to` undefined). */
function edited(from: RegExp, to?: string): string {
  const lines = MINIMAL.split("\n");
  const i = lines.findIndex((l) => from.test(l));
  if (i < 0) throw new Error(`no line ${from}`);
  if (to === undefined) lines.splice(i, 1);
  else lines[i] = to;
  return lines.join("\n");
}

describe("a consensus-spec config", () => {
  test("gives the preset, fork constants, slot length and earliest genesis; keeps hex as written", () => {
    const devnet = network(parseSpecConfig(MINIMAL, "config.yaml"));
    expect(devnet.name).toBe("kurtosis (config.yaml, minimal preset)");
    expect(devnet.preset).toBe(PRESETS.minimal);
    // YAML 1.2 would read 0x10000038 as an integer; it is the fork version's bytes.
    expect(hex(devnet.genesisForkVersion)).toBe("0x10000038");
    expect(hex(devnet.capellaForkVersion)).toBe("0x40000038");
    expect(devnet.denebForkEpoch).toBe(2n ** 64n - 1n);
    expect(devnet.secondsPerSlot).toBe(6n);
    expect(devnet.genesisTime).toBe(1_700_000_000n);
    expect(devnet.genesisTimeIsLowerBound).toBe(true);
    expect(devnet.genesisValidatorsRoot).toBeUndefined();
  });

  test("DEPOSIT_CHAIN_ID gives the chain id (Commit-Boost signs it); without it there is none", () => {
    expect(network(parseSpecConfig(MINIMAL, "config.yaml")).depositChainId).toBeUndefined();
    const withId = edited(/^SECONDS_PER_SLOT/, "SECONDS_PER_SLOT: 6\nDEPOSIT_CHAIN_ID: 3151908");
    expect(network(parseSpecConfig(withId, "config.yaml")).depositChainId).toBe(3151908n);
    expect(NETWORKS.hoodi.depositChainId).toBe(560048n);
  });

  test("network_config adds the genesis validators root and the exact genesis time", () => {
    const root = `0x${"ab".repeat(32)}`;
    const devnet = network(
      parseSpecConfig(MINIMAL, "config.yaml", {
        genesis_validators_root: root,
        genesis_time: 1_700_000_060,
      }),
    );
    expect(hex(devnet.genesisValidatorsRoot)).toBe(root);
    expect(devnet.genesisTime).toBe(1_700_000_060n);
    expect(devnet.genesisTimeIsLowerBound).toBeUndefined();
  });

  test("PRESET_BASE mainnet, and a config without MIN_GENESIS_TIME has no clock", () => {
    const devnet = network(
      parseSpecConfig(
        edited(/^PRESET_BASE/, "PRESET_BASE: mainnet").replace(/MIN_GENESIS_TIME.*\n/, ""),
        "c",
      ),
    );
    expect(devnet.preset).toBe(PRESETS.mainnet);
    expect(devnet.genesisTime).toBeUndefined();
    expect(devnet.genesisTimeIsLowerBound).toBeUndefined();
  });

  test("/eth/v1/config/spec's JSON, {data} and all, with the preset values it lists", () => {
    const spec = {
      data: {
        PRESET_BASE: "minimal",
        GENESIS_FORK_VERSION: "0x10000038",
        CAPELLA_FORK_VERSION: "0x40000038",
        DENEB_FORK_EPOCH: "4",
        SECONDS_PER_SLOT: "6",
        SLOTS_PER_EPOCH: "8",
        SYNC_COMMITTEE_SIZE: "32",
        MAX_COMMITTEES_PER_SLOT: "4",
        SYNC_COMMITTEE_SUBNET_COUNT: "4",
      },
    };
    const devnet = network(parseSpecConfig(JSON.stringify(spec), "spec.json"));
    expect(devnet.preset).toBe(PRESETS.minimal);
    expect(devnet.name).toBe("devnet (spec.json, minimal preset)");
    expect(devnet.denebForkEpoch).toBe(4n);
  });

  test("SLOT_DURATION_MS alone gives the slot length; with SECONDS_PER_SLOT both must agree", () => {
    const msOnly = edited(/^SECONDS_PER_SLOT/, "SLOT_DURATION_MS: 4000");
    expect(network(parseSpecConfig(msOnly, "c")).secondsPerSlot).toBe(4n);
    expect(problems(parseSpecConfig(`${MINIMAL}SLOT_DURATION_MS: 12000\n`, "c"))).toEqual([
      "network: c: SLOT_DURATION_MS: 12000 ms disagrees with SECONDS_PER_SLOT 6; set one, or both to the same length",
    ]);
    expect(network(parseSpecConfig(`${MINIMAL}SLOT_DURATION_MS: 6000\n`, "c")).secondsPerSlot).toBe(
      6n,
    );
    expect(
      problems(parseSpecConfig(edited(/^SECONDS_PER_SLOT/, "SLOT_DURATION_MS: 2500"), "c"))[0],
    ).toContain("SLOT_DURATION_MS: expected whole seconds");
  });

  test("unknown keys are ignored, whatever their shape", () => {
    const extra = `${MINIMAL}SOME_FUTURE_KEY: [1, 2]\nANOTHER: {a: b}\nWHATEVER: not a number\n`;
    expect(network(parseSpecConfig(extra, "c")).preset).toBe(PRESETS.minimal);
  });

  test.each([
    [
      "PRESET_BASE",
      "PRESET_BASE: gnosis",
      'PRESET_BASE: sigil signs for the mainnet and minimal presets, got "gnosis"',
    ],
    ["PRESET_BASE", undefined, "PRESET_BASE: required"],
    [
      "GENESIS_FORK_VERSION",
      "GENESIS_FORK_VERSION: 0x1000",
      'GENESIS_FORK_VERSION: expected a fork version of 4 bytes of hex, like 0x00000001, got "0x1000"',
    ],
    ["GENESIS_FORK_VERSION", undefined, "GENESIS_FORK_VERSION: required"],
    ["CAPELLA_FORK_VERSION", undefined, "CAPELLA_FORK_VERSION: required"],
    [
      "DENEB_FORK_EPOCH",
      "DENEB_FORK_EPOCH: 18446744073709551616",
      'DENEB_FORK_EPOCH: expected an unsigned 64-bit integer, got "18446744073709551616"',
    ],
    ["DENEB_FORK_EPOCH", undefined, "DENEB_FORK_EPOCH: required"],
    [
      "ALTAIR_FORK_EPOCH",
      "ALTAIR_FORK_EPOCH: -1",
      'ALTAIR_FORK_EPOCH: expected an unsigned 64-bit integer, got "-1"',
    ],
    [
      "ALTAIR_FORK_VERSION",
      "ALTAIR_FORK_VERSION: [0x20000038]",
      "ALTAIR_FORK_VERSION: expected a single value, got a list",
    ],
    [
      "SECONDS_PER_SLOT",
      "SECONDS_PER_SLOT: 0",
      "SECONDS_PER_SLOT: expected 1 to 3600 seconds, got 0",
    ],
    ["SECONDS_PER_SLOT", undefined, "SECONDS_PER_SLOT: required"],
    [
      "MIN_GENESIS_TIME",
      "MIN_GENESIS_TIME: soon",
      'MIN_GENESIS_TIME: expected an unsigned 64-bit integer, got "soon"',
    ],
    [
      "CONFIG_NAME",
      "SLOTS_PER_EPOCH: 32",
      "SLOTS_PER_EPOCH: 32, but the minimal preset has 8; sigil builds the containers of the mainnet and minimal presets as the spec defines them",
    ],
    [
      "CONFIG_NAME",
      "SYNC_COMMITTEE_SUBNET_COUNT: 8",
      "SYNC_COMMITTEE_SUBNET_COUNT: 8, but the spec has 4; sigil builds",
    ],
  ] as const)("the %s line as %p is refused, naming the key", (line, to, message) => {
    const found = problems(
      parseSpecConfig(edited(new RegExp(`^${line}`), to), "devnet/config.yaml"),
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toStartWith(`network: devnet/config.yaml: ${message}`);
  });

  test("every bad key is reported at once", () => {
    const text = edited(/^SECONDS_PER_SLOT/, "SECONDS_PER_SLOT: x").replace(
      "GENESIS_FORK_VERSION: 0x10000038",
      "GENESIS_FORK_VERSION: 1",
    );
    expect(problems(parseSpecConfig(text, "c")).length).toBe(2);
  });

  test("network_config gives only what a spec config cannot", () => {
    const found = problems(
      parseSpecConfig(MINIMAL, "c", { seconds_per_slot: 12, deneb_fork_epoch: 5 }),
    );
    expect(found.sort()).toEqual([
      "network_config.deneb_fork_epoch: comes from the spec config c (DENEB_FORK_EPOCH) when network names one; network_config may only add genesis_validators_root and genesis_time",
      "network_config.seconds_per_slot: comes from the spec config c (SECONDS_PER_SLOT) when network names one; network_config may only add genesis_validators_root and genesis_time",
    ]);
  });

  test("YAML that does not parse, and a document that is not a mapping", () => {
    expect(problems(parseSpecConfig("A: 1\nA: 2\n", "c"))[0]).toStartWith("network: c:2:1: YAML: ");
    expect(problems(parseSpecConfig("- 1\n- 2\n", "c"))).toEqual([
      "network: c: expected a mapping of spec keys (PRESET_BASE: …)",
    ]);
  });
});

describe("the network setting", () => {
  const dir = mkdtempSync(join(tmpdir(), "sigil-spec-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a name is a built-in network, network_config on top", () => {
    expect(network(configuredNetworkOf("hoodi"))).toBe(NETWORKS.hoodi);
    const devnet = network(configuredNetworkOf("mainnet", { genesis_fork_version: "0x00000001" }));
    expect(hex(devnet.genesisForkVersion)).toBe("0x00000001");
    expect(devnet.preset).toBe(PRESETS.mainnet);
  });

  test("anything else is the path of a spec config", () => {
    const path = join(dir, "config.yaml");
    writeFileSync(path, MINIMAL);
    expect(network(configuredNetworkOf(path)).preset).toBe(PRESETS.minimal);
    expect(problems(configuredNetworkOf("mainet"))).toEqual([
      'network: must be one of mainnet, hoodi, sepolia, or the path of a consensus-spec config.yaml; cannot read "mainet" (ENOENT)',
    ]);
    expect(problems(configuredNetworkOf(dir))[0]).toContain("(EISDIR)");
  });
});
