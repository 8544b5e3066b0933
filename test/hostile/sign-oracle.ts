// An independent judge of eth2 sign request bodies, written from docs/signing.md and Lodestar's
// container definitions (ssz.gloas' progressive ones included), not from src/signing/: is a body
// signable, and over which signing root? Used by the sign-route fuzz test.
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
  readonly limitBytes?: number;
  readonly limitBits?: number;
  readonly lengthBits?: number;
  readonly elementType?: LodestarType;
  readonly activeFields?: unknown;
  fromJson(json: unknown): unknown;
  hashTreeRoot(value: unknown): Uint8Array;
}

const MAX_UINT64 = 2n ** 64n - 1n;
const MAINNET_DENEB_EPOCH = 269568n;
const MAINNET_CAPELLA_VERSION = "0x03000000";
const MAINNET_GENESIS_VERSION = "0x00000000";
/** Mainnet's Gloas fork version (not scheduled there yet: only fork_info can name it). */
const MAINNET_GLOAS_VERSION = "0x07000000";
const FORKS = ["PHASE0", "ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU", "GLOAS"];
const MAX_UINT256 = 2n ** 256n - 1n;
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

/** uint256: a decimal string of at most 78 digits up to 2^256-1, or a JSON integer up to 2^53-1. */
function uint256(v: unknown): bigint | undefined {
  if (typeof v === "string")
    return /^[0-9]{1,78}$/.test(v) && BigInt(v) <= MAX_UINT256 ? BigInt(v) : undefined;
  return uint64(v);
}

const isHex = (v: unknown, bytes: number): v is string =>
  typeof v === "string" && new RegExp(`^0x[0-9a-fA-F]{${2 * bytes}}$`).test(v);
const isWholeHex = (v: unknown): v is string =>
  typeof v === "string" && /^0x(?:[0-9a-fA-F]{2})*$/.test(v);

function bitlistProblem(json: unknown, limitBits: number, at: string): string | undefined {
  if (typeof json !== "string" || !/^0x(?:[0-9a-fA-F]{2})+$/.test(json)) return `${at}: bitlist`;
  const bytes = hexToBytes(json);
  const last = bytes[bytes.length - 1] ?? 0;
  if (last === 0) return `${at}: bitlist without its length bit`;
  const bits = 8 * (bytes.length - 1) + Math.floor(Math.log2(last));
  return bits <= limitBits ? undefined : `${at}: bitlist over its limit`;
}

/**
 * What is wrong with `json` as the beacon-API JSON of `type`, or undefined when nothing is.
 * Progressive lists (EIP-7916) have no limit of their own; a plain ByteList keeps its limit.
 */
function problem(type: LodestarType, json: unknown, at: string): string | undefined {
  switch (type.constructor.name) {
    case "ContainerType":
    case "ProgressiveContainerType": {
      if (!isObject(json)) return `${at}: not an object`;
      for (const { fieldType, jsonKey } of type.fieldsEntries ?? []) {
        const found = problem(fieldType, json[jsonKey], `${at}.${jsonKey}`);
        if (found) return found;
      }
      return undefined;
    }
    case "UintNumberType":
      return uint64(json) === undefined ? `${at}: not a uint64` : undefined;
    case "UintBigintType": {
      const value = type.byteLength === 32 ? uint256(json) : uint64(json);
      return value === undefined ? `${at}: not a uint of its size` : undefined;
    }
    case "BooleanType":
      return typeof json === "boolean" ? undefined : `${at}: not a boolean`;
    case "ByteVectorType":
    case "ExecutionAddressType":
      return isHex(json, type.lengthBytes ?? -1) ? undefined : `${at}: not hex of its length`;
    case "ByteListType":
      if (!isWholeHex(json)) return `${at}: not hex`;
      return (json.length - 2) / 2 <= (type.limitBytes ?? 0) ? undefined : `${at}: over its limit`;
    case "ProgressiveByteListType":
      return isWholeHex(json) ? undefined : `${at}: not hex`;
    case "BitVectorType":
      // 64 and 128 bits here: whole bytes, so every byte string of the length is a value.
      return isHex(json, Math.ceil((type.lengthBits ?? 0) / 8)) ? undefined : `${at}: bitvector`;
    case "BitListType":
    case "ProgressiveBitListType":
      return bitlistProblem(json, type.limitBits ?? 0, at);
    case "ProgressiveListCompositeType": {
      if (!Array.isArray(json)) return `${at}: not an array`;
      const element = type.elementType as LodestarType;
      for (const [i, item] of json.entries()) {
        const found = problem(element, item, `${at}[${i}]`);
        if (found) return found;
      }
      return undefined;
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
  const name = type.constructor.name;
  if (name === "UintNumberType") {
    return type.byteLength === 8 ? (ssz.UintBn64 as unknown as LodestarType) : type;
  }
  if (name === "ProgressiveListCompositeType") {
    // Without Lodestar's runtime limit: a progressive list's root has none (EIP-7916).
    const List = type.constructor as unknown as new (e: unknown) => LodestarType;
    return new List(bigintTwin(type.elementType as LodestarType));
  }
  if (name !== "ContainerType" && name !== "ProgressiveContainerType") return type;
  const fields = Object.fromEntries(
    (type.fieldsEntries ?? []).map((f) => [f.fieldName, bigintTwin(f.fieldType)]),
  );
  if (name === "ProgressiveContainerType") {
    const Container = type.constructor as unknown as new (
      f: unknown,
      a: unknown,
      o: unknown,
    ) => LodestarType;
    return new Container(fields, type.activeFields, type.opts);
  }
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
const aggregateGloas = container(ssz.gloas.AggregateAndProof, "0x06000000", aggregateSlot);

/**
 * `{version, data}`: the version's container. Bare (Lighthouse): phase0's without
 * `committee_bits`; with them, Gloas' progressive one when fork_info gives the network's Gloas
 * version for the aggregate's epoch (mainnet has not scheduled Gloas), Electra's otherwise.
 */
function aggregateAndProof(payload: unknown, fork?: ForkInfo): Message | string {
  if (!isObject(payload)) return "aggregate_and_proof: not an object";
  if (payload.version !== undefined) {
    const version = typeof payload.version === "string" ? payload.version.toUpperCase() : "";
    if (!FORKS.includes(version)) return "aggregate_and_proof.version";
    if (payload.data === undefined || payload.data === null)
      return "aggregate_and_proof.data: missing";
    if (version === "GLOAS") return aggregateGloas(payload.data);
    const electra = version === "ELECTRA" || version === "FULU";
    return (electra ? aggregateElectra : aggregatePhase0)(payload.data);
  }
  const aggregate = payload.aggregate;
  if (!isObject(aggregate) || aggregate.committee_bits === undefined)
    return aggregatePhase0(payload);
  const slot = isObject(aggregate.data) ? uint64(aggregate.data.slot) : undefined;
  if (slot === undefined || !fork) return aggregateElectra(payload);
  const gloas = forkVersion(slot / 32n, fork).toLowerCase() === MAINNET_GLOAS_VERSION;
  return (gloas ? aggregateGloas : aggregateElectra)(payload);
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

/**
 * A Gloas object type: `{version: "GLOAS", data}` (remote-signing-api v1.4.0) or the object itself
 * (bare: Lighthouse, Lodestar before #10071), told apart by `version`.
 */
function gloasObject(lodestar: unknown, domainType: string, slotOf: (value: Json) => unknown) {
  // `slotOf` reads Lodestar's value, whose field names are camelCase (payload.slotNumber).
  const read = container(lodestar, domainType, (v) => (slotOf(v) as bigint) / 32n);
  return (payload: unknown): Message | string => {
    if (!isObject(payload)) return "payload: not an object";
    if (payload.version === undefined) return read(payload);
    if (typeof payload.version !== "string" || payload.version.toUpperCase() !== "GLOAS")
      return "payload.version: only GLOAS";
    if (payload.data === undefined || payload.data === null) return "payload.data: missing";
    return read(payload.data);
  };
}

const PTC_KEYS = ["payload_attestation_message", "payload_attestation_data", "payload_attestation"];
const AUTH_KEYS = ["builder_request_auth", "request_auth"];
const payloadAttestation = {
  operation: "PAYLOAD_ATTESTATION_MESSAGE",
  keys: PTC_KEYS,
  read: gloasObject(ssz.gloas.PayloadAttestationData, "0x0C000000", (v) => v.slot),
};
const readRequestAuth = gloasObject(ssz.gloas.BuilderRequestAuth, "0x0B000001", (v) => v.slot);
const requestAuth = {
  operation: "BUILDER_REQUEST_AUTH",
  keys: AUTH_KEYS,
  genesis: true,
  // builder-specs: a zero-length `data` is invalid.
  read: (payload: unknown): Message | string => {
    const auth = isObject(payload) && payload.version !== undefined ? payload.data : payload;
    if (isObject(auth) && auth.data === "0x") return "request auth data: empty";
    return readRequestAuth(payload);
  },
};

/** Request type (upper case) → payload key and how to read the payload. */
const TYPES: Record<
  string,
  {
    operation: string;
    /** The body keys the payload is read from: the first one present counts. */
    keys: readonly string[];
    /** Signed over the genesis fork version and a zero root, without fork_info. */
    genesis?: boolean;
    read(p: unknown, fork?: ForkInfo): Message | string;
  }
> = {
  AGGREGATION_SLOT: {
    operation: "AGGREGATION_SLOT",
    keys: ["aggregation_slot"],
    read: (p) => {
      const slot = isObject(p) ? uint64(p.slot) : undefined;
      if (slot === undefined) return "aggregation_slot.slot";
      return { objectRoot: uintRoot(slot), epoch: slot / 32n, domainType: "0x05000000" };
    },
  },
  AGGREGATE_AND_PROOF: {
    operation: "AGGREGATE_AND_PROOF",
    keys: ["aggregate_and_proof"],
    read: aggregateAndProof,
  },
  AGGREGATE_AND_PROOF_V2: {
    operation: "AGGREGATE_AND_PROOF",
    keys: ["aggregate_and_proof"],
    read: aggregateAndProof,
  },
  ATTESTATION: {
    operation: "ATTESTATION",
    keys: ["attestation"],
    read: (p) => {
      const message = attestationData(p);
      if (typeof message === "string") return message;
      const data = p as { source: { epoch: unknown }; target: { epoch: unknown } };
      const source = uint64(data.source.epoch) ?? 0n;
      return { ...message, slashable: { kind: "attestation", source, target: message.epoch } };
    },
  },
  BLOCK_V2: { operation: "BLOCK_V2", keys: ["beacon_block"], read: beaconBlock },
  BLOCK: {
    operation: "BLOCK_V2",
    keys: ["block"],
    read: () => {
      throw notJudged();
    },
  },
  RANDAO_REVEAL: {
    operation: "RANDAO_REVEAL",
    keys: ["randao_reveal"],
    read: (p) => {
      const epoch = isObject(p) ? uint64(p.epoch) : undefined;
      if (epoch === undefined) return "randao_reveal.epoch";
      return { objectRoot: uintRoot(epoch), epoch, domainType: "0x02000000" };
    },
  },
  VOLUNTARY_EXIT: {
    operation: "VOLUNTARY_EXIT",
    keys: ["voluntary_exit"],
    read: container(ssz.phase0.VoluntaryExit, "0x04000000", (v) => v.epoch as bigint),
  },
  SYNC_COMMITTEE_MESSAGE: {
    operation: "SYNC_COMMITTEE_MESSAGE",
    keys: ["sync_committee_message"],
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
    keys: ["sync_aggregator_selection_data"],
    read: container(ssz.altair.SyncAggregatorSelectionData, "0x08000000", bySlot),
  },
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: {
    operation: "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    keys: ["contribution_and_proof"],
    read: container(ssz.altair.ContributionAndProof, "0x09000000", (v) =>
      bySlot(v.contribution as Json),
    ),
  },
  VALIDATOR_REGISTRATION: {
    operation: "VALIDATOR_REGISTRATION",
    keys: ["validator_registration"],
    genesis: true,
    read: container(ssz.bellatrix.ValidatorRegistrationV1, "0x00000001", () => 0n),
  },
  PAYLOAD_ATTESTATION_MESSAGE: payloadAttestation,
  PAYLOAD_ATTESTATION: payloadAttestation,
  EXECUTION_PAYLOAD_ENVELOPE: {
    operation: "EXECUTION_PAYLOAD_ENVELOPE",
    keys: ["execution_payload_envelope"],
    read: gloasObject(
      ssz.gloas.ExecutionPayloadEnvelope,
      "0x0B000000",
      (v) => (v.payload as Json).slotNumber,
    ),
  },
  PROPOSER_PREFERENCES: {
    operation: "PROPOSER_PREFERENCES",
    keys: ["proposer_preferences"],
    read: gloasObject(ssz.gloas.ProposerPreferences, "0x0D000000", (v) => v.proposalSlot),
  },
  EXECUTION_PAYLOAD_BID: {
    operation: "EXECUTION_PAYLOAD_BID",
    keys: ["execution_payload_bid"],
    read: gloasObject(ssz.gloas.ExecutionPayloadBid, "0x0B000000", (v) => v.slot),
  },
  BUILDER_REQUEST_AUTH: requestAuth,
  REQUEST_AUTH: requestAuth,
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

/** get_domain's version choice: previous before fork.epoch, current from it. */
const forkVersion = (epoch: bigint, f: ForkInfo) => (epoch < f.epoch ? f.previous : f.current);

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
  const key = spec.keys.find((k) => body[k] !== undefined && body[k] !== null);
  if (key === undefined) return no(`${spec.keys[0]}: missing`);
  const payload = body[key];
  const fork = spec.genesis ? undefined : forkInfo(body.fork_info);
  if (typeof fork === "string") return no(fork);
  const message = spec.read(payload, fork);
  if (typeof message === "string") return no(message);
  let domain: Uint8Array;
  if (!fork) domain = oracleDomain(message.domainType, MAINNET_GENESIS_VERSION, ZERO_ROOT);
  else if (spec.operation === "VOLUNTARY_EXIT") {
    // EIP-7044: from Deneb on, every exit is signed over the Capella fork version.
    const latest = message.epoch > fork.epoch ? message.epoch : fork.epoch;
    const exitVersion =
      latest >= MAINNET_DENEB_EPOCH ? MAINNET_CAPELLA_VERSION : forkVersion(message.epoch, fork);
    domain = oracleDomain(message.domainType, exitVersion, fork.gvr);
  } else domain = oracleDomain(message.domainType, forkVersion(message.epoch, fork), fork.gvr);
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
