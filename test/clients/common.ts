/**
 * Shared parts of the client compatibility suite: the duties a validator signs (built with
 * Lodestar's SSZ types, independently of sigil), the mainnet fork schedule, the two `fork_info`
 * conventions, the expected signing root (Lodestar's `getDomain` + `SigningData`), raw HTTP with
 * exactly the headers a client sends, and the outcome type every client parser returns.
 *
 * Test-only: nothing here is imported by src/.
 */
import { request as httpRequest } from "node:http";
import { createBeaconConfig } from "@lodestar/config";
import { mainnetChainConfig } from "@lodestar/config/networks";
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
} from "@lodestar/params";
import { ssz } from "@lodestar/types";
import { fromHex, lodestarDomain, lodestarSigningRoot, toHex } from "../signing/lodestar";

export type Json = Record<string, unknown>;

// ---- Chain: mainnet ----

export const SLOTS_PER_EPOCH = 32;
export const MAINNET_GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
/** Lodestar's view of mainnet (fork schedule, domains), the oracle for every expected root. */
export const MAINNET = createBeaconConfig(mainnetChainConfig, fromHex(MAINNET_GVR));

export const FORKS = [
  "phase0",
  "altair",
  "bellatrix",
  "capella",
  "deneb",
  "electra",
  "fulu",
] as const;
export type Fork = (typeof FORKS)[number];

export const forkIndex = (fork: Fork): number => FORKS.indexOf(fork);
export const atLeast = (fork: Fork, than: Fork): boolean => forkIndex(fork) >= forkIndex(than);
export const forkStartEpoch = (fork: Fork): number => MAINNET.forks[fork].epoch;
/** Upper case, as Web3Signer spells versions: PHASE0, ALTAIR, … */
export const VERSION = (fork: Fork): string => fork.toUpperCase();

// ---- Duties ----

export const DUTY_KINDS = [
  "AGGREGATION_SLOT",
  "AGGREGATE_AND_PROOF",
  "ATTESTATION",
  "BLOCK",
  "RANDAO_REVEAL",
  "SYNC_COMMITTEE_MESSAGE",
  "SYNC_COMMITTEE_SELECTION_PROOF",
  "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
  "VALIDATOR_REGISTRATION",
  "VOLUNTARY_EXIT",
] as const;
export type DutyKind = (typeof DUTY_KINDS)[number];

/** Whether the chain has this message at all in `fork` (sync committees: Altair; builder: Bellatrix). */
export function dutyExists(kind: DutyKind, fork: Fork): boolean {
  if (kind.startsWith("SYNC_COMMITTEE")) return atLeast(fork, "altair");
  if (kind === "VALIDATOR_REGISTRATION") return atLeast(fork, "bellatrix");
  return true;
}

/** One message a validator client asks to have signed, in the beacon-API JSON every client uses. */
export interface Duty {
  readonly kind: DutyKind;
  /** The fork of the message's epoch. */
  readonly fork: Fork;
  /** The client's signing slot: the message's slot, or the first slot of its epoch (RANDAO, exit). */
  readonly slot: number;
  /** The message epoch: the one that selects the fork version. */
  readonly epoch: number;
  /** Lodestar's JSON of the signed object (BLOCK: the whole block). */
  readonly payload: Json;
  /** BLOCK: the block's BeaconBlockHeader JSON (body_root = hash_tree_root(body)). */
  readonly header?: Json;
  /** BLOCK: a blinded block (execution payload header instead of payload). */
  readonly blinded?: boolean;
  /** Lodestar's hash_tree_root of the signed object. */
  readonly objectRoot: Uint8Array;
}

/** A Lodestar (ssz 1.7.0) type, seen through the methods used here. */
interface LodestarType {
  defaultValue(): unknown;
  fromJson(json: unknown): unknown;
  toJson(value: unknown): unknown;
  hashTreeRoot(value: unknown): Uint8Array;
}

function lodestarType(fork: Fork, name: string): LodestarType {
  const types = ssz[fork] as unknown as Record<string, LodestarType | undefined>;
  const type = types[name];
  if (!type) throw new Error(`@lodestar/types has no ${fork}.${name}`);
  return type;
}

const obj = (value: unknown): Json => value as Json;

/** A distinct 32-byte root per (salt, tag). */
export const root32 = (salt: number, tag: string): string =>
  `0x${salt.toString(16).padStart(8, "0")}${tag.repeat(28)}`;
/** 96 bytes: a placeholder for signatures inside containers (never verified by a signer). */
const bytes96 = (tag: string): string => `0x${tag.repeat(96)}`;
/** The same hex with its first byte replaced (to set bits in a default bitvector). */
const firstByte = (hex: string, byte: string): string => `0x${byte}${hex.slice(4)}`;

/** AttestationData JSON at `slot` (target: its epoch), made distinct by `salt`. */
export function attestationDataJson(slot: number, salt: number, index = salt % 4): Json {
  const epoch = Math.floor(slot / SLOTS_PER_EPOCH);
  return {
    slot: String(slot),
    index: String(index),
    beacon_block_root: root32(salt, "aa"),
    source: { epoch: String(Math.max(0, epoch - 1)), root: root32(salt, "bb") },
    target: { epoch: String(epoch), root: root32(salt, "cc") },
  };
}

/** Round-trips `json` through `type`: the canonical JSON and the object root. */
function canonical(type: LodestarType, json: unknown): { payload: Json; objectRoot: Uint8Array } {
  const value = type.fromJson(json);
  return { payload: type.toJson(value) as Json, objectRoot: type.hashTreeRoot(value) };
}

export interface DutyOptions {
  /** BLOCK: a blinded block (Bellatrix on). */
  readonly blinded?: boolean;
}

/**
 * The message of `kind` at `slot` (its epoch's fork), made distinct by `salt`. `pubkey` is the
 * validator's, for VALIDATOR_REGISTRATION.
 */
export function buildDuty(
  kind: DutyKind,
  slot: number,
  salt: number,
  pubkey: string,
  options: DutyOptions = {},
): Duty {
  const epoch = Math.floor(slot / SLOTS_PER_EPOCH);
  const fork = MAINNET.getForkName(slot) as Fork;
  const base = { kind, fork, slot, epoch };
  switch (kind) {
    case "AGGREGATION_SLOT":
      return {
        ...base,
        payload: { slot: String(slot) },
        objectRoot: ssz.Slot.hashTreeRoot(slot),
      };
    case "ATTESTATION":
      return { ...base, ...canonical(ssz.phase0.AttestationData, attestationDataJson(slot, salt)) };
    case "AGGREGATE_AND_PROOF": {
      const type = lodestarType(fork, "AggregateAndProof");
      const json = obj(type.toJson(type.defaultValue()));
      json.aggregator_index = String(100 + salt);
      json.selection_proof = bytes96("5e");
      const aggregate = obj(json.aggregate);
      aggregate.aggregation_bits = "0x0d";
      aggregate.data = attestationDataJson(slot, salt);
      aggregate.signature = bytes96("a9");
      if (typeof aggregate.committee_bits === "string") {
        aggregate.committee_bits = firstByte(aggregate.committee_bits, "01");
      }
      return { ...base, ...canonical(type, json) };
    }
    case "BLOCK":
      return blockDuty(base, salt, options.blinded === true);
    case "RANDAO_REVEAL":
      return {
        ...base,
        slot: epoch * SLOTS_PER_EPOCH,
        payload: { epoch: String(epoch) },
        objectRoot: ssz.Epoch.hashTreeRoot(epoch),
      };
    case "VOLUNTARY_EXIT":
      return {
        ...base,
        slot: epoch * SLOTS_PER_EPOCH,
        ...canonical(ssz.phase0.VoluntaryExit, {
          epoch: String(epoch),
          validator_index: String(1000 + salt),
        }),
      };
    case "SYNC_COMMITTEE_MESSAGE": {
      const blockRoot = root32(salt, "dd");
      return {
        ...base,
        payload: { beacon_block_root: blockRoot, slot: String(slot) },
        objectRoot: ssz.Root.hashTreeRoot(fromHex(blockRoot)),
      };
    }
    case "SYNC_COMMITTEE_SELECTION_PROOF":
      return {
        ...base,
        ...canonical(ssz.altair.SyncAggregatorSelectionData, {
          slot: String(slot),
          subcommittee_index: String(salt % 4),
        }),
      };
    case "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF": {
      const type = ssz.altair.ContributionAndProof as unknown as LodestarType;
      const json = obj(type.toJson(type.defaultValue()));
      json.aggregator_index = String(200 + salt);
      json.selection_proof = bytes96("5c");
      const contribution = obj(json.contribution);
      contribution.slot = String(slot);
      contribution.beacon_block_root = root32(salt, "ee");
      contribution.subcommittee_index = String(salt % 4);
      contribution.aggregation_bits = firstByte(String(contribution.aggregation_bits), "05");
      contribution.signature = bytes96("c5");
      return { ...base, ...canonical(type, json) };
    }
    case "VALIDATOR_REGISTRATION":
      return {
        ...base,
        ...canonical(ssz.bellatrix.ValidatorRegistrationV1, {
          fee_recipient: `0x${salt.toString(16).padStart(8, "0")}${"fe".repeat(16)}`,
          gas_limit: "36000000",
          timestamp: String(1_700_000_000 + salt),
          pubkey,
        }),
      };
  }
}

function blockDuty(
  base: { kind: DutyKind; fork: Fork; slot: number; epoch: number },
  salt: number,
  blinded: boolean,
): Duty {
  const { fork, slot } = base;
  if (blinded && !atLeast(fork, "bellatrix")) throw new Error(`no blinded blocks in ${fork}`);
  const blockType = lodestarType(fork, blinded ? "BlindedBeaconBlock" : "BeaconBlock");
  const bodyType = lodestarType(fork, blinded ? "BlindedBeaconBlockBody" : "BeaconBlockBody");
  const json = obj(blockType.toJson(blockType.defaultValue()));
  json.slot = String(slot);
  json.proposer_index = String(7 + (salt % 50));
  json.parent_root = root32(salt, "01");
  json.state_root = root32(salt, "02");
  const body = obj(json.body);
  body.randao_reveal = bytes96("4a");
  body.graffiti = root32(salt, "67");
  // Something in the lists, so that a full block's body is more than its defaults.
  body.attestations = [
    {
      aggregation_bits: "0x0d",
      data: attestationDataJson(Math.max(0, slot - 1), salt),
      signature: bytes96("a7"),
      ...(atLeast(fork, "electra") ? { committee_bits: "0x0100000000000000" } : {}),
    },
  ];
  if (body.sync_aggregate !== undefined) {
    const aggregate = obj(body.sync_aggregate);
    aggregate.sync_committee_bits = firstByte(String(aggregate.sync_committee_bits), "ff");
    aggregate.sync_committee_signature = bytes96("5a");
  }
  const block = blockType.fromJson(json) as {
    slot: number;
    proposerIndex: number;
    parentRoot: Uint8Array;
    stateRoot: Uint8Array;
    body: unknown;
  };
  const header = ssz.phase0.BeaconBlockHeader.toJson({
    slot: block.slot,
    proposerIndex: block.proposerIndex,
    parentRoot: block.parentRoot,
    stateRoot: block.stateRoot,
    bodyRoot: bodyType.hashTreeRoot(block.body),
  }) as Json;
  return {
    ...base,
    payload: blockType.toJson(block) as Json,
    header,
    blinded,
    objectRoot: blockType.hashTreeRoot(block),
  };
}

// ---- The oracle ----

const DOMAIN_TYPES: Record<Exclude<DutyKind, "VALIDATOR_REGISTRATION">, Uint8Array> = {
  AGGREGATION_SLOT: DOMAIN_SELECTION_PROOF,
  AGGREGATE_AND_PROOF: DOMAIN_AGGREGATE_AND_PROOF,
  ATTESTATION: DOMAIN_BEACON_ATTESTER,
  BLOCK: DOMAIN_BEACON_PROPOSER,
  RANDAO_REVEAL: DOMAIN_RANDAO,
  SYNC_COMMITTEE_MESSAGE: DOMAIN_SYNC_COMMITTEE,
  SYNC_COMMITTEE_SELECTION_PROOF: DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF,
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: DOMAIN_CONTRIBUTION_AND_PROOF,
  // Not used for the root: getDomainForVoluntaryExit picks the version (EIP-7044).
  VOLUNTARY_EXIT: DOMAIN_VOLUNTARY_EXIT,
};

/**
 * The signing root the chain verifies, from Lodestar alone: `getDomain` over the mainnet fork
 * schedule (state at the signing slot), EIP-7044's `getDomainForVoluntaryExit`, and the builder
 * domain (genesis fork version, zero root) for registrations.
 */
export function expectedSigningRoot(duty: Duty): Uint8Array {
  let domain: Uint8Array;
  if (duty.kind === "VALIDATOR_REGISTRATION") {
    domain = lodestarDomain(
      DOMAIN_APPLICATION_BUILDER,
      MAINNET.GENESIS_FORK_VERSION,
      new Uint8Array(32),
    );
  } else if (duty.kind === "VOLUNTARY_EXIT") {
    domain = MAINNET.getDomainForVoluntaryExit(duty.slot, duty.slot);
  } else {
    domain = MAINNET.getDomain(duty.slot, DOMAIN_TYPES[duty.kind], duty.slot);
  }
  return lodestarSigningRoot(duty.objectRoot, domain);
}

// ---- fork_info ----

export interface ForkInfoJson {
  fork: { previous_version: string; current_version: string; epoch: string };
  genesis_validators_root: string;
}

export function forkInfoJson(
  previous: Uint8Array,
  current: Uint8Array,
  epoch: number,
): ForkInfoJson {
  return {
    fork: {
      previous_version: toHex(previous),
      current_version: toHex(current),
      epoch: String(epoch),
    },
    genesis_validators_root: MAINNET_GVR,
  };
}

/** Lighthouse, Teku, Prysm, Nimbus: the fork at the message epoch, with its activation epoch. */
export function activationForkInfo(messageEpoch: number): ForkInfoJson {
  const fork = MAINNET.getForkInfo(messageEpoch * SLOTS_PER_EPOCH);
  return forkInfoJson(fork.prevVersion, fork.version, fork.epoch);
}

export const CAPELLA_VERSION = MAINNET.forks.capella.version;

// ---- Transport ----

export interface RawResponse {
  readonly status: number;
  /** The Content-Type header as received; undefined when absent. */
  readonly contentType: string | undefined;
  readonly body: string;
}

/**
 * POST /api/v1/eth2/sign/{pubkey} with exactly `headers` (plus Host and Content-Length, which
 * every HTTP client sends). node:http adds no Accept header of its own, unlike fetch.
 */
export function postSign(
  baseUrl: string,
  pubkey: string,
  headers: Readonly<Record<string, string>>,
  body: string,
): Promise<RawResponse> {
  return exactRequest(baseUrl, "POST", `/api/v1/eth2/sign/${pubkey}`, headers, body);
}

/** GET `path` with exactly `headers` (plus Host). */
export function getFrom(
  baseUrl: string,
  path: string,
  headers: Readonly<Record<string, string>>,
): Promise<RawResponse> {
  return exactRequest(baseUrl, "GET", path, headers);
}

function exactRequest(
  baseUrl: string,
  method: "GET" | "POST",
  path: string,
  headers: Readonly<Record<string, string>>,
  body?: string,
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  const length = body === undefined ? {} : { "Content-Length": String(Buffer.byteLength(body)) };
  return new Promise((done, fail) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers: { ...headers, ...length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const contentType = res.headers["content-type"];
          done({
            status: res.statusCode ?? 0,
            contentType: typeof contentType === "string" ? contentType : undefined,
            body: Buffer.concat(chunks).toString("utf8"),
          });
        });
        res.on("error", fail);
      },
    );
    req.on("error", fail);
    req.end(body);
  });
}

// ---- What a client makes of the answer ----

/**
 * A client's verdict on a response, in shared terms: a signature, or the class of error the
 * client raises (its own wording in `message`).
 */
export type Outcome =
  | { readonly ok: true; readonly signature: string }
  | { readonly ok: false; readonly kind: FailureKind; readonly message: string };

/**
 * - slashing: the client's own "refused by slashing protection" error (from the 412 status)
 * - unknown_key: the client's own "key not found" error (from the 404 status)
 * - failed: a generic HTTP failure, status in the message
 * - invalid_response: a 200 the client cannot read a signature from
 */
export type FailureKind = "slashing" | "unknown_key" | "failed" | "invalid_response";

export const failure = (kind: FailureKind, message: string): Outcome => ({
  ok: false,
  kind,
  message,
});

/** 96 bytes of hex, with the 0x prefix `requirePrefix` demands (else optional); lower-cased. */
export function signatureHex(text: unknown, requirePrefix: boolean): string | undefined {
  if (typeof text !== "string") return undefined;
  const hasPrefix = text.startsWith("0x") || text.startsWith("0X");
  if (requirePrefix && !hasPrefix) return undefined;
  const digits = hasPrefix ? text.slice(2) : text;
  if (!/^[0-9a-fA-F]{192}$/.test(digits)) return undefined;
  return `0x${digits.toLowerCase()}`;
}

/** The media type of a Content-Type value: before any `;`, trimmed, lower case. */
export const mediaType = (contentType: string | undefined): string | undefined =>
  contentType?.split(";", 1)[0]?.trim().toLowerCase();

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A JSON array of strings (public keys), else undefined. */
export function stringArray(json: unknown): string[] | undefined {
  if (!Array.isArray(json) || !json.every((item) => typeof item === "string")) return undefined;
  return json as string[];
}

export const signatureField = (json: unknown): unknown =>
  typeof json === "object" && json !== null ? (json as Json).signature : undefined;

// ---- The fixture each client module exports ----

/** Web3Signer's payload key per request type (blocks aside: `block` or `beacon_block`). */
export const PAYLOAD_KEY: Record<Exclude<DutyKind, "BLOCK">, string> = {
  AGGREGATION_SLOT: "aggregation_slot",
  AGGREGATE_AND_PROOF: "aggregate_and_proof",
  ATTESTATION: "attestation",
  RANDAO_REVEAL: "randao_reveal",
  SYNC_COMMITTEE_MESSAGE: "sync_committee_message",
  SYNC_COMMITTEE_SELECTION_PROOF: "sync_aggregator_selection_data",
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "contribution_and_proof",
  VALIDATOR_REGISTRATION: "validator_registration",
  VOLUNTARY_EXIT: "voluntary_exit",
};

/** A block's `beacon_block` as most clients shape it: full block up to Altair, header after. */
export function beaconBlockV2(
  duty: Duty,
  version = VERSION(duty.fork),
): { label: string; value: Json } {
  const blinded = duty.blinded ? " (blinded)" : "";
  if (!atLeast(duty.fork, "bellatrix")) {
    return { label: "BLOCK_V2 {version, block}", value: { version, block: duty.payload } };
  }
  return {
    label: `BLOCK_V2 {version, block_header}${blinded}`,
    value: { version, block_header: duty.header },
  };
}

/** One sign request as a client sends it. */
export interface SignRequest {
  /** The wire type and payload shape, e.g. "BLOCK_V2 {version, block_header}". */
  readonly label: string;
  /** The JSON body, with the client's key order and extras. */
  readonly body: Json;
}

/** A GET the client makes to the signer, and what it reads from the answer (undefined: fails). */
export interface GetCall<T> {
  readonly headers: Readonly<Record<string, string>>;
  parse(response: RawResponse): T | undefined;
}

export interface ClientFixture {
  readonly name: string;
  /** Where this behaviour was read (file in the client's public repository). */
  readonly source: string;
  /** The exact headers of a sign request (Host and Content-Length aside). */
  readonly headers: Readonly<Record<string, string>>;
  /** The request this client sends for `duty`, or undefined if it never sends such a request. */
  request(duty: Duty, signingRoot: string): SignRequest | undefined;
  /** What the client makes of the answer; `duty` gives the context some error messages name. */
  parse(response: RawResponse, duty?: Duty): Outcome;
  /** GET /api/v1/eth2/publicKeys, when the client discovers its keys from the signer. */
  readonly publicKeys?: GetCall<string[]>;
  /** GET /upcheck, when the client checks the signer's liveness: true when up. */
  readonly upcheck?: GetCall<boolean>;
}
