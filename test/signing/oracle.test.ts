/**
 * Sigil's signing roots against Lodestar's, on randomized payloads for every operation and fork
 * variant. The payload JSON is generated from Lodestar's own SSZ types and Lodestar's own JSON
 * encoding; the expected domain comes from Lodestar's BeaconConfig (real fork schedules of
 * mainnet, sepolia and hoodi). Fork info is sent in both client conventions: the fork's activation
 * epoch (Lighthouse, Teku, Prysm, Nimbus) and the message's own epoch (Lodestar).
 */
import { describe, expect, test } from "bun:test";
import { type BeaconConfig, createBeaconConfig } from "@lodestar/config";
import {
  hoodiChainConfig,
  mainnetChainConfig,
  sepoliaChainConfig,
} from "@lodestar/config/networks";
import {
  DOMAIN_AGGREGATE_AND_PROOF,
  DOMAIN_APPLICATION_BUILDER,
  DOMAIN_BEACON_ATTESTER,
  DOMAIN_BEACON_PROPOSER,
  DOMAIN_CONTRIBUTION_AND_PROOF,
  DOMAIN_RANDAO,
  DOMAIN_SELECTION_PROOF,
  DOMAIN_SYNC_COMMITTEE,
  DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF,
  DOMAIN_VOLUNTARY_EXIT,
  ForkSeq,
} from "@lodestar/params";
import { ssz } from "@lodestar/types";
import { NETWORKS, type NetworkName } from "../../src/signing/network";
import { parseSigningRequest } from "../../src/signing/parse";
import { fromHex, lodestarDomain, lodestarSigningRoot, toHex } from "./lodestar";
import { type Json, obj, oracle, type RandomRules, Rng, randomPayload } from "./random-ssz";

const CASES_PER_VARIANT = 20;
const SLOTS_PER_EPOCH = 32;

// ---- Random payloads: uints at their edges, bitlists sometimes beyond the phase0 limit ----

const RULES: RandomRules = {
  uint(rng, kind, byteLength) {
    if (kind === "UintBigintType") return rng.uint(8 * byteLength).toString();
    // Lodestar keeps these as JS numbers: stay within 2^53-1.
    const value = rng.uint(Math.min(8 * byteLength, 53));
    return (
      value > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : value
    ).toString();
  },
  // Bitlist: mostly committee-sized, sometimes beyond the phase0 limit when allowed.
  bitlistLength: (rng, limitBits) => rng.int(Math.min(limitBits, rng.chance(0.2) ? 5000 : 300) + 1),
  maxListElements: 3,
};

/** Clients may send uint64 as JSON numbers when they fit: turn some decimal strings into numbers. */
function someNumbers(value: unknown, rng: Rng): unknown {
  if (Array.isArray(value)) return value.map((v) => someNumbers(v, rng));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, someNumbers(v, rng)]));
  }
  if (typeof value === "string" && /^[0-9]+$/.test(value) && rng.chance(0.3)) {
    const n = Number(value);
    if (Number.isSafeInteger(n)) return n;
  }
  return value;
}

// ---- Variants: one per request type and fork shape ----

interface Built {
  /** Payload key → payload, plus anything else the request needs (e.g. nothing). */
  readonly fields: Json;
  /** Lodestar's hash_tree_root of the signed object. */
  readonly objectRoot: Uint8Array;
}

interface Variant {
  readonly name: string;
  readonly type: string;
  readonly domainType: Uint8Array;
  readonly pinned?: "exit" | "builder";
  /** A random payload whose message epoch (the one that picks the fork) is `epoch`. */
  build(rng: Rng, epoch: number): Built;
}

const slotIn = (rng: Rng, epoch: number) =>
  String(epoch * SLOTS_PER_EPOCH + rng.int(SLOTS_PER_EPOCH));

function simple(
  name: string,
  type: string,
  domainType: Uint8Array,
  payloadKey: string,
  sszType: unknown,
  place: (json: Json, rng: Rng, epoch: number) => void,
  rootOf?: (value: Json) => Uint8Array,
): Variant {
  return {
    name,
    type,
    domainType,
    build(rng, epoch) {
      const json = randomPayload(sszType, rng, RULES, (j) => place(j, rng, epoch));
      const objectRoot = rootOf
        ? rootOf(json)
        : oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(json));
      return { fields: { [payloadKey]: json }, objectRoot };
    },
  };
}

const FORKS = ["phase0", "altair", "bellatrix", "capella", "deneb", "electra", "fulu"] as const;
type Fork = (typeof FORKS)[number];

function aggregateVariant(name: string, type: string, fork: Fork, versioned: boolean): Variant {
  const sszType = ssz[fork].AggregateAndProof;
  return {
    name,
    type,
    domainType: DOMAIN_AGGREGATE_AND_PROOF,
    build(rng, epoch) {
      const data = randomPayload(sszType, rng, RULES, (j) => {
        obj(obj(j.aggregate).data).slot = slotIn(rng, epoch);
      });
      const objectRoot = oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(data));
      const payload = versioned ? { version: fork.toUpperCase(), data } : data;
      return { fields: { aggregate_and_proof: payload }, objectRoot };
    },
  };
}

/** BLOCK_V2 of `fork`: a full random block; sent whole (PHASE0/ALTAIR) or as its header. */
function blockVariant(fork: Fork, shape: "block" | "block_header" | "legacy"): Variant {
  const blockType = ssz[fork].BeaconBlock;
  const bodyType = ssz[fork].BeaconBlockBody;
  const name =
    shape === "legacy" ? "BLOCK (legacy, phase0)" : `BLOCK_V2 ${fork.toUpperCase()} ${shape}`;
  return {
    name,
    type: shape === "legacy" ? "BLOCK" : "BLOCK_V2",
    domainType: DOMAIN_BEACON_PROPOSER,
    build(rng, epoch) {
      const json = randomPayload(blockType, rng, RULES, (j) => {
        j.slot = slotIn(rng, epoch);
      });
      const block = oracle(blockType).fromJson(json) as { body: unknown };
      const objectRoot = oracle(blockType).hashTreeRoot(block);
      if (shape === "legacy") return { fields: { block: json }, objectRoot };
      if (shape === "block") {
        return {
          fields: { beacon_block: { version: fork.toUpperCase(), block: json } },
          objectRoot,
        };
      }
      const header = {
        slot: json.slot,
        proposer_index: json.proposer_index,
        parent_root: json.parent_root,
        state_root: json.state_root,
        body_root: toHex(oracle(bodyType).hashTreeRoot(block.body)),
      };
      return {
        fields: {
          beacon_block: { version: rng.pick([fork.toUpperCase(), fork]), block_header: header },
        },
        objectRoot,
      };
    },
  };
}

const VARIANTS: Variant[] = [
  {
    // hash_tree_root(slot)
    name: "AGGREGATION_SLOT",
    type: "AGGREGATION_SLOT",
    domainType: DOMAIN_SELECTION_PROOF,
    build(rng, epoch) {
      const slot = Number(slotIn(rng, epoch));
      return {
        fields: { aggregation_slot: { slot: String(slot) } },
        objectRoot: ssz.Slot.hashTreeRoot(slot),
      };
    },
  },
  aggregateVariant("AGGREGATE_AND_PROOF plain phase0", "AGGREGATE_AND_PROOF", "phase0", false),
  aggregateVariant(
    "AGGREGATE_AND_PROOF plain electra (Lighthouse)",
    "AGGREGATE_AND_PROOF",
    "electra",
    false,
  ),
  ...FORKS.map((fork) =>
    aggregateVariant(
      `AGGREGATE_AND_PROOF_V2 ${fork.toUpperCase()}`,
      "AGGREGATE_AND_PROOF_V2",
      fork,
      true,
    ),
  ),
  simple(
    "ATTESTATION",
    "ATTESTATION",
    DOMAIN_BEACON_ATTESTER,
    "attestation",
    ssz.phase0.AttestationData,
    (j, _rng, epoch) => {
      obj(j.target).epoch = String(epoch);
    },
  ),
  blockVariant("phase0", "block"),
  blockVariant("altair", "block"),
  ...FORKS.map((fork) => blockVariant(fork, "block_header")),
  blockVariant("phase0", "legacy"),
  {
    name: "RANDAO_REVEAL",
    type: "RANDAO_REVEAL",
    domainType: DOMAIN_RANDAO,
    build: (_rng, epoch) => ({
      fields: { randao_reveal: { epoch: String(epoch) } },
      objectRoot: ssz.Epoch.hashTreeRoot(epoch),
    }),
  },
  {
    ...simple(
      "VOLUNTARY_EXIT",
      "VOLUNTARY_EXIT",
      DOMAIN_VOLUNTARY_EXIT,
      "voluntary_exit",
      ssz.phase0.VoluntaryExit,
      (j, _rng, epoch) => {
        j.epoch = String(epoch);
      },
    ),
    pinned: "exit",
  },
  simple(
    "SYNC_COMMITTEE_MESSAGE",
    "SYNC_COMMITTEE_MESSAGE",
    DOMAIN_SYNC_COMMITTEE,
    "sync_committee_message",
    ssz.altair.SyncCommitteeMessage,
    (j, rng, epoch) => {
      j.slot = slotIn(rng, epoch);
    },
    (json) => ssz.Root.hashTreeRoot(fromHex(String(json.beacon_block_root))),
  ),
  simple(
    "SYNC_COMMITTEE_SELECTION_PROOF",
    "SYNC_COMMITTEE_SELECTION_PROOF",
    DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF,
    "sync_aggregator_selection_data",
    ssz.altair.SyncAggregatorSelectionData,
    (j, rng, epoch) => {
      j.slot = slotIn(rng, epoch);
    },
  ),
  simple(
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    DOMAIN_CONTRIBUTION_AND_PROOF,
    "contribution_and_proof",
    ssz.altair.ContributionAndProof,
    (j, rng, epoch) => {
      obj(j.contribution).slot = slotIn(rng, epoch);
    },
  ),
  {
    ...simple(
      "VALIDATOR_REGISTRATION",
      "VALIDATOR_REGISTRATION",
      DOMAIN_APPLICATION_BUILDER,
      "validator_registration",
      ssz.bellatrix.ValidatorRegistrationV1,
      () => {},
    ),
    pinned: "builder",
  },
];

// ---- Networks and fork info ----

const CHAIN_CONFIGS = {
  mainnet: mainnetChainConfig,
  sepolia: sepoliaChainConfig,
  hoodi: hoodiChainConfig,
} as const;
const NETWORK_NAMES = Object.keys(CHAIN_CONFIGS) as NetworkName[];

type ForkInfoJson = {
  fork: { previous_version: string; current_version: string; epoch: string };
  genesis_validators_root: string;
};

function forkInfoJson(
  previous: Uint8Array,
  current: Uint8Array,
  epoch: number,
  gvr: Uint8Array,
): ForkInfoJson {
  return {
    fork: {
      previous_version: toHex(previous),
      current_version: toHex(current),
      epoch: String(epoch),
    },
    genesis_validators_root: toHex(gvr),
  };
}

/** Lighthouse, Teku, Prysm, Nimbus: the state's fork, with its activation epoch. */
function activationForkInfo(config: BeaconConfig, stateEpoch: number): ForkInfoJson {
  const fork = config.getForkInfo(stateEpoch * SLOTS_PER_EPOCH);
  return forkInfoJson(fork.prevVersion, fork.version, fork.epoch, config.genesisValidatorsRoot);
}

/** Lodestar: the fork at the message's epoch, with that epoch; exits after Deneb: Capella. */
function lodestarForkInfo(config: BeaconConfig, messageEpoch: number, exit: boolean): ForkInfoJson {
  const fork = config.getForkInfo(messageEpoch * SLOTS_PER_EPOCH);
  if (exit && fork.seq >= ForkSeq.deneb) {
    const capella = config.forks.capella;
    return forkInfoJson(
      capella.prevVersion,
      capella.version,
      capella.epoch,
      config.genesisValidatorsRoot,
    );
  }
  return forkInfoJson(fork.prevVersion, fork.version, messageEpoch, config.genesisValidatorsRoot);
}

/** A state epoch near a fork boundary of `config` most of the time. */
function stateEpochFor(config: BeaconConfig, rng: Rng): number {
  const epochs = config.forksAscendingEpochOrder.map((f) => f.epoch).filter(Number.isFinite);
  const last = Math.max(...epochs);
  if (rng.chance(0.2)) return rng.int(last + 20000);
  return rng.pick(epochs) + rng.pick([0, 0, 1, 2, rng.int(5000)]);
}

function expectedDomain(
  variant: Variant,
  config: BeaconConfig,
  stateSlot: number,
  messageSlot: number,
): Uint8Array {
  if (variant.pinned === "builder") {
    return lodestarDomain(
      DOMAIN_APPLICATION_BUILDER,
      config.GENESIS_FORK_VERSION,
      new Uint8Array(32),
    );
  }
  if (variant.pinned === "exit") return config.getDomainForVoluntaryExit(stateSlot, messageSlot);
  return config.getDomain(stateSlot, variant.domainType, messageSlot);
}

function sigilRoot(body: Json, network: NetworkName): string {
  return toHex(parseSigningRequest(body, NETWORKS[network]).signingRoot);
}

/** One case: sigil's root (both fork_info conventions) must equal Lodestar's. */
function checkCase(
  variant: Variant,
  network: NetworkName,
  rng: Rng,
  stateEpoch: number,
  messageEpoch: number,
): void {
  const gvr = rng.bytes(32);
  const config = createBeaconConfig(CHAIN_CONFIGS[network], gvr);
  const stateSlot = stateEpoch * SLOTS_PER_EPOCH + rng.int(SLOTS_PER_EPOCH);
  const built = variant.build(rng, messageEpoch);
  const domain = expectedDomain(variant, config, stateSlot, messageEpoch * SLOTS_PER_EPOCH);
  const expected = toHex(lodestarSigningRoot(built.objectRoot, domain));
  const fields = someNumbers(built.fields, rng) as Json;

  const conventions: [string, ForkInfoJson | undefined][] =
    variant.pinned === "builder"
      ? [["no fork_info", undefined]]
      : [
          ["activation epoch", activationForkInfo(config, stateEpoch)],
          ["message epoch", lodestarForkInfo(config, messageEpoch, variant.pinned === "exit")],
        ];
  for (const [convention, forkInfo] of conventions) {
    const body: Json = {
      type: variant.type,
      ...fields,
      ...(forkInfo ? { fork_info: forkInfo } : {}),
    };
    const context = `${variant.name} on ${network}, state epoch ${stateEpoch}, message epoch ${messageEpoch}, fork_info ${convention}`;
    expect(sigilRoot(body, network), context).toBe(expected);
    // The same body with the root supplied, as every client sends it, is accepted.
    expect(sigilRoot({ ...body, signingRoot: expected }, network), context).toBe(expected);
  }
}

describe("signing roots agree with Lodestar", () => {
  test.each(VARIANTS.map((v, i) => [v.name, i] as const))("%s: random payloads", (_name, index) => {
    const variant = VARIANTS[index];
    if (!variant) throw new Error("no variant");
    const rng = new Rng(0x5161 + index * 7919);
    for (let i = 0; i < CASES_PER_VARIANT; i++) {
      const network = rng.pick(NETWORK_NAMES);
      const config = createBeaconConfig(CHAIN_CONFIGS[network], new Uint8Array(32));
      const stateEpoch = stateEpochFor(config, rng);
      // Attestations and aggregates may belong to the previous epoch.
      const messageEpoch = stateEpoch > 0 && rng.chance(0.4) ? stateEpoch - 1 : stateEpoch;
      checkCase(variant, network, rng, stateEpoch, messageEpoch);
    }
  });
});

describe("fork boundaries", () => {
  const attestation = VARIANTS.find((v) => v.name === "ATTESTATION");
  if (!attestation) throw new Error("no ATTESTATION variant");

  for (const network of NETWORK_NAMES) {
    const config = createBeaconConfig(CHAIN_CONFIGS[network], new Uint8Array(32));
    const boundaries = config.forksAscendingEpochOrder.filter(
      (f) => Number.isFinite(f.epoch) && f.epoch > 0,
    );
    test.each(boundaries.map((f) => [f.name, f.epoch] as const))(
      `${network}: at the %s boundary (epoch %d) the previous epoch signs with the previous version`,
      (_fork, epoch) => {
        const rng = new Rng(epoch);
        const fork = config.getForkInfo(epoch * SLOTS_PER_EPOCH);
        const gvr = rng.bytes(32);
        const forkInfo = forkInfoJson(fork.prevVersion, fork.version, fork.epoch, gvr);
        for (const [messageEpoch, version] of [
          [epoch - 1, fork.prevVersion],
          [epoch, fork.version],
        ] as const) {
          const built = attestation.build(rng, messageEpoch);
          const expected = lodestarSigningRoot(
            built.objectRoot,
            lodestarDomain(DOMAIN_BEACON_ATTESTER, version, gvr),
          );
          const body = { type: "ATTESTATION", fork_info: forkInfo, ...built.fields };
          expect(sigilRoot(body, network)).toBe(toHex(expected));
          checkCase(attestation, network, rng, epoch, messageEpoch);
        }
      },
    );
  }
});

describe("pinned domains", () => {
  const registration = VARIANTS.find((v) => v.pinned === "builder");
  const exit = VARIANTS.find((v) => v.pinned === "exit");
  if (!registration || !exit) throw new Error("missing variants");

  test.each(NETWORK_NAMES)(
    "VALIDATOR_REGISTRATION on %s: builder domain over the genesis version",
    (network) => {
      const rng = new Rng(network.length);
      const chain = CHAIN_CONFIGS[network];
      const built = registration.build(rng, 0);
      const domain = lodestarDomain(
        DOMAIN_APPLICATION_BUILDER,
        chain.GENESIS_FORK_VERSION,
        new Uint8Array(32),
      );
      const expected = toHex(lodestarSigningRoot(built.objectRoot, domain));
      // fork_info is not needed, and one that is sent changes nothing.
      const bogusForkInfo = forkInfoJson(rng.bytes(4), rng.bytes(4), 5, rng.bytes(32));
      expect(sigilRoot({ type: "VALIDATOR_REGISTRATION", ...built.fields }, network)).toBe(
        expected,
      );
      expect(
        sigilRoot(
          { type: "VALIDATOR_REGISTRATION", fork_info: bogusForkInfo, ...built.fields },
          network,
        ),
      ).toBe(expected);
    },
  );

  test.each(NETWORK_NAMES)("VOLUNTARY_EXIT on %s before and after Deneb (EIP-7044)", (network) => {
    const rng = new Rng(7044 + network.length);
    const chain = CHAIN_CONFIGS[network];
    const deneb = chain.DENEB_FORK_EPOCH;
    const capella = chain.CAPELLA_FORK_EPOCH;
    const cases: [number, number][] = [
      [deneb, deneb],
      [deneb + 1, deneb],
      [deneb + 10, deneb + 3],
      [deneb + 100000, deneb + 99999],
    ];
    if (deneb > 0) {
      cases.push([deneb - 1, deneb - 1], [deneb, deneb - 1], [deneb - 1, capella]);
      // An exit signed long after Deneb for an old (Capella-era) epoch still uses Capella.
      cases.push([chain.ELECTRA_FORK_EPOCH + 5, capella + 10]);
    }
    for (const [stateEpoch, exitEpoch] of cases) {
      checkCase(exit, network, rng, stateEpoch, exitEpoch);
      const config = createBeaconConfig(chain, rng.bytes(32));
      const built = exit.build(rng, exitEpoch);
      const capellaDomain = lodestarDomain(
        DOMAIN_VOLUNTARY_EXIT,
        chain.CAPELLA_FORK_VERSION,
        config.genesisValidatorsRoot,
      );
      const body = {
        type: "VOLUNTARY_EXIT",
        fork_info: activationForkInfo(config, stateEpoch),
        ...built.fields,
      };
      const root = sigilRoot(body, network);
      const capellaRoot = toHex(lodestarSigningRoot(built.objectRoot, capellaDomain));
      if (stateEpoch >= deneb) expect(root).toBe(capellaRoot);
      else if (stateEpoch >= capella) expect(root).toBe(capellaRoot); // the Capella fork itself
    }
  });
});

describe("network constants", () => {
  test.each(NETWORK_NAMES)("%s matches @lodestar/config", (network) => {
    const chain = CHAIN_CONFIGS[network];
    const constants = NETWORKS[network];
    expect(toHex(constants.genesisForkVersion)).toBe(toHex(chain.GENESIS_FORK_VERSION));
    expect(toHex(constants.capellaForkVersion)).toBe(toHex(chain.CAPELLA_FORK_VERSION));
    expect(constants.denebForkEpoch).toBe(BigInt(chain.DENEB_FORK_EPOCH));
  });
});
