/**
 * SSZ containers for every message sigil signs (consensus specs, phase0 to Fulu). Those that no
 * preset constant shapes are exported as they are; the others are built once per preset by
 * `presetTypes` (mainnet, minimal: preset.ts), and a request is decoded with its network's.
 * Field names are the snake_case keys of the beacon-API / Web3Signer JSON, so the JSON decoder in
 * `json.ts` can walk a type and its JSON side by side; names never change a hash tree root.
 */
// First: every hash tree root below goes through the native SHA-256 (sha256-hasher.ts).
import "./sha256-hasher";
import {
  BitListType,
  BitVectorType,
  ByteVectorType,
  ContainerType,
  ListBasicType,
  ListCompositeType,
  UintBigintType,
  VectorCompositeType,
} from "@chainsafe/ssz";
import { fromHex } from "../wire/hex";
import { type Preset, perPreset, SPEC_CONSTANTS } from "./preset";

// ---- Domain constants ----

/** A 4-byte DomainType from its spec notation, e.g. 0x01000000 → [1, 0, 0, 0]. */
const domainType = fromHex;

export const DOMAIN_BEACON_PROPOSER = domainType("0x00000000");
export const DOMAIN_BEACON_ATTESTER = domainType("0x01000000");
export const DOMAIN_RANDAO = domainType("0x02000000");
export const DOMAIN_VOLUNTARY_EXIT = domainType("0x04000000");
export const DOMAIN_SELECTION_PROOF = domainType("0x05000000");
export const DOMAIN_AGGREGATE_AND_PROOF = domainType("0x06000000");
export const DOMAIN_SYNC_COMMITTEE = domainType("0x07000000");
export const DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF = domainType("0x08000000");
export const DOMAIN_CONTRIBUTION_AND_PROOF = domainType("0x09000000");
export const DOMAIN_APPLICATION_BUILDER = domainType("0x00000001");

// ---- Basic types ----

export const Uint64 = new UintBigintType(8);
export const Slot = Uint64;
export const Epoch = Uint64;
export const ValidatorIndex = Uint64;
export const CommitteeIndex = Uint64;
export const Gwei = Uint64;
export const Root = new ByteVectorType(32);
export const Bytes32 = Root;
export const Version = new ByteVectorType(4);
export const Domain = new ByteVectorType(32);
export const BLSPubkey = new ByteVectorType(48);
export const BLSSignature = new ByteVectorType(96);
export const ExecutionAddress = new ByteVectorType(20);

// ---- Domain computation ----

export const Fork = new ContainerType({
  previous_version: Version,
  current_version: Version,
  epoch: Epoch,
});

export const ForkData = new ContainerType({
  current_version: Version,
  genesis_validators_root: Root,
});

export const SigningData = new ContainerType({
  object_root: Root,
  domain: Domain,
});

// ---- Preset-independent containers ----

export const Checkpoint = new ContainerType({
  epoch: Epoch,
  root: Root,
});

export const AttestationData = new ContainerType({
  slot: Slot,
  index: CommitteeIndex,
  beacon_block_root: Root,
  source: Checkpoint,
  target: Checkpoint,
});

export const BeaconBlockHeader = new ContainerType({
  slot: Slot,
  proposer_index: ValidatorIndex,
  parent_root: Root,
  state_root: Root,
  body_root: Root,
});

export const SignedBeaconBlockHeader = new ContainerType({
  message: BeaconBlockHeader,
  signature: BLSSignature,
});

export const ProposerSlashing = new ContainerType({
  signed_header_1: SignedBeaconBlockHeader,
  signed_header_2: SignedBeaconBlockHeader,
});

export const Eth1Data = new ContainerType({
  deposit_root: Root,
  deposit_count: Uint64,
  block_hash: Bytes32,
});

export const DepositData = new ContainerType({
  pubkey: BLSPubkey,
  withdrawal_credentials: Bytes32,
  amount: Gwei,
  signature: BLSSignature,
});

export const Deposit = new ContainerType({
  proof: new VectorCompositeType(Bytes32, SPEC_CONSTANTS.DEPOSIT_CONTRACT_TREE_DEPTH + 1),
  data: DepositData,
});

export const VoluntaryExit = new ContainerType({
  epoch: Epoch,
  validator_index: ValidatorIndex,
});

export const SignedVoluntaryExit = new ContainerType({
  message: VoluntaryExit,
  signature: BLSSignature,
});

export const SyncAggregatorSelectionData = new ContainerType({
  slot: Slot,
  subcommittee_index: Uint64,
});

// ---- Containers shaped by a preset ----

/** The containers whose list limits or vector lengths are preset constants. */
function buildPresetTypes(preset: Preset) {
  const Attestation = new ContainerType({
    aggregation_bits: new BitListType(preset.MAX_VALIDATORS_PER_COMMITTEE),
    data: AttestationData,
    signature: BLSSignature,
  });

  /** EIP-7549: one aggregate spans the committees named by `committee_bits`. */
  const AttestationElectra = new ContainerType({
    aggregation_bits: new BitListType(
      preset.MAX_VALIDATORS_PER_COMMITTEE * preset.MAX_COMMITTEES_PER_SLOT,
    ),
    data: AttestationData,
    signature: BLSSignature,
    committee_bits: new BitVectorType(preset.MAX_COMMITTEES_PER_SLOT),
  });

  const IndexedAttestation = new ContainerType({
    attesting_indices: new ListBasicType(ValidatorIndex, preset.MAX_VALIDATORS_PER_COMMITTEE),
    data: AttestationData,
    signature: BLSSignature,
  });

  const AttesterSlashing = new ContainerType({
    attestation_1: IndexedAttestation,
    attestation_2: IndexedAttestation,
  });

  const phase0BodyFields = {
    randao_reveal: BLSSignature,
    eth1_data: Eth1Data,
    graffiti: Bytes32,
    proposer_slashings: new ListCompositeType(ProposerSlashing, preset.MAX_PROPOSER_SLASHINGS),
    attester_slashings: new ListCompositeType(AttesterSlashing, preset.MAX_ATTESTER_SLASHINGS),
    attestations: new ListCompositeType(Attestation, preset.MAX_ATTESTATIONS),
    deposits: new ListCompositeType(Deposit, preset.MAX_DEPOSITS),
    voluntary_exits: new ListCompositeType(SignedVoluntaryExit, preset.MAX_VOLUNTARY_EXITS),
  };

  const BeaconBlockBody = new ContainerType(phase0BodyFields);

  const SyncAggregate = new ContainerType({
    sync_committee_bits: new BitVectorType(preset.SYNC_COMMITTEE_SIZE),
    sync_committee_signature: BLSSignature,
  });

  const BeaconBlockBodyAltair = new ContainerType({
    ...phase0BodyFields,
    sync_aggregate: SyncAggregate,
  });

  const blockFields = {
    slot: Slot,
    proposer_index: ValidatorIndex,
    parent_root: Root,
    state_root: Root,
  };

  const SyncCommitteeContribution = new ContainerType({
    slot: Slot,
    beacon_block_root: Root,
    subcommittee_index: Uint64,
    aggregation_bits: new BitVectorType(
      preset.SYNC_COMMITTEE_SIZE / SPEC_CONSTANTS.SYNC_COMMITTEE_SUBNET_COUNT,
    ),
    signature: BLSSignature,
  });

  return {
    preset,
    /** SLOTS_PER_EPOCH as the bigint that slots and epochs are. */
    slotsPerEpoch: BigInt(preset.SLOTS_PER_EPOCH),
    Attestation,
    AttestationElectra,
    AggregateAndProof: new ContainerType({
      aggregator_index: ValidatorIndex,
      aggregate: Attestation,
      selection_proof: BLSSignature,
    }),
    AggregateAndProofElectra: new ContainerType({
      aggregator_index: ValidatorIndex,
      aggregate: AttestationElectra,
      selection_proof: BLSSignature,
    }),
    IndexedAttestation,
    AttesterSlashing,
    BeaconBlockBody,
    SyncAggregate,
    BeaconBlockBodyAltair,
    BeaconBlock: new ContainerType({ ...blockFields, body: BeaconBlockBody }),
    BeaconBlockAltair: new ContainerType({ ...blockFields, body: BeaconBlockBodyAltair }),
    SyncCommitteeContribution,
    ContributionAndProof: new ContainerType({
      aggregator_index: ValidatorIndex,
      contribution: SyncCommitteeContribution,
      selection_proof: BLSSignature,
    }),
  };
}

export type PresetTypes = ReturnType<typeof buildPresetTypes>;

/** The containers of `preset`, built on first use and shared afterwards (one set per preset). */
export const presetTypes: (preset: Preset) => PresetTypes = perPreset(buildPresetTypes);

// ---- Builder API ----

export const ValidatorRegistrationV1 = new ContainerType({
  fee_recipient: ExecutionAddress,
  gas_limit: Uint64,
  timestamp: Uint64,
  pubkey: BLSPubkey,
});

// ---- Web3Signer envelope ----

/** `fork_info` of a sign request; not a consensus container, decoded with the same machinery. */
export const ForkInfo = new ContainerType({
  fork: Fork,
  genesis_validators_root: Root,
});
