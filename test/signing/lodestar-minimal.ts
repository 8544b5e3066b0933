/**
 * The minimal-preset oracle: Lodestar's own types, config and domain logic with its preset set to
 * `minimal`. Lodestar fixes its preset per process when @lodestar/params is first imported, and
 * the test process has already imported it for mainnet, so this runs as a child process
 * (`minimalOracle` in minimal-oracle.ts starts it with LODESTAR_PRESET=minimal).
 *
 * Input (argv[2], JSON): the devnet's config.yaml path, its genesis validators root, a seed and a
 * count. The config.yaml is read with Lodestar's own reading of spec values (chainConfigFromJson),
 * not sigil's. Output (stdout, JSON): what preset Lodestar really runs (so the test can check it is
 * minimal), the config as a beacon node's /eth/v1/config/spec answers it, and sign requests with
 * the signing root Lodestar computes for each: random ones per variant, and a scenario of one
 * message per variant in an order slashing protection accepts.
 */
import { readFileSync } from "node:fs";
import { chainConfigFromJson, chainConfigToJson, createBeaconConfig } from "@lodestar/config";
import {
  ACTIVE_PRESET,
  activePreset,
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
  presetToJson,
  SLOTS_PER_EPOCH,
} from "@lodestar/params";
import { ssz } from "@lodestar/types";
import { parse as parseYaml } from "yaml";
import { fromHex, forkInfoJson as sharedForkInfoJson, toHex } from "./lodestar";
import { type Json, obj, oracle, type RandomRules, Rng, randomPayload } from "./random-ssz";

export interface OracleInput {
  readonly configPath: string;
  readonly genesisValidatorsRoot: string;
  readonly seed: number;
  readonly casesPerVariant: number;
}

export interface OracleCase {
  readonly name: string;
  /** The sign request body (fork_info included), as a client sends it. */
  readonly body: Record<string, unknown>;
  /** Lodestar's signing root. */
  readonly signingRoot: string;
  /** The epoch Lodestar computed the domain at (minimal SLOTS_PER_EPOCH). */
  readonly messageEpoch: number;
}

export interface OracleOutput {
  readonly facts: {
    readonly activePreset: string;
    readonly slotsPerEpoch: number;
    readonly contributionAggregationBits: number;
    readonly syncCommitteeBits: number;
    readonly electraCommitteeBits: number;
    readonly electraAggregationBitsLimit: number;
  };
  /** `{data}` of GET /eth/v1/config/spec on a Lodestar node with this config. */
  readonly spec: { readonly data: Record<string, unknown> };
  readonly random: readonly OracleCase[];
  readonly scenario: readonly OracleCase[];
}

// Random payloads: uints below 2^31, bitlists sometimes at their limit (the Electra aggregate's
// 8192 in the minimal preset).
const RULES: RandomRules = {
  uint: (rng) => String(rng.chance(0.2) ? 0 : rng.int(2 ** 31)),
  bitlistLength: (rng, limitBits) =>
    rng.chance(0.2) ? limitBits : rng.int(Math.min(limitBits, 300) + 1),
  maxListElements: 2,
};

// ---- The devnet ----

const input = JSON.parse(process.argv[2] ?? "{}") as OracleInput;
const specJson = parseYaml(readFileSync(input.configPath, "utf8"), { schema: "failsafe" }) as Json;
const chainConfig = chainConfigFromJson(specJson);
const gvr = fromHex(input.genesisValidatorsRoot);
const config = createBeaconConfig(chainConfig, gvr);

type ForkInfoJson = ReturnType<typeof sharedForkInfoJson>;

function forkInfoJson(previous: Uint8Array, current: Uint8Array, epoch: number): ForkInfoJson {
  return sharedForkInfoJson(previous, current, epoch, input.genesisValidatorsRoot);
}

/** Lighthouse, Teku, Prysm, Nimbus: the state's fork with its activation epoch. */
function activationForkInfo(messageEpoch: number): ForkInfoJson {
  const fork = config.getForkInfo(messageEpoch * SLOTS_PER_EPOCH);
  return forkInfoJson(fork.prevVersion, fork.version, fork.epoch);
}

/** Lodestar: the fork at the message's epoch, with that epoch; exits after Deneb: Capella. */
function messageEpochForkInfo(messageEpoch: number, exit: boolean): ForkInfoJson {
  const fork = config.getForkInfo(messageEpoch * SLOTS_PER_EPOCH);
  if (exit && fork.seq >= ForkSeq.deneb) {
    const capella = config.forks.capella;
    return forkInfoJson(capella.prevVersion, capella.version, capella.epoch);
  }
  return forkInfoJson(fork.prevVersion, fork.version, messageEpoch);
}

// ---- Variants ----

interface Built {
  readonly fields: Json;
  readonly objectRoot: Uint8Array;
  /** The slot Lodestar computes the message's domain at (its epoch: slot / SLOTS_PER_EPOCH). */
  readonly messageSlot: number;
}

interface Variant {
  readonly name: string;
  readonly type: string;
  readonly domainType: Uint8Array;
  readonly pinned?: "exit" | "builder";
  /** A payload at `slot` (for epoch-typed messages: at its epoch). */
  build(rng: Rng, slot: number): Built;
}

const FORKS = ["phase0", "altair", "bellatrix", "capella", "deneb", "electra", "fulu"] as const;
type Fork = (typeof FORKS)[number];
const epochOf = (slot: number) => Math.floor(slot / SLOTS_PER_EPOCH);

function blockVariant(fork: Fork, shape: "block" | "block_header"): Variant {
  const blockType = ssz[fork].BeaconBlock;
  const bodyType = ssz[fork].BeaconBlockBody;
  return {
    name: `BLOCK_V2 ${fork.toUpperCase()} ${shape}`,
    type: "BLOCK_V2",
    domainType: DOMAIN_BEACON_PROPOSER,
    build(rng, slot) {
      const json = randomPayload(blockType, rng, RULES, (j) => {
        j.slot = String(slot);
      });
      const block = oracle(blockType).fromJson(json) as { body: unknown };
      const objectRoot = oracle(blockType).hashTreeRoot(block);
      const version = fork.toUpperCase();
      if (shape === "block") {
        return {
          fields: { beacon_block: { version, block: json } },
          objectRoot,
          messageSlot: slot,
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
        fields: { beacon_block: { version, block_header: header } },
        objectRoot,
        messageSlot: slot,
      };
    },
  };
}

function aggregateVariant(fork: Fork, versioned: boolean): Variant {
  const sszType = ssz[fork].AggregateAndProof;
  const name = versioned
    ? `AGGREGATE_AND_PROOF_V2 ${fork.toUpperCase()}`
    : `AGGREGATE_AND_PROOF plain ${fork}`;
  return {
    name,
    type: versioned ? "AGGREGATE_AND_PROOF_V2" : "AGGREGATE_AND_PROOF",
    domainType: DOMAIN_AGGREGATE_AND_PROOF,
    build(rng, slot) {
      const data = randomPayload(sszType, rng, RULES, (j) => {
        obj(obj(j.aggregate).data).slot = String(slot);
      });
      const objectRoot = oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(data));
      const payload = versioned ? { version: fork.toUpperCase(), data } : data;
      return { fields: { aggregate_and_proof: payload }, objectRoot, messageSlot: slot };
    },
  };
}

function simple(
  name: string,
  domainType: Uint8Array,
  payloadKey: string,
  sszType: unknown,
  place: (json: Json, slot: number) => void,
  options: { rootOf?: (json: Json) => Uint8Array; pinned?: "exit" | "builder" } = {},
): Variant {
  return {
    name,
    type: name,
    domainType,
    ...(options.pinned ? { pinned: options.pinned } : {}),
    build(rng, slot) {
      const json = randomPayload(sszType, rng, RULES, (j) => place(j, slot));
      const objectRoot = options.rootOf
        ? options.rootOf(json)
        : oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(json));
      return { fields: { [payloadKey]: json }, objectRoot, messageSlot: slot };
    },
  };
}

/** Epoch-typed messages carry the epoch of `slot` and are signed at that epoch's first slot. */
const atEpochStart = (slot: number) => epochOf(slot) * SLOTS_PER_EPOCH;

const VARIANTS: Variant[] = [
  blockVariant("phase0", "block"),
  blockVariant("altair", "block"),
  ...FORKS.map((fork) => blockVariant(fork, "block_header")),
  {
    name: "ATTESTATION",
    type: "ATTESTATION",
    domainType: DOMAIN_BEACON_ATTESTER,
    build(rng, slot) {
      const type = ssz.phase0.AttestationData;
      const target = epochOf(slot);
      const json = randomPayload(type, rng, RULES, (j) => {
        j.slot = String(slot);
        obj(j.target).epoch = String(target);
        obj(j.source).epoch = String(Math.max(0, target - 1));
      });
      const objectRoot = type.hashTreeRoot(type.fromJson(json));
      // get_domain(state, DOMAIN_BEACON_ATTESTER, target.epoch)
      return { fields: { attestation: json }, objectRoot, messageSlot: atEpochStart(slot) };
    },
  },
  aggregateVariant("phase0", false),
  aggregateVariant("electra", false),
  ...FORKS.map((fork) => aggregateVariant(fork, true)),
  {
    name: "AGGREGATION_SLOT",
    type: "AGGREGATION_SLOT",
    domainType: DOMAIN_SELECTION_PROOF,
    build: (_rng, slot) => ({
      fields: { aggregation_slot: { slot: String(slot) } },
      objectRoot: ssz.Slot.hashTreeRoot(slot),
      messageSlot: slot,
    }),
  },
  {
    name: "RANDAO_REVEAL",
    type: "RANDAO_REVEAL",
    domainType: DOMAIN_RANDAO,
    build: (_rng, slot) => ({
      fields: { randao_reveal: { epoch: String(epochOf(slot)) } },
      objectRoot: ssz.Epoch.hashTreeRoot(epochOf(slot)),
      messageSlot: atEpochStart(slot),
    }),
  },
  {
    name: "VOLUNTARY_EXIT",
    type: "VOLUNTARY_EXIT",
    domainType: DOMAIN_VOLUNTARY_EXIT,
    pinned: "exit",
    build(rng, slot) {
      const type = ssz.phase0.VoluntaryExit;
      const json = randomPayload(type, rng, RULES, (j) => {
        j.epoch = String(epochOf(slot));
      });
      return {
        fields: { voluntary_exit: json },
        objectRoot: type.hashTreeRoot(type.fromJson(json)),
        messageSlot: atEpochStart(slot),
      };
    },
  },
  simple(
    "SYNC_COMMITTEE_MESSAGE",
    DOMAIN_SYNC_COMMITTEE,
    "sync_committee_message",
    ssz.altair.SyncCommitteeMessage,
    (j, slot) => {
      j.slot = String(slot);
    },
    { rootOf: (json) => ssz.Root.hashTreeRoot(fromHex(String(json.beacon_block_root))) },
  ),
  simple(
    "SYNC_COMMITTEE_SELECTION_PROOF",
    DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF,
    "sync_aggregator_selection_data",
    ssz.altair.SyncAggregatorSelectionData,
    (j, slot) => {
      j.slot = String(slot);
    },
  ),
  simple(
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    DOMAIN_CONTRIBUTION_AND_PROOF,
    "contribution_and_proof",
    ssz.altair.ContributionAndProof,
    (j, slot) => {
      obj(j.contribution).slot = String(slot);
    },
  ),
  simple(
    "VALIDATOR_REGISTRATION",
    DOMAIN_APPLICATION_BUILDER,
    "validator_registration",
    ssz.bellatrix.ValidatorRegistrationV1,
    () => {},
    { pinned: "builder" },
  ),
];

function expectedDomain(variant: Variant, messageSlot: number): Uint8Array {
  if (variant.pinned === "builder") {
    const forkDataRoot = ssz.phase0.ForkData.hashTreeRoot({
      currentVersion: config.GENESIS_FORK_VERSION,
      genesisValidatorsRoot: new Uint8Array(32),
    });
    const domain = new Uint8Array(32);
    domain.set(DOMAIN_APPLICATION_BUILDER, 0);
    domain.set(forkDataRoot.subarray(0, 28), 4);
    return domain;
  }
  // The state is at the message's slot: a client signs a message of the current epoch.
  if (variant.pinned === "exit") return config.getDomainForVoluntaryExit(messageSlot, messageSlot);
  return config.getDomain(messageSlot, variant.domainType, messageSlot);
}

function makeCase(
  variant: Variant,
  rng: Rng,
  slot: number,
  lodestarConvention: boolean,
): OracleCase {
  const built = variant.build(rng, slot);
  const domain = expectedDomain(variant, built.messageSlot);
  const signingRoot = toHex(
    ssz.phase0.SigningData.hashTreeRoot({ objectRoot: built.objectRoot, domain }),
  );
  const messageEpoch = epochOf(built.messageSlot);
  const forkInfo =
    variant.pinned === "builder"
      ? undefined
      : lodestarConvention
        ? messageEpochForkInfo(messageEpoch, variant.pinned === "exit")
        : activationForkInfo(messageEpoch);
  const convention =
    variant.pinned === "builder"
      ? ""
      : lodestarConvention
        ? ", message-epoch fork_info"
        : ", activation-epoch fork_info";
  return {
    name: `${variant.name} at slot ${slot} (epoch ${epochOf(slot)}${convention})`,
    body: { type: variant.type, ...(forkInfo ? { fork_info: forkInfo } : {}), ...built.fields },
    signingRoot,
    messageEpoch,
  };
}

/** Slots near every fork boundary of the devnet (one epoch either side), and later ones. */
function randomSlot(rng: Rng): number {
  const boundaries = config.forksAscendingEpochOrder.map((f) => f.epoch).filter(Number.isFinite);
  const epoch = rng.chance(0.2)
    ? rng.int(100_000)
    : Math.max(0, rng.pick(boundaries) + rng.pick([-1, 0, 0, 1, 2]));
  return epoch * SLOTS_PER_EPOCH + rng.int(SLOTS_PER_EPOCH);
}

const rng = new Rng(input.seed);
const random: OracleCase[] = [];
for (const variant of VARIANTS) {
  for (let i = 0; i < input.casesPerVariant; i++) {
    random.push(makeCase(variant, rng, randomSlot(rng), rng.chance(0.5)));
  }
}

// One message per variant, each in the epoch of its own fork (ATTESTATION, sync and the others:
// Altair's), then an attestation, an exit and a contribution in each later fork's epoch. Sorted by
// epoch, in the order slashing protection accepts: blocks at rising slots (at most two an epoch),
// attestations with rising source and target.
const forkEpoch = (fork: Fork) => config.forks[fork].epoch;
const forkOf = (variant: Variant) =>
  FORKS.find((f) => variant.name.includes(` ${f.toUpperCase()}`) || variant.name.endsWith(` ${f}`));
const blocksIn = new Map<number, number>();
function scenarioSlot(variant: Variant, epoch: number): number {
  if (variant.type !== "BLOCK_V2") return epoch * SLOTS_PER_EPOCH + rng.int(SLOTS_PER_EPOCH);
  const count = blocksIn.get(epoch) ?? 0;
  blocksIn.set(epoch, count + 1);
  return epoch * SLOTS_PER_EPOCH + count;
}
const scenario: OracleCase[] = [];
for (const variant of VARIANTS) {
  const epoch = forkEpoch(forkOf(variant) ?? "altair");
  scenario.push(makeCase(variant, rng, scenarioSlot(variant, epoch), scenario.length % 2 === 0));
}
const LATER = ["ATTESTATION", "VOLUNTARY_EXIT", "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF"];
for (const fork of FORKS.slice(2)) {
  for (const variant of VARIANTS.filter((v) => LATER.includes(v.name))) {
    const epoch = forkEpoch(fork);
    scenario.push(makeCase(variant, rng, scenarioSlot(variant, epoch), scenario.length % 2 === 0));
  }
}
scenario.sort((a, b) => a.messageEpoch - b.messageEpoch);

const contribution = ssz.altair.SyncCommitteeContribution as unknown as {
  fields: { aggregationBits: { lengthBits: number } };
};
const syncAggregate = ssz.altair.SyncAggregate as unknown as {
  fields: { syncCommitteeBits: { lengthBits: number } };
};
const electra = ssz.electra.Attestation as unknown as {
  fields: { committeeBits: { lengthBits: number }; aggregationBits: { limitBits: number } };
};
const output: OracleOutput = {
  facts: {
    activePreset: ACTIVE_PRESET,
    slotsPerEpoch: SLOTS_PER_EPOCH,
    contributionAggregationBits: contribution.fields.aggregationBits.lengthBits,
    syncCommitteeBits: syncAggregate.fields.syncCommitteeBits.lengthBits,
    electraCommitteeBits: electra.fields.committeeBits.lengthBits,
    electraAggregationBitsLimit: electra.fields.aggregationBits.limitBits,
  },
  spec: { data: { ...chainConfigToJson(config), ...presetToJson(activePreset) } },
  random,
  scenario,
};
process.stdout.write(JSON.stringify(output));
