/**
 * The Gloas (ePBS, EIP-7732) containers sigil hashes, as consensus-specs `specs/gloas/` defines
 * them after EIP-7688: `ExecutionPayload`, `ExecutionRequests`, the envelope, the bid and
 * `Attestation` are progressive containers (EIP-7495) whose lists are progressive lists (EIP-7916),
 * hashed by @chainsafe/ssz's own progressive types. A progressive list has no merkleization limit,
 * so no preset constant shapes these roots: the runtime limits below only refuse input the chain
 * would refuse too. The sources each container follows are listed in docs/signing.md.
 */
import {
  BitVectorType,
  BooleanType,
  ByteListType,
  ByteVectorType,
  ContainerType,
  ProgressiveBitListType,
  ProgressiveByteListType,
  ProgressiveContainerType,
  ProgressiveListCompositeType,
  type Type,
  UintBigintType,
} from "@chainsafe/ssz";
import { fromHex } from "../wire/hex";
import { type Preset, perPreset } from "./preset";
import {
  AttestationData,
  BLSPubkey,
  BLSSignature,
  Bytes32,
  ExecutionAddress,
  Gwei,
  Root,
  Slot,
  Uint64,
  ValidatorIndex,
} from "./ssz";

// ---- Domain constants (consensus-specs gloas/beacon-chain.md; builder-specs gloas/builder.md) ----

export const DOMAIN_BEACON_BUILDER = fromHex("0x0B000000");
export const DOMAIN_PTC_ATTESTER = fromHex("0x0C000000");
export const DOMAIN_PROPOSER_PREFERENCES = fromHex("0x0D000000");
/** builder-specs' DOMAIN_REQUEST_AUTH; remote-signing-api and Prysm name it DOMAIN_BUILDER_REQUEST_AUTH. */
export const DOMAIN_BUILDER_REQUEST_AUTH = fromHex("0x0B000001");

// ---- Spec and builder-specs constants that shape a root ----

/** ExtraData and LogsBloom, unchanged since Bellatrix (the same in both presets). */
const MAX_EXTRA_DATA_BYTES = 32;
const BYTES_PER_LOGS_BLOOM = 256;
/** builder-specs: RequestAuthV1.data is ByteList[MAX_BUILDER_AUTH_DATA_SIZE]. */
export const MAX_BUILDER_AUTH_DATA_SIZE = 4096;

const BuilderIndex = Uint64;
const Uint256 = new UintBigintType(32);
const KZGCommitment = new ByteVectorType(48);

/** A ProgressiveContainer whose fields are all active (every Gloas one so far). */
function progressiveContainer<Fields extends Record<string, Type<unknown>>>(fields: Fields) {
  return new ProgressiveContainerType(
    fields,
    Object.keys(fields).map(() => true),
  );
}

// ---- Preset-independent containers ----

export const PayloadAttestationData = new ContainerType({
  beacon_block_root: Root,
  slot: Slot,
  payload_present: new BooleanType(),
  blob_data_available: new BooleanType(),
});

export const ProposerPreferences = new ContainerType({
  dependent_root: Root,
  proposal_slot: Slot,
  validator_index: ValidatorIndex,
  fee_recipient: ExecutionAddress,
  target_gas_limit: Uint64,
});

/** builder-specs RequestAuthV1 (`BuilderRequestAuth` in remote-signing-api). */
export const BuilderRequestAuth = new ContainerType({
  data: new ByteListType(MAX_BUILDER_AUTH_DATA_SIZE),
  slot: Slot,
});

const Withdrawal = new ContainerType({
  index: Uint64,
  validator_index: ValidatorIndex,
  address: ExecutionAddress,
  amount: Gwei,
});

const DepositRequest = new ContainerType({
  pubkey: BLSPubkey,
  withdrawal_credentials: Bytes32,
  amount: Gwei,
  signature: BLSSignature,
  index: Uint64,
});

const WithdrawalRequest = new ContainerType({
  source_address: ExecutionAddress,
  validator_pubkey: BLSPubkey,
  amount: Gwei,
});

const ConsolidationRequest = new ContainerType({
  source_address: ExecutionAddress,
  source_pubkey: BLSPubkey,
  target_pubkey: BLSPubkey,
});

/** EIP-8282. */
const BuilderDepositRequest = new ContainerType({
  pubkey: BLSPubkey,
  withdrawal_credentials: Bytes32,
  amount: Gwei,
  signature: BLSSignature,
});

/** EIP-8282. */
const BuilderExitRequest = new ContainerType({
  source_address: ExecutionAddress,
  pubkey: BLSPubkey,
});

export const ExecutionRequests = progressiveContainer({
  deposits: new ProgressiveListCompositeType(DepositRequest),
  withdrawals: new ProgressiveListCompositeType(WithdrawalRequest),
  consolidations: new ProgressiveListCompositeType(ConsolidationRequest),
  builder_deposits: new ProgressiveListCompositeType(BuilderDepositRequest),
  builder_exits: new ProgressiveListCompositeType(BuilderExitRequest),
});

export const ExecutionPayload = progressiveContainer({
  parent_hash: Bytes32,
  fee_recipient: ExecutionAddress,
  state_root: Bytes32,
  receipts_root: Bytes32,
  logs_bloom: new ByteVectorType(BYTES_PER_LOGS_BLOOM),
  prev_randao: Bytes32,
  block_number: Uint64,
  gas_limit: Uint64,
  gas_used: Uint64,
  timestamp: Uint64,
  extra_data: new ByteListType(MAX_EXTRA_DATA_BYTES),
  base_fee_per_gas: Uint256,
  block_hash: Bytes32,
  transactions: new ProgressiveListCompositeType(new ProgressiveByteListType()),
  withdrawals: new ProgressiveListCompositeType(Withdrawal),
  blob_gas_used: Uint64,
  excess_blob_gas: Uint64,
  /** EIP-7928. */
  block_access_list: new ProgressiveByteListType(),
  /** EIP-7843; the slot of the beacon block the payload belongs to. */
  slot_number: Slot,
});

export const ExecutionPayloadEnvelope = progressiveContainer({
  payload: ExecutionPayload,
  execution_requests: ExecutionRequests,
  builder_index: BuilderIndex,
  beacon_block_root: Root,
  parent_beacon_block_root: Root,
});

export const ExecutionPayloadBid = progressiveContainer({
  parent_block_hash: Bytes32,
  parent_block_root: Root,
  block_hash: Bytes32,
  prev_randao: Bytes32,
  fee_recipient: ExecutionAddress,
  gas_limit: Uint64,
  builder_index: BuilderIndex,
  slot: Slot,
  value: Gwei,
  execution_payment: Gwei,
  blob_kzg_commitments: new ProgressiveListCompositeType(KZGCommitment),
  execution_requests_root: Root,
});

// ---- Containers shaped by a preset ----

/** The Gloas containers whose field lengths are preset constants. */
function buildGloasPresetTypes(preset: Preset) {
  const AttestationGloas = progressiveContainer({
    // A ProgressiveBitList has no merkleization limit; the chain never has more bits than this.
    aggregation_bits: new ProgressiveBitListType({
      limit: preset.MAX_VALIDATORS_PER_COMMITTEE * preset.MAX_COMMITTEES_PER_SLOT,
    }),
    data: AttestationData,
    signature: BLSSignature,
    committee_bits: new BitVectorType(preset.MAX_COMMITTEES_PER_SLOT),
  });
  return {
    AttestationGloas,
    AggregateAndProofGloas: new ContainerType({
      aggregator_index: ValidatorIndex,
      aggregate: AttestationGloas,
      selection_proof: BLSSignature,
    }),
  };
}

export type GloasPresetTypes = ReturnType<typeof buildGloasPresetTypes>;

/** The Gloas containers of `preset`, built on first use and shared afterwards. */
export const gloasPresetTypes: (preset: Preset) => GloasPresetTypes =
  perPreset(buildGloasPresetTypes);
