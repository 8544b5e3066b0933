// An independent judge of eth2 sign request bodies, written from docs/signing.md and Lodestar's
// container definitions (its own @chainsafe/ssz copy), not from src/signing/: is a body signable,
// and over which signing root? Used by the sign-route fuzz test.
import { ssz } from "@lodestar/types";
import { hexToBytes, oracleDomain, oracleSigningRoot } from "../support/oracle";

export type Slashable =
  | { readonly kind: "attestation"; readonly source: bigint; readonly target: bigint }
  | { readonly kind: "block"; readonly slot: bigint };

export type Verdict =
  | { readonly ok: false; readonly why: string }
  | {
      readonly ok: true;
      readonly operation: string;
      readonly root: Uint8Array;
      readonly gvr?: string;
      readonly slashable?: Slashable;
    };

/** Just the parts of Lodestar's SSZ types the judge walks. */
interface LodestarType {
  readonly constructor: { readonly name: string };
  readonly fieldsEntries?: readonly {
    fieldName: string;
    fieldType: LodestarType;
    jsonKey: string;
  }[];
  readonly opts?: unknown;
  readonly byteLength?: number;
  readonly lengthBytes?: number;
  readonly limitBits?: number;
  readonly lengthBits?: number;
  fromJson(json: unknown): unknown;
  hashTreeRoot(value: unknown): Uint8Array;
}

const MAX_UINT64 = 2n ** 64n - 1n;
const MAINNET_DENEB_EPOCH = 269568n;
const MAINNET_CAPELLA_VERSION = "0x03000000";
const MAINNET_GENESIS_VERSION = "0x00000000";
const FORKS = ["PHASE0", "ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"];
const ZERO_ROOT = `0x${"00".repeat(32)}`;

type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** uint64: a decimal string of at most 20 digits up to 2^64-1, or a JSON integer up to 2^53-1. */
export function uint64(v: unknown): bigint | undefined {
  if (typeof v === "string")
    return /^[0-9]{1,20}$/.test(v) && BigInt(v) <= MAX_UINT64 ? BigInt(v) : undefined;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return undefined;
}

const isHex = (v: unknown, bytes: number): v is string =>
  typeof v === "string" && new RegExp(`^0x[0-9a-fA-F]{${2 * bytes}}$`).test(v);

/** What is wrong with `json` as the beacon-API JSON of `type`, or undefined when nothing is. */
function problem(type: LodestarType, json: unknown, at: string): string | undefined {
  switch (type.constructor.name) {
    case "ContainerType": {
      if (!isObject(json)) return `${at}: not an object`;
      for (const { fieldType, jsonKey } of type.fieldsEntries ?? []) {
        const found = problem(fieldType, json[jsonKey], `${at}.${jsonKey}`);
        if (found) return found;
      }
      return undefined;
    }
    case "UintNumberType":
    case "UintBigintType":
      return uint64(json) === undefined ? `${at}: not a uint64` : undefined;
    case "ByteVectorType":
    case "ExecutionAddressType":
      return isHex(json, type.lengthBytes ?? -1) ? undefined : `${at}: not hex of its length`;
    case "BitVectorType":
      // 64 and 128 bits here: whole bytes, so every byte string of the length is a value.
      return isHex(json, Math.ceil((type.lengthBits ?? 0) / 8)) ? undefined : `${at}: bitvector`;
    case "BitListType": {
      if (typeof json !== "string" || !/^0x(?:[0-9a-fA-F]{2})+$/.test(json))
        return `${at}: bitlist`;
      const bytes = hexToBytes(json);
      const last = bytes[bytes.length - 1] ?? 0;
      if (last === 0) return `${at}: bitlist without its length bit`;
      const bits = 8 * (bytes.length - 1) + Math.floor(Math.log2(last));
      return bits <= (type.limitBits ?? 0) ? undefined : `${at}: bitlist over its limit`;
    }
    default:
      throw new Error(`the oracle does not know ${type.constructor.name}`);
  }
}

/**
 * Lodestar's container with its 8-byte number fields as bigints (ssz.UintBn64): the same tree
 * root, without losing precision above 2^53.
 */
function bigintTwin(type: LodestarType): LodestarType {
  if (type.constructor.name !== "ContainerType") {
    const isUint64 = type.constructor.name === "UintNumberType" && type.byteLength === 8;
    return isUint64 ? (ssz.UintBn64 as unknown as LodestarType) : type;
  }
  const fields = Object.fromEntries(
    (type.fieldsEntries ?? []).map((f) => [f.fieldName, bigintTwin(f.fieldType)]),
  );
  const Container = type.constructor as unknown as new (f: unknown, o: unknown) => LodestarType;
  return new Container(fields, type.opts);
}

interface Message {
  objectRoot: Uint8Array;
  /** The epoch that picks the fork version. */
  epoch: bigint;
  domainType: string;
  slashable?: Slashable;
}

function container(lodestar: unknown, domainType: string, epochOf: (v: Json) => bigint) {
  const type = bigintTwin(lodestar as LodestarType);
  return (payload: unknown): Message | string => {
    const wrong = problem(type, payload, "payload");
    if (wrong) return wrong;
    const value = type.fromJson(payload) as Json;
    return { objectRoot: type.hashTreeRoot(value), epoch: epochOf(value), domainType };
  };
}

const bySlot = (v: Json) => (v.slot as bigint) / 32n;
const uintRoot = (n: bigint) => ssz.UintBn64.hashTreeRoot(n);

const attestationData = container(ssz.phase0.AttestationData, "0x01000000", (v) => {
  return (v.target as Json).epoch as bigint;
});
const header = container(ssz.phase0.BeaconBlockHeader, "0x00000000", bySlot);
const aggregateSlot = (v: Json) => bySlot((v.aggregate as Json).data as Json);
const aggregatePhase0 = container(ssz.phase0.AggregateAndProof, "0x06000000", aggregateSlot);
const aggregateElectra = container(ssz.electra.AggregateAndProof, "0x06000000", aggregateSlot);

function aggregateAndProof(payload: unknown): Message | string {
  if (!isObject(payload)) return "aggregate_and_proof: not an object";
  if (payload.version !== undefined) {
    const version = typeof payload.version === "string" ? payload.version.toUpperCase() : "";
    if (!FORKS.includes(version)) return "aggregate_and_proof.version";
    if (payload.data === undefined) return "aggregate_and_proof.data: missing";
    const electra = version === "ELECTRA" || version === "FULU";
    return (electra ? aggregateElectra : aggregatePhase0)(payload.data);
  }
  const aggregate = payload.aggregate;
  const electra = isObject(aggregate) && aggregate.committee_bits !== undefined;
  return (electra ? aggregateElectra : aggregatePhase0)(payload);
}

function beaconBlock(payload: unknown): Message | string {
  if (!isObject(payload)) return "beacon_block: not an object";
  const version = typeof payload.version === "string" ? payload.version.toUpperCase() : "";
  if (!FORKS.includes(version)) return "beacon_block.version";
  if (payload.block_header === undefined) {
    // A full block (PHASE0, ALTAIR) would be signable; the fuzz test never sends one.
    if (payload.block !== undefined && ["PHASE0", "ALTAIR"].includes(version)) throw notJudged();
    return "beacon_block.block_header: missing";
  }
  const message = header(payload.block_header);
  if (typeof message === "string") return message;
  const slot = uint64((payload.block_header as Json).slot) ?? 0n;
  return { ...message, slashable: { kind: "block", slot } };
}

/** Request type (upper case) → payload key and how to read the payload. */
const TYPES: Record<
  string,
  { operation: string; key: string; read(p: unknown): Message | string }
> = {
  AGGREGATION_SLOT: {
    operation: "AGGREGATION_SLOT",
    key: "aggregation_slot",
    read: (p) => {
      const slot = isObject(p) ? uint64(p.slot) : undefined;
      if (slot === undefined) return "aggregation_slot.slot";
      return { objectRoot: uintRoot(slot), epoch: slot / 32n, domainType: "0x05000000" };
    },
  },
  AGGREGATE_AND_PROOF: {
    operation: "AGGREGATE_AND_PROOF",
    key: "aggregate_and_proof",
    read: aggregateAndProof,
  },
  AGGREGATE_AND_PROOF_V2: {
    operation: "AGGREGATE_AND_PROOF",
    key: "aggregate_and_proof",
    read: aggregateAndProof,
  },
  ATTESTATION: {
    operation: "ATTESTATION",
    key: "attestation",
    read: (p) => {
      const message = attestationData(p);
      if (typeof message === "string") return message;
      const data = p as { source: { epoch: unknown }; target: { epoch: unknown } };
      const source = uint64(data.source.epoch) ?? 0n;
      return { ...message, slashable: { kind: "attestation", source, target: message.epoch } };
    },
  },
  BLOCK_V2: { operation: "BLOCK_V2", key: "beacon_block", read: beaconBlock },
  BLOCK: {
    operation: "BLOCK_V2",
    key: "block",
    read: () => {
      throw notJudged();
    },
  },
  RANDAO_REVEAL: {
    operation: "RANDAO_REVEAL",
    key: "randao_reveal",
    read: (p) => {
      const epoch = isObject(p) ? uint64(p.epoch) : undefined;
      if (epoch === undefined) return "randao_reveal.epoch";
      return { objectRoot: uintRoot(epoch), epoch, domainType: "0x02000000" };
    },
  },
  VOLUNTARY_EXIT: {
    operation: "VOLUNTARY_EXIT",
    key: "voluntary_exit",
    read: container(ssz.phase0.VoluntaryExit, "0x04000000", (v) => v.epoch as bigint),
  },
  SYNC_COMMITTEE_MESSAGE: {
    operation: "SYNC_COMMITTEE_MESSAGE",
    key: "sync_committee_message",
    read: (p) => {
      const slot = isObject(p) ? uint64(p.slot) : undefined;
      if (slot === undefined || !isObject(p) || !isHex(p.beacon_block_root, 32))
        return "sync_committee_message";
      const objectRoot = ssz.Root.hashTreeRoot(hexToBytes(p.beacon_block_root));
      return { objectRoot, epoch: slot / 32n, domainType: "0x07000000" };
    },
  },
  SYNC_COMMITTEE_SELECTION_PROOF: {
    operation: "SYNC_COMMITTEE_SELECTION_PROOF",
    key: "sync_aggregator_selection_data",
    read: container(ssz.altair.SyncAggregatorSelectionData, "0x08000000", bySlot),
  },
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: {
    operation: "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    key: "contribution_and_proof",
    read: container(ssz.altair.ContributionAndProof, "0x09000000", (v) =>
      bySlot(v.contribution as Json),
    ),
  },
  VALIDATOR_REGISTRATION: {
    operation: "VALIDATOR_REGISTRATION",
    key: "validator_registration",
    read: container(ssz.bellatrix.ValidatorRegistrationV1, "0x00000001", () => 0n),
  },
};

/** A signable shape this judge does not model (full blocks): a test that sends one is wrong. */
const notJudged = () => new Error("the oracle does not judge full blocks");

interface ForkInfo {
  previous: string;
  current: string;
  epoch: bigint;
  gvr: string;
}

function forkInfo(value: unknown): ForkInfo | string {
  if (!isObject(value) || !isObject(value.fork)) return "fork_info";
  const { previous_version, current_version, epoch } = value.fork;
  const forkEpoch = uint64(epoch);
  if (!isHex(previous_version, 4) || !isHex(current_version, 4) || forkEpoch === undefined)
    return "fork_info.fork";
  if (!isHex(value.genesis_validators_root, 32)) return "fork_info.genesis_validators_root";
  const gvr = value.genesis_validators_root;
  return { previous: previous_version, current: current_version, epoch: forkEpoch, gvr };
}

const no = (why: string): Verdict => ({ ok: false, why });

/** The verdict on a parsed request body, for the mainnet preset and network. */
export function judgeSignRequest(body: unknown): Verdict {
  if (!isObject(body)) return no("body: not an object");
  if (typeof body.type !== "string") return no("type: not a string");
  const spec = TYPES[body.type.toUpperCase()];
  if (!spec) return no(`type ${body.type}: not supported`);
  const supplied = ["signingRoot", "signing_root"]
    .map((key) => body[key])
    .filter((root) => root !== undefined && root !== null);
  if (!supplied.every((root) => isHex(root, 32))) return no("signing root: not hex of 32 bytes");
  const payload = body[spec.key];
  if (payload === undefined || payload === null) return no(`${spec.key}: missing`);
  const registration = spec.operation === "VALIDATOR_REGISTRATION";
  const fork = registration ? undefined : forkInfo(body.fork_info);
  if (typeof fork === "string") return no(fork);
  const message = spec.read(payload);
  if (typeof message === "string") return no(message);
  const version = (epoch: bigint, f: ForkInfo) => (epoch < f.epoch ? f.previous : f.current);
  let domain: Uint8Array;
  if (!fork) domain = oracleDomain(message.domainType, MAINNET_GENESIS_VERSION, ZERO_ROOT);
  else if (spec.operation === "VOLUNTARY_EXIT") {
    // EIP-7044: from Deneb on, every exit is signed over the Capella fork version.
    const latest = message.epoch > fork.epoch ? message.epoch : fork.epoch;
    const exitVersion =
      latest >= MAINNET_DENEB_EPOCH ? MAINNET_CAPELLA_VERSION : version(message.epoch, fork);
    domain = oracleDomain(message.domainType, exitVersion, fork.gvr);
  } else domain = oracleDomain(message.domainType, version(message.epoch, fork), fork.gvr);
  const root = oracleSigningRoot(message.objectRoot, domain);
  const hex = Buffer.from(root).toString("hex");
  if (!supplied.every((r) => (r as string).slice(2).toLowerCase() === hex))
    return no("signing root: does not match");
  return {
    ok: true,
    operation: spec.operation,
    root,
    ...(fork ? { gvr: fork.gvr.toLowerCase() } : {}),
    ...(message.slashable ? { slashable: message.slashable } : {}),
  };
}
