/**
 * The Gloas (ePBS) half of the client suite: the duties a validator (or a builder) signs from the
 * Gloas fork on, built with Lodestar's own `ssz.gloas` containers independently of sigil, on
 * Sepolia with Gloas at its scheduled epoch; the signing root the chain verifies (Lodestar's
 * `getDomain`, or compute_domain over the genesis fork version and a zero root for request auth);
 * `fork_info` in both conventions; and the shape each client gives every Gloas request.
 *
 * Test-only: nothing here is imported by src/.
 */
import { createBeaconConfig } from "@lodestar/config";
import { sepoliaChainConfig } from "@lodestar/config/networks";
import {
  DOMAIN_AGGREGATE_AND_PROOF,
  DOMAIN_BEACON_ATTESTER,
  DOMAIN_BEACON_BUILDER,
  DOMAIN_BEACON_PROPOSER,
  DOMAIN_BUILDER_REQUEST_AUTH,
  DOMAIN_PROPOSER_PREFERENCES,
  DOMAIN_PTC_ATTESTER,
} from "@lodestar/params";
import { ssz } from "@lodestar/types";
import {
  forkInfoJson,
  fromHex,
  lodestarDomain,
  lodestarSigningRoot,
  toHex,
} from "../signing/lodestar";
import {
  attestationDataJson,
  type ClientFixture,
  type Json,
  root32,
  type SignRequest,
} from "./common";

// ---- Chain: Sepolia, Gloas at its scheduled epoch ----

export const SLOTS_PER_EPOCH = 32;
export const SEPOLIA_GVR = "0xd8ea171f3c94aea21ebc42a1ed61052acf3f9209c00e4efbaaddac09ed9b8078";
/** ethereum/pm#2205 (eth-clients/sepolia#126); @lodestar/config 1.50 still has it unscheduled. */
export const GLOAS_EPOCH = 353024;
export const SEPOLIA = createBeaconConfig(
  { ...sepoliaChainConfig, GLOAS_FORK_EPOCH: GLOAS_EPOCH },
  fromHex(SEPOLIA_GVR),
);
/** The self-build builder index (consensus-specs BUILDER_INDEX_SELF_BUILD). */
export const SELF_BUILD = "18446744073709551615";

// ---- Duties ----

export const GLOAS_DUTY_KINDS = [
  "ATTESTATION",
  "BLOCK",
  "AGGREGATE_AND_PROOF",
  "PAYLOAD_ATTESTATION",
  "EXECUTION_PAYLOAD_ENVELOPE",
  "PROPOSER_PREFERENCES",
  "BUILDER_REQUEST_AUTH",
  "EXECUTION_PAYLOAD_BID",
] as const;
export type GloasDutyKind = (typeof GLOAS_DUTY_KINDS)[number];

/** One Gloas-era message, in the beacon-API JSON every client uses. */
export interface GloasDuty {
  readonly kind: GloasDutyKind;
  /** The message's slot (the block's for an envelope, the proposal slot for preferences). */
  readonly slot: number;
  readonly epoch: number;
  /** Lodestar's JSON of the signed object (BLOCK: the whole block). */
  readonly payload: Json;
  /** BLOCK: the block's header (body_root = hash_tree_root(body)). */
  readonly header?: Json;
  /** EXECUTION_PAYLOAD_ENVELOPE: built by its proposer (builder_index 2^64-1), not a builder. */
  readonly selfBuilt?: boolean;
  /** The signing root the chain verifies, from Lodestar alone. */
  readonly signingRoot: Uint8Array;
}

/** The parts of a Lodestar (ssz 1.9) type used here. */
interface LodestarType {
  defaultValue(): unknown;
  fromJson(json: unknown): unknown;
  toJson(value: unknown): unknown;
  hashTreeRoot(value: unknown): Uint8Array;
}

const type = (value: unknown) => value as LodestarType;
const obj = (value: unknown): Json => value as Json;
const bytes = (n: number, tag: string) => `0x${tag.repeat(n)}`;
/** A uint64 above 2^53, different per salt: a JSON number would have lost it. */
const big = (salt: number) => (2n ** 63n + BigInt(salt) * 1_000_003n).toString();

/** Lodestar's default JSON of `t`, changed by `edit`, round-tripped: canonical JSON and root. */
function built(t: LodestarType, edit: (json: Json) => void): { payload: Json; root: Uint8Array } {
  const json = obj(t.toJson(t.defaultValue()));
  edit(json);
  const value = t.fromJson(json);
  return { payload: obj(t.toJson(value)), root: t.hashTreeRoot(value) };
}

const DOMAINS: Record<GloasDutyKind, Uint8Array> = {
  ATTESTATION: DOMAIN_BEACON_ATTESTER,
  BLOCK: DOMAIN_BEACON_PROPOSER,
  AGGREGATE_AND_PROOF: DOMAIN_AGGREGATE_AND_PROOF,
  PAYLOAD_ATTESTATION: DOMAIN_PTC_ATTESTER,
  EXECUTION_PAYLOAD_ENVELOPE: DOMAIN_BEACON_BUILDER,
  PROPOSER_PREFERENCES: DOMAIN_PROPOSER_PREFERENCES,
  BUILDER_REQUEST_AUTH: DOMAIN_BUILDER_REQUEST_AUTH,
  EXECUTION_PAYLOAD_BID: DOMAIN_BEACON_BUILDER,
};

/**
 * get_domain at the message's slot (consensus-specs gloas/validator.md, builder.md: PTC at
 * data.slot, envelope at the block's slot, preferences at the proposal slot, bid at bid.slot);
 * builder-specs' compute_domain(DOMAIN_REQUEST_AUTH) for request auth.
 */
function signingRootOf(kind: GloasDutyKind, slot: number, objectRoot: Uint8Array): Uint8Array {
  const domain =
    kind === "BUILDER_REQUEST_AUTH"
      ? lodestarDomain(DOMAINS[kind], SEPOLIA.GENESIS_FORK_VERSION, new Uint8Array(32))
      : SEPOLIA.getDomain(slot, DOMAINS[kind], slot);
  return lodestarSigningRoot(objectRoot, domain);
}

/** From Gloas, `index` is the payload status: 0 (empty or same slot) or 1 (full). */
const attestationData = (slot: number, salt: number) => attestationDataJson(slot, salt, salt % 2);

function payloadOf(kind: GloasDutyKind, slot: number, salt: number, selfBuilt: boolean) {
  const g = ssz.gloas;
  switch (kind) {
    case "ATTESTATION":
      return built(type(ssz.phase0.AttestationData), (json) => {
        Object.assign(json, attestationData(slot, salt));
      });
    case "AGGREGATE_AND_PROOF":
      return built(type(g.AggregateAndProof), (json) => {
        json.aggregator_index = String(300 + salt);
        json.selection_proof = bytes(96, "5e");
        const aggregate = obj(json.aggregate);
        aggregate.aggregation_bits = "0x0d";
        aggregate.data = attestationData(slot, salt);
        aggregate.signature = bytes(96, "a9");
        aggregate.committee_bits = `0x01${"00".repeat(7)}`;
      });
    case "PAYLOAD_ATTESTATION":
      return built(type(g.PayloadAttestationData), (json) => {
        json.beacon_block_root = root32(salt, "b1");
        json.slot = String(slot);
        json.payload_present = salt % 2 === 0;
        json.blob_data_available = salt % 3 !== 0;
      });
    case "EXECUTION_PAYLOAD_ENVELOPE":
      return built(type(g.ExecutionPayloadEnvelope), (json) => {
        const payload = obj(json.payload);
        payload.slot_number = String(slot);
        payload.block_hash = root32(salt, "e1");
        payload.gas_limit = "60000000";
        payload.transactions = ["0x02f8", bytes(40, "7a")];
        payload.block_access_list = "0xc0";
        payload.withdrawals = [
          {
            index: String(9000 + salt),
            validator_index: "12",
            address: bytes(20, "ad"),
            amount: "32",
          },
        ];
        obj(json.execution_requests).builder_exits = [
          { source_address: bytes(20, "5a"), pubkey: bytes(48, "be") },
        ];
        json.builder_index = selfBuilt ? SELF_BUILD : String(40 + salt);
        json.beacon_block_root = root32(salt, "e2");
        json.parent_beacon_block_root = root32(salt, "e3");
      });
    case "PROPOSER_PREFERENCES":
      return built(type(g.ProposerPreferences), (json) => {
        json.dependent_root = root32(salt, "d0");
        json.proposal_slot = String(slot);
        json.validator_index = String(500 + salt);
        json.fee_recipient = bytes(20, "fe");
        json.target_gas_limit = big(salt);
      });
    case "BUILDER_REQUEST_AUTH":
      return built(type(g.BuilderRequestAuth), (json) => {
        // builder-specs' default: the builder's hostname as bytes (remote-signing-api #31).
        json.data = toHex(new TextEncoder().encode(`builder-${salt}.example.org`));
        json.slot = String(slot);
      });
    case "EXECUTION_PAYLOAD_BID":
      return built(type(g.ExecutionPayloadBid), (json) => {
        json.parent_block_hash = root32(salt, "01");
        json.parent_block_root = root32(salt, "02");
        json.block_hash = root32(salt, "03");
        json.prev_randao = root32(salt, "04");
        json.fee_recipient = bytes(20, "fe");
        json.gas_limit = big(salt);
        json.builder_index = String(40 + salt);
        json.slot = String(slot);
        json.value = "1000000000";
        json.execution_payment = big(salt + 1);
        json.blob_kzg_commitments = [bytes(48, "c0")];
        json.execution_requests_root = root32(salt, "05");
      });
    case "BLOCK":
      throw new Error("blocks are built by blockDuty");
  }
}

/** A Gloas block: Lodestar's ssz.gloas.BeaconBlock (progressive body) and its header. */
function blockDuty(slot: number, salt: number): { payload: Json; header: Json; root: Uint8Array } {
  const blockType = type(ssz.gloas.BeaconBlock);
  const json = obj(blockType.toJson(blockType.defaultValue()));
  json.slot = String(slot);
  json.proposer_index = String(7 + salt);
  json.parent_root = root32(salt, "01");
  json.state_root = root32(salt, "02");
  const body = obj(json.body);
  body.randao_reveal = bytes(96, "4a");
  body.graffiti = root32(salt, "67");
  body.attestations = [
    {
      aggregation_bits: "0x0d",
      data: attestationData(slot - 1, salt),
      signature: bytes(96, "a7"),
      committee_bits: `0x01${"00".repeat(7)}`,
    },
  ];
  const bid = obj(obj(body.signed_execution_payload_bid).message);
  bid.slot = String(slot);
  bid.builder_index = SELF_BUILD;
  const block = blockType.fromJson(json) as { body: unknown };
  const header = {
    slot: String(slot),
    proposer_index: json.proposer_index,
    parent_root: json.parent_root,
    state_root: json.state_root,
    body_root: toHex(type(ssz.gloas.BeaconBlockBody).hashTreeRoot(block.body)),
  };
  return { payload: obj(blockType.toJson(block)), header, root: blockType.hashTreeRoot(block) };
}

/** The Gloas duty of `kind` at `slot`, made distinct by `salt`. */
export function buildGloasDuty(
  kind: GloasDutyKind,
  slot: number,
  salt: number,
  options: { selfBuilt?: boolean } = {},
): GloasDuty {
  const epoch = Math.floor(slot / SLOTS_PER_EPOCH);
  if (kind === "BLOCK") {
    const { payload, header, root } = blockDuty(slot, salt);
    return { kind, slot, epoch, payload, header, signingRoot: signingRootOf(kind, slot, root) };
  }
  const selfBuilt = options.selfBuilt ?? true;
  const { payload, root } = payloadOf(kind, slot, salt, selfBuilt);
  return {
    kind,
    slot,
    epoch,
    payload,
    ...(kind === "EXECUTION_PAYLOAD_ENVELOPE" ? { selfBuilt } : {}),
    signingRoot: signingRootOf(kind, slot, root),
  };
}

// ---- fork_info ----

/** The fork at `slot`, with its activation epoch (Lighthouse, Teku, Prysm, Nimbus). */
export function activationForkInfo(slot: number): Json {
  const fork = SEPOLIA.getForkInfo(slot);
  return forkInfoJson(fork.prevVersion, fork.version, fork.epoch, SEPOLIA_GVR);
}

/** The fork at `slot`, with the slot's own epoch (Lodestar's getForkInfoForSigning). */
export function messageEpochForkInfo(slot: number): Json {
  const fork = SEPOLIA.getForkInfo(slot);
  const epoch = Math.floor(slot / SLOTS_PER_EPOCH);
  return forkInfoJson(fork.prevVersion, fork.version, epoch, SEPOLIA_GVR);
}

// ---- What each client sends ----

/** A client's Gloas dialect: the request it sends for a duty, or undefined if it sends none. */
export interface GloasClient {
  readonly name: string;
  /** Where the behaviour was read. */
  readonly source: string;
  /** Headers and answer parsing: the client's fixture for the earlier forks. */
  readonly fixture: ClientFixture;
  request(duty: GloasDuty, signingRoot: string): SignRequest | undefined;
}

/** `{version: "GLOAS", data}`: remote-signing-api v1.4.0's shape for every new type. */
export const wrapped = (duty: GloasDuty, version = "GLOAS"): Json => ({
  version,
  data: duty.payload,
});

/** BLOCK_V2 `{version, block_header}`: how every client sends a Gloas block. */
export const gloasBlock = (duty: GloasDuty, version = "GLOAS"): Json => ({
  version,
  block_header: duty.header,
});
