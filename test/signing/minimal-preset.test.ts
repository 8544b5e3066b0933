/**
 * A minimal-preset devnet (`network: <its config.yaml>`), signed as Lodestar computes it.
 *
 * The oracle is Lodestar's types and domain logic with its preset set to minimal, in a child
 * process (lodestar-minimal.ts), reading the same config.yaml with its own parser. Its requests
 * are signed through a real signer, and each signature is verified against Lodestar's root; the
 * parser alone is checked on random requests of every type near each fork boundary. The devnet's
 * forks are one epoch apart, so an epoch counted with mainnet's 32 slots instead of 8 picks
 * another fork version: the tests show that the mainnet preset would sign other roots.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { DEPOSIT_CONTRACT_TREE_DEPTH, SYNC_COMMITTEE_SUBNET_COUNT } from "@lodestar/params";
import { mainnetPreset } from "@lodestar/params/presets/mainnet";
import { minimalPreset } from "@lodestar/params/presets/minimal";
import { ssz } from "@lodestar/types";
import { SigilError } from "../../src/errors";
import type { NetworkConstants } from "../../src/signing/network";
import { parseSigningRequest } from "../../src/signing/parse";
import { PRESET_KEYS, PRESETS, SPEC_CONSTANTS } from "../../src/signing/preset";
import { parseSpecConfig, readSpecConfig } from "../../src/signing/spec-config";
import { presetTypes } from "../../src/signing/ssz";
import { initializedDatabase, runSigil, TempDir } from "../support/cli";
import {
  bytesToHex,
  oracleDomain,
  oracleSigningRoot,
  verifiesAgainstOracle,
} from "../support/oracle";
import { startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS, postSign } from "../support/slashing";
import {
  DEVNET_FORK_EPOCHS,
  DEVNET_SECONDS_PER_SLOT,
  devnetConfigYaml,
  minimalOracle,
  type OracleCase,
  type OracleOutput,
} from "./minimal-oracle";

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
const KEY = INTEROP_KEYS[0] ?? "";
const GVR = `0x${"d5".repeat(16)}${"1e".repeat(16)}`;
const SLOTS = 8;
const EPOCH_SECONDS = DEVNET_SECONDS_PER_SLOT * SLOTS;
/** The wall-clock epoch of the signer's devnet (genesis_time puts the clock mid-epoch). */
const NOW_EPOCH = 1000;
const genesisTime = () =>
  Math.floor(Date.now() / 1000) - NOW_EPOCH * EPOCH_SECONDS - EPOCH_SECONDS / 2;
const configPath = dir.file("config.yaml", devnetConfigYaml({ minGenesisTime: 1_700_000_000 }));

let oracle: OracleOutput;
let devnet: NetworkConstants;

beforeAll(async () => {
  mkdirSync(keysDir);
  copyFileSync("examples/keys/interop-0.yaml", join(keysDir, "interop-0.yaml"));
  oracle = await minimalOracle({
    configPath,
    genesisValidatorsRoot: GVR,
    seed: 0x8a11,
    casesPerVariant: 24,
  });
  const loaded = readSpecConfig(configPath, { genesis_validators_root: GVR });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  devnet = loaded.network;
});
afterAll(() => dir.remove());

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

/** sigil's root for a case, or the code it refuses it with. */
function sigilRoot(body: Record<string, unknown>, network: NetworkConstants): string {
  try {
    return hex(parseSigningRequest(body, network).signingRoot);
  } catch (error) {
    if (error instanceof SigilError) return error.code;
    throw error;
  }
}

/**
 * Whether the mainnet preset's epoch of a case (slot / 32) falls before its fork_info epoch while
 * the minimal preset's (slot / 8) does not: the fork version differs, and so does the root.
 */
const EPOCH_TYPED = ["ATTESTATION", "RANDAO_REVEAL", "VOLUNTARY_EXIT", "VALIDATOR_REGISTRATION"];
function versionDependsOnPreset(c: OracleCase): boolean {
  if (EPOCH_TYPED.includes(String(c.body.type))) return false;
  const forkEpoch = Number((c.body.fork_info as { fork: { epoch: string } }).fork.epoch);
  return Math.floor(c.messageEpoch / 4) < forkEpoch;
}

describe("the oracle", () => {
  test("is Lodestar on the minimal preset (in its own process)", () => {
    expect(oracle.facts).toEqual({
      activePreset: "minimal",
      slotsPerEpoch: 8,
      contributionAggregationBits: 8,
      syncCommitteeBits: 32,
      electraCommitteeBits: 4,
      electraAggregationBitsLimit: 2048 * 4,
    });
    // This process is on mainnet's: the preset really is per process.
    const contribution = ssz.altair.SyncCommitteeContribution as unknown as {
      fields: { aggregationBits: { lengthBits: number } };
    };
    expect(contribution.fields.aggregationBits.lengthBits).toBe(128);
  });
});

describe("presets", () => {
  test("sigil's preset constants are consensus-specs', as @lodestar/params has them", () => {
    for (const key of PRESET_KEYS) {
      expect(PRESETS.minimal[key], `minimal ${key}`).toBe(minimalPreset[key]);
      expect(PRESETS.mainnet[key], `mainnet ${key}`).toBe(mainnetPreset[key]);
    }
    expect(SPEC_CONSTANTS.DEPOSIT_CONTRACT_TREE_DEPTH).toBe(DEPOSIT_CONTRACT_TREE_DEPTH);
    expect(SPEC_CONSTANTS.SYNC_COMMITTEE_SUBNET_COUNT).toBe(SYNC_COMMITTEE_SUBNET_COUNT);
  });

  test("the containers each preset builds have its lengths", () => {
    const minimal = presetTypes(PRESETS.minimal);
    const mainnet = presetTypes(PRESETS.mainnet);
    expect(minimal.SyncCommitteeContribution.fields.aggregation_bits.lengthBits).toBe(8);
    expect(mainnet.SyncCommitteeContribution.fields.aggregation_bits.lengthBits).toBe(128);
    expect(minimal.AttestationElectra.fields.committee_bits.lengthBits).toBe(4);
    expect(minimal.AttestationElectra.fields.aggregation_bits.limitBits).toBe(8192);
    expect(minimal.SyncAggregate.fields.sync_committee_bits.lengthBits).toBe(32);
    expect(minimal.slotsPerEpoch).toBe(8n);
    // Built once per preset.
    expect(presetTypes(PRESETS.minimal)).toBe(minimal);
  });
});

describe("the devnet's config.yaml", () => {
  test("gives the minimal preset, its fork constants and clock", () => {
    expect(devnet.preset).toBe(PRESETS.minimal);
    expect(devnet.name).toBe(`sigil-devnet (${configPath}, minimal preset)`);
    expect(hex(devnet.genesisForkVersion)).toBe("0x10000038");
    expect(hex(devnet.capellaForkVersion)).toBe("0x40000038");
    expect(devnet.denebForkEpoch).toBe(BigInt(DEVNET_FORK_EPOCHS.DENEB));
    expect(devnet.secondsPerSlot).toBe(BigInt(DEVNET_SECONDS_PER_SLOT));
    expect(devnet.genesisValidatorsRoot && hex(devnet.genesisValidatorsRoot)).toBe(GVR);
    // No genesis_time given: the earliest genesis the spec allows.
    expect(devnet.genesisTime).toBe(1_700_000_000n);
    expect(devnet.genesisTimeIsLowerBound).toBe(true);
  });

  test("a beacon node's /eth/v1/config/spec answer (Lodestar's) gives the same network", () => {
    // It lists the preset too (SLOTS_PER_EPOCH "8", SYNC_COMMITTEE_SIZE "32", …), which must match.
    expect(oracle.spec.data.SLOTS_PER_EPOCH).toBe("8");
    const loaded = parseSpecConfig(JSON.stringify(oracle.spec), "spec.json", {
      genesis_validators_root: GVR,
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const { name: _name, ...fromSpec } = loaded.network;
    const { name: _yamlName, ...fromYaml } = devnet;
    expect(fromSpec).toEqual(fromYaml);
  });
});

describe("signing roots agree with Lodestar's minimal preset", () => {
  test("random requests of every type near each fork boundary, in both fork_info conventions", () => {
    expect(oracle.random.length).toBeGreaterThan(500);
    for (const c of oracle.random) {
      expect(sigilRoot(c.body, devnet), c.name).toBe(c.signingRoot);
      // As clients send it, with the root: accepted.
      expect(sigilRoot({ ...c.body, signingRoot: c.signingRoot }, devnet), c.name).toBe(
        c.signingRoot,
      );
    }
  });

  test("the mainnet preset's epochs would pick the previous fork version for many", () => {
    const onMainnetPreset: NetworkConstants = { ...devnet, preset: PRESETS.mainnet };
    const affected = oracle.random.filter(versionDependsOnPreset);
    expect(affected.length).toBeGreaterThan(200);
    for (const c of affected) {
      expect(sigilRoot(c.body, onMainnetPreset), c.name).not.toBe(c.signingRoot);
    }
  });

  test("the containers the preset sizes are refused under the mainnet preset", () => {
    const onMainnetPreset: NetworkConstants = { ...devnet, preset: PRESETS.mainnet };
    const sized = oracle.random.filter((c) =>
      /ALTAIR block |CONTRIBUTION_AND_PROOF|AGGREGATE_AND_PROOF(_V2 (ELECTRA|FULU)| plain electra)/.test(
        c.name,
      ),
    );
    expect(sized.length).toBeGreaterThanOrEqual(24 * 5);
    for (const c of sized)
      expect(sigilRoot(c.body, onMainnetPreset), c.name).toBe("invalid_request");
  });
});

describe("a real signer on the devnet", () => {
  async function devnetSigner(name: string, networkConfig: string) {
    return startInProcessSigner(dir, name, {
      yaml: [
        `network: "${configPath}"`,
        `network_config: {genesis_validators_root: "${GVR}"${networkConfig}}`,
        `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`,
      ],
    });
  }

  test("signs blocks, attestations, aggregates and sync committee messages with Lodestar's roots", async () => {
    const s = await devnetSigner("scenario", `, genesis_time: ${genesisTime()}`);
    try {
      const types = new Set(oracle.scenario.map((c) => String(c.body.type)));
      expect([...types].sort()).toEqual([
        "AGGREGATE_AND_PROOF",
        "AGGREGATE_AND_PROOF_V2",
        "AGGREGATION_SLOT",
        "ATTESTATION",
        "BLOCK_V2",
        "RANDAO_REVEAL",
        "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
        "SYNC_COMMITTEE_MESSAGE",
        "SYNC_COMMITTEE_SELECTION_PROOF",
        "VALIDATOR_REGISTRATION",
        "VOLUNTARY_EXIT",
      ]);
      for (const c of oracle.scenario) {
        const response = await postSign(s.url, KEY, c.body);
        const text = await response.text();
        expect(response.status, `${c.name}: ${text}`).toBe(200);
        const { signature } = JSON.parse(text) as { signature: string };
        expect(
          verifiesAgainstOracle({ pubkey: KEY, signingRoot: c.signingRoot }, signature),
          c.name,
        ).toBe(true);
      }
      // The electra aggregates carried committee_bits of 4 bits (1 byte), Bitvector[4].
      const electra = oracle.scenario.find((c) =>
        c.name.startsWith("AGGREGATE_AND_PROOF_V2 ELECTRA"),
      );
      if (!electra) throw new Error("no Electra aggregate in the scenario");
      const data = (
        electra.body.aggregate_and_proof as { data: { aggregate: { committee_bits: string } } }
      ).data;
      expect(data.aggregate.committee_bits).toMatch(/^0x0[0-9a-f]$/);

      // The database was created for the devnet's chain.
      expect(
        s.logs.some((l) =>
          l.includes(`initialized for sigil-devnet (${configPath}, minimal preset)`),
        ),
      ).toBe(true);
      const exported = runSigil(["slashing", "export", "-c", s.configPath, "--file", "-"]);
      expect(exported.code, exported.stderr).toBe(0);
      const interchange = JSON.parse(exported.stdout) as {
        metadata: { genesis_validators_root: string };
        data: { signed_blocks: unknown[]; signed_attestations: unknown[] }[];
      };
      expect(interchange.metadata.genesis_validators_root).toBe(GVR);
      const blocks = oracle.scenario.filter((c) => c.body.type === "BLOCK_V2").length;
      expect(interchange.data[0]?.signed_blocks.length).toBe(blocks);
    } finally {
      await s.stop();
    }
  });

  test("the future-epoch bound counts 8 slots an epoch and the devnet's slot length", async () => {
    const s = await devnetSigner("future", `, genesis_time: ${genesisTime()}`);
    try {
      const bound = s.logs.find((l) => l.includes('"future-epoch bound"')) ?? "";
      expect(bound).toContain('"slots_per_epoch":8');
      expect(bound).toContain(`"seconds_per_slot":${DEVNET_SECONDS_PER_SLOT}`);
      expect(bound).not.toContain("genesis_time_from");
      const fulu = {
        previous_version: "0x60000038",
        current_version: "0x70000038",
        epoch: String(DEVNET_FORK_EPOCHS.FULU),
      };
      const block = (slot: number) => {
        const header = {
          slot: String(slot),
          proposer_index: "3",
          parent_root: `0x${"12".repeat(32)}`,
          state_root: `0x${"34".repeat(32)}`,
          body_root: `0x${"56".repeat(32)}`,
        };
        const objectRoot = ssz.phase0.BeaconBlockHeader.hashTreeRoot(
          ssz.phase0.BeaconBlockHeader.fromJson(header),
        );
        return {
          body: {
            type: "BLOCK_V2",
            fork_info: { fork: fulu, genesis_validators_root: GVR },
            beacon_block: { version: "FULU", block_header: header },
          },
          signingRoot: bytesToHex(
            oracleSigningRoot(objectRoot, oracleDomain("0x00000000", fulu.current_version, GVR)),
          ),
        };
      };
      // Epoch NOW + 2 ends at slot (NOW + 3) * 8 - 1: signed; the next slot is refused.
      const beyond = await postSign(s.url, KEY, block((NOW_EPOCH + 3) * SLOTS).body);
      const refusal = (await beyond.json()) as { code: string; message: string };
      expect(beyond.status).toBe(412);
      expect(refusal.message).toStartWith(
        `block_slot_too_far_in_future: slot ${(NOW_EPOCH + 3) * SLOTS} (epoch ${NOW_EPOCH + 3}) is more than 2 epochs after the current epoch ${NOW_EPOCH}`,
      );
      const limit = block((NOW_EPOCH + 3) * SLOTS - 1);
      const signed = await postSign(s.url, KEY, limit.body);
      const text = await signed.text();
      expect(signed.status, text).toBe(200);
      expect(
        verifiesAgainstOracle(
          { pubkey: KEY, signingRoot: limit.signingRoot },
          JSON.parse(text).signature,
        ),
      ).toBe(true);
    } finally {
      await s.stop();
    }
  });

  test("without genesis_time, MIN_GENESIS_TIME is the clock's genesis, and the log says so", async () => {
    const s = await devnetSigner("lower-bound", "");
    try {
      const bound = s.logs.find((l) => l.includes('"future-epoch bound"')) ?? "";
      expect(bound).toContain('"genesis_time":1700000000');
      expect(bound).toContain("MIN_GENESIS_TIME of the spec config");
    } finally {
      await s.stop();
    }
  });
});

describe("configuration", () => {
  test("config check accepts the devnet and names a bad key of its config.yaml", () => {
    const good = dir.file(
      "good.yaml",
      `network: "${configPath}"\nnetwork_config: {genesis_validators_root: "${GVR}"}\n`,
    );
    const ok = runSigil(["config", "check", "-c", good], {
      SIGNER_ANTISLASHING__PATH: initializedDatabase(dir),
    });
    expect(ok.code, ok.stderr).toBe(0);

    const badSpec = dir.file(
      "bad-spec.yaml",
      devnetConfigYaml({ minGenesisTime: 1_700_000_000 }).replace(
        "SECONDS_PER_SLOT: 6",
        "SECONDS_PER_SLOT: six",
      ),
    );
    const bad = dir.file(
      "bad.yaml",
      `network: "${badSpec}"\nnetwork_config: {genesis_validators_root: "${GVR}", seconds_per_slot: 6}\n`,
    );
    const result = runSigil(["config", "check", "-c", bad]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `network: ${badSpec}: SECONDS_PER_SLOT: expected an unsigned 64-bit integer, got "six"`,
    );
    expect(result.stderr).toContain("network_config.seconds_per_slot: comes from the spec config");
  });
});
