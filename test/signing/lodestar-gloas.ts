/**
 * The Gloas oracle: Lodestar's own ssz.gloas containers, config and domain logic, on a devnet
 * whose config.yaml schedules Gloas, with the preset its environment chose (LODESTAR_PRESET:
 * Lodestar fixes it per process, so `gloasOracle` in gloas-oracle.ts starts this as a child
 * process once per preset).
 *
 * Input (argv[2], JSON): the config.yaml path, the genesis validators root, a seed and a count.
 * Output (stdout, JSON): the preset Lodestar runs, and sign requests of every Gloas type, shape
 * and alias (and the Gloas forms of BLOCK_V2, AGGREGATE_AND_PROOF and ATTESTATION) with the
 * signing root Lodestar computes for each, at slots around the Gloas fork and after it.
 */
import { readFileSync } from "node:fs";
import { chainConfigFromJson, createBeaconConfig } from "@lodestar/config";
import {
  ACTIVE_PRESET,
  DOMAIN_AGGREGATE_AND_PROOF,
  DOMAIN_BEACON_ATTESTER,
  DOMAIN_BEACON_BUILDER,
  DOMAIN_BEACON_PROPOSER,
  DOMAIN_BUILDER_REQUEST_AUTH,
  DOMAIN_PROPOSER_PREFERENCES,
  DOMAIN_PTC_ATTESTER,
  PTC_SIZE,
  SLOTS_PER_EPOCH,
} from "@lodestar/params";
import { ssz, sszTypesFor } from "@lodestar/types";
import { parse as parseYaml } from "yaml";
import { forkInfoJson, fromHex, lodestarDomain, toHex } from "./lodestar";
import { type Json, obj, oracle, type RandomRules, Rng, randomPayload } from "./random-ssz";

export interface GloasOracleInput {
  readonly configPath: string;
  readonly genesisValidatorsRoot: string;
  readonly seed: number;
  readonly casesPerVariant: number;
}

export interface GloasCase {
  /** The variant (type, shape, alias), then the slot and the fork_info convention. */
  readonly variant: string;
  readonly name: string;
  readonly body: Record<string, unknown>;
  readonly signingRoot: string;
  /** Whether slashing protection records it (BLOCK_V2, ATTESTATION). */
  readonly slashable: boolean;
  readonly slot: number;
}

export interface GloasOracleOutput {
  readonly facts: {
    readonly activePreset: string;
    readonly slotsPerEpoch: number;
    readonly ptcSize: number;
  };
  readonly cases: readonly GloasCase[];
}

const U64_MAX = 2n ** 64n - 1n;

// uint64 of Lodestar's bigint fields reach 2^64-1; its number fields stay within 2^53-1.
const RULES: RandomRules = {
  uint(rng, kind, byteLength) {
    if (kind === "UintBigintType") return rng.uint(8 * byteLength).toString();
    const value = rng.uint(Math.min(8 * byteLength, 53));
    const safe = BigInt(Number.MAX_SAFE_INTEGER);
    return (value > safe ? safe : value).toString();
  },
  bitlistLength: (rng, limitBits) => rng.int(Math.min(limitBits, rng.chance(0.2) ? 3000 : 200) + 1),
  maxListElements: 2,
};

const input = JSON.parse(process.argv[2] ?? "{}") as GloasOracleInput;
const specJson = parseYaml(readFileSync(input.configPath, "utf8"), { schema: "failsafe" }) as Json;
const config = createBeaconConfig(
  chainConfigFromJson(specJson),
  fromHex(input.genesisValidatorsRoot),
);
const gloasEpoch = config.forks.gloas.epoch;
const epochOf = (slot: number) => Math.floor(slot / SLOTS_PER_EPOCH);

type ForkInfoJson = ReturnType<typeof forkInfoJson>;

/** Lighthouse, Teku, Prysm, Nimbus: the fork at the slot with its activation epoch; Lodestar: with the message's epoch. */
function forkInfoAt(slot: number, lodestarConvention: boolean): ForkInfoJson {
  const fork = config.getForkInfo(slot);
  return forkInfoJson(
    fork.prevVersion,
    fork.version,
    lodestarConvention ? epochOf(slot) : fork.epoch,
    input.genesisValidatorsRoot,
  );
}

interface Built {
  readonly payload: unknown;
  readonly objectRoot: Uint8Array;
}

interface Variant {
  readonly name: string;
  readonly type: string;
  readonly payloadKey: string;
  readonly domainType: Uint8Array;
  /** Signed over the genesis domain, without fork_info (BUILDER_REQUEST_AUTH). */
  readonly genesisDomain?: boolean;
  /** Sends a fork_info even for a genesis-domain type (Lighthouse may): it must change nothing. */
  readonly extraForkInfo?: boolean;
  readonly slashable?: boolean;
  build(rng: Rng, slot: number): Built;
}

/** A Gloas object of `type` (Lodestar's), its slot set by `place`, sent wrapped or bare. */
function objectVariant(
  name: string,
  type: string,
  payloadKey: string,
  sszType: unknown,
  domainType: Uint8Array,
  wrapped: boolean,
  place: (json: Json, slot: number, rng: Rng) => void,
  options: { genesisDomain?: boolean; extraForkInfo?: boolean } = {},
): Variant {
  return {
    name,
    type,
    payloadKey,
    domainType,
    ...options,
    build(rng, slot) {
      const data = randomPayload(sszType, rng, RULES, (j) => place(j, slot, rng));
      const objectRoot = oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(data));
      return {
        payload: wrapped ? { version: rng.pick(["GLOAS", "gloas"]), data } : data,
        objectRoot,
      };
    },
  };
}

const setSlot = (key: string) => (json: Json, slot: number) => {
  json[key] = String(slot);
};

/** A self-built envelope (builder_index 2^64-1, the proposer's key) one time in three. */
function placeEnvelope(json: Json, slot: number, rng: Rng): void {
  obj(json.payload).slot_number = String(slot);
  if (rng.chance(0.33)) json.builder_index = U64_MAX.toString();
}

/** Request auth: builder-specs calls an empty `data` invalid, so a random one gets a byte. */
function placeRequestAuth(json: Json, slot: number, rng: Rng): void {
  json.slot = String(slot);
  if (json.data === "0x") json.data = `0x${rng.int(256).toString(16).padStart(2, "0")}`;
}

/** Each request type name with each payload key a client sends it under (the first is v1.4.0's). */
const OBJECT_NAMES: readonly {
  readonly type: string;
  readonly key: string;
  readonly sender: string;
  readonly sszType: unknown;
  readonly domainType: Uint8Array;
  readonly place: (json: Json, slot: number, rng: Rng) => void;
  readonly genesisDomain?: boolean;
}[] = [
  {
    type: "PAYLOAD_ATTESTATION_MESSAGE",
    key: "payload_attestation_message",
    sender: "v1.4.0",
    sszType: ssz.gloas.PayloadAttestationData,
    domainType: DOMAIN_PTC_ATTESTER,
    place: setSlot("slot"),
  },
  {
    type: "PAYLOAD_ATTESTATION",
    key: "payload_attestation_data",
    sender: "Lighthouse",
    sszType: ssz.gloas.PayloadAttestationData,
    domainType: DOMAIN_PTC_ATTESTER,
    place: setSlot("slot"),
  },
  {
    type: "PAYLOAD_ATTESTATION",
    key: "payload_attestation",
    sender: "Lodestar before #10071",
    sszType: ssz.gloas.PayloadAttestationData,
    domainType: DOMAIN_PTC_ATTESTER,
    place: setSlot("slot"),
  },
  {
    type: "EXECUTION_PAYLOAD_ENVELOPE",
    key: "execution_payload_envelope",
    sender: "v1.4.0",
    sszType: ssz.gloas.ExecutionPayloadEnvelope,
    domainType: DOMAIN_BEACON_BUILDER,
    place: placeEnvelope,
  },
  {
    type: "PROPOSER_PREFERENCES",
    key: "proposer_preferences",
    sender: "v1.4.0",
    sszType: ssz.gloas.ProposerPreferences,
    domainType: DOMAIN_PROPOSER_PREFERENCES,
    place: setSlot("proposal_slot"),
  },
  {
    type: "EXECUTION_PAYLOAD_BID",
    key: "execution_payload_bid",
    sender: "v1.4.0",
    sszType: ssz.gloas.ExecutionPayloadBid,
    domainType: DOMAIN_BEACON_BUILDER,
    place: setSlot("slot"),
  },
  {
    type: "BUILDER_REQUEST_AUTH",
    key: "builder_request_auth",
    sender: "v1.4.0",
    sszType: ssz.gloas.BuilderRequestAuth,
    domainType: DOMAIN_BUILDER_REQUEST_AUTH,
    place: placeRequestAuth,
    genesisDomain: true,
  },
  {
    type: "REQUEST_AUTH",
    key: "request_auth",
    sender: "Lighthouse",
    sszType: ssz.gloas.BuilderRequestAuth,
    domainType: DOMAIN_BUILDER_REQUEST_AUTH,
    place: placeRequestAuth,
    genesisDomain: true,
  },
];

/** A Gloas aggregate under either type name, wrapped (its version GLOAS) or bare. */
function aggregateVariant(type: string, wrapped: boolean): Variant {
  return {
    name: `${type} ${wrapped ? "wrapped GLOAS" : "bare (fork at its slot)"}`,
    type,
    payloadKey: "aggregate_and_proof",
    domainType: DOMAIN_AGGREGATE_AND_PROOF,
    build(rng, slot) {
      // Bare (Lighthouse, in every fork): the container is the fork's at the aggregate's slot.
      const sszType = wrapped
        ? ssz.gloas.AggregateAndProof
        : sszTypesFor(config.getForkName(slot)).AggregateAndProof;
      const data = randomPayload(sszType, rng, RULES, (j) => {
        obj(obj(j.aggregate).data).slot = String(slot);
      });
      const objectRoot = oracle(sszType).hashTreeRoot(oracle(sszType).fromJson(data));
      return { payload: wrapped ? { version: "GLOAS", data } : data, objectRoot };
    },
  };
}

function gloasVariants(): Variant[] {
  const variants: Variant[] = [];
  for (const name of OBJECT_NAMES) {
    for (const wrapped of [true, false]) {
      variants.push(
        objectVariant(
          `${name.type} / ${name.key} ${wrapped ? "wrapped" : "bare"} (${name.sender})`,
          name.type,
          name.key,
          name.sszType,
          name.domainType,
          wrapped,
          name.place,
          // Lighthouse may send fork_info with request auth: it must change nothing.
          name.genesisDomain ? { genesisDomain: true, extraForkInfo: !wrapped } : {},
        ),
      );
    }
  }
  for (const type of ["AGGREGATE_AND_PROOF_V2", "AGGREGATE_AND_PROOF"]) {
    for (const wrapped of [true, false]) variants.push(aggregateVariant(type, wrapped));
  }
  variants.push(
    {
      name: "BLOCK_V2 GLOAS block_header",
      type: "BLOCK_V2",
      payloadKey: "beacon_block",
      domainType: DOMAIN_BEACON_PROPOSER,
      slashable: true,
      build(rng, slot) {
        const json = randomPayload(ssz.gloas.BeaconBlock, rng, RULES, (j) => {
          j.slot = String(slot);
        });
        const block = ssz.gloas.BeaconBlock.fromJson(json);
        const header = {
          slot: json.slot,
          proposer_index: json.proposer_index,
          parent_root: json.parent_root,
          state_root: json.state_root,
          body_root: toHex(ssz.gloas.BeaconBlockBody.hashTreeRoot(block.body)),
        };
        return {
          payload: { version: "GLOAS", block_header: header },
          objectRoot: ssz.gloas.BeaconBlock.hashTreeRoot(block),
        };
      },
    },
    {
      name: "ATTESTATION (index 0 or 1)",
      type: "ATTESTATION",
      payloadKey: "attestation",
      domainType: DOMAIN_BEACON_ATTESTER,
      slashable: true,
      build(rng, slot) {
        const type = ssz.phase0.AttestationData;
        const json = randomPayload(type, rng, RULES, (j) => {
          j.slot = String(slot);
          j.index = String(rng.int(2));
          obj(j.target).epoch = String(epochOf(slot));
          obj(j.source).epoch = String(Math.max(0, epochOf(slot) - 1));
        });
        return { payload: json, objectRoot: type.hashTreeRoot(type.fromJson(json)) };
      },
    },
  );
  return variants;
}

function expectedDomain(variant: Variant, slot: number): Uint8Array {
  if (variant.genesisDomain) {
    return lodestarDomain(variant.domainType, config.GENESIS_FORK_VERSION, new Uint8Array(32));
  }
  // ATTESTATION: get_domain at target.epoch, which is the slot's epoch here.
  return config.getDomain(slot, variant.domainType, slot);
}

/** Around the Gloas fork (an epoch before it: preferences are sent then), or well after. */
function randomSlot(rng: Rng): number {
  const epoch = rng.chance(0.25)
    ? gloasEpoch + rng.int(50_000)
    : Math.max(0, gloasEpoch + rng.pick([-1, 0, 0, 1, 2]));
  return epoch * SLOTS_PER_EPOCH + rng.int(SLOTS_PER_EPOCH);
}

const rng = new Rng(input.seed);
const cases: GloasCase[] = [];
for (const variant of gloasVariants()) {
  for (let i = 0; i < input.casesPerVariant; i++) {
    const slot = randomSlot(rng);
    const built = variant.build(rng, slot);
    const root = ssz.phase0.SigningData.hashTreeRoot({
      objectRoot: built.objectRoot,
      domain: expectedDomain(variant, slot),
    });
    const lodestarConvention = rng.chance(0.5);
    const withForkInfo = !variant.genesisDomain || (variant.extraForkInfo && rng.chance(0.5));
    const body: Json = {
      type: variant.type,
      ...(withForkInfo ? { fork_info: forkInfoAt(slot, lodestarConvention) } : {}),
      [variant.payloadKey]: built.payload,
    };
    const convention = withForkInfo
      ? lodestarConvention
        ? "message-epoch"
        : "activation-epoch"
      : "no";
    cases.push({
      variant: variant.name,
      name: `${variant.name} at slot ${slot} (epoch ${epochOf(slot)}, Gloas at ${gloasEpoch}), ${convention} fork_info`,
      body,
      signingRoot: toHex(root),
      slashable: variant.slashable === true,
      slot,
    });
  }
}

const output: GloasOracleOutput = {
  facts: { activePreset: ACTIVE_PRESET, slotsPerEpoch: SLOTS_PER_EPOCH, ptcSize: PTC_SIZE },
  cases,
};
process.stdout.write(JSON.stringify(output));
