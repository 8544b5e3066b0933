/**
 * The table of sign request types: each `type` (upper case, aliases included) → how its payload
 * is read, hashed, dated and signed. Built once per preset (`requestTypesOf`), so that a request
 * only looks its map up. Adding a type that is one SSZ object (as every Gloas one is) is one
 * `ObjectTypeSpec` entry in `OBJECT_TYPES` plus its container, and its operation name in
 * wire/operations.ts (policies and metrics name it).
 */
import { ContainerType } from "@chainsafe/ssz";
import { forkVersionAt } from "./domain";
import { FORKS, type ForkName, forkAtLeast } from "./forks";
import { decodeJson, invalidRequest } from "./json";
import { type Preset, perPreset } from "./preset";
import {
  choiceAt,
  type DecodeContext,
  isJsonObject,
  type Message,
  type ObjectTypeSpec,
  objectAt,
  objectRequestType,
  type RequestType,
  unwrapVersioned,
} from "./request-type";
import { attestationDataRoot } from "./roots";
import {
  AttestationData,
  BeaconBlockHeader,
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
  Epoch,
  presetTypes,
  Root,
  Slot,
  SyncAggregatorSelectionData,
  ValidatorRegistrationV1,
  VoluntaryExit,
} from "./ssz";
import {
  BuilderRequestAuth,
  DOMAIN_BEACON_BUILDER,
  DOMAIN_BUILDER_REQUEST_AUTH,
  DOMAIN_PROPOSER_PREFERENCES,
  DOMAIN_PTC_ATTESTER,
  ExecutionPayloadBid,
  ExecutionPayloadEnvelope,
  gloasPresetTypes,
  PayloadAttestationData,
  ProposerPreferences,
} from "./ssz-gloas";

/** The JSON wrappers of bare values; only used to decode them. */
const AggregationSlotPayload = new ContainerType({ slot: Slot });
const RandaoRevealPayload = new ContainerType({ epoch: Epoch });
const SyncCommitteeMessagePayload = new ContainerType({ beacon_block_root: Root, slot: Slot });

const FULL_BLOCK_FORKS: readonly ForkName[] = ["PHASE0", "ALTAIR"];

/**
 * The types whose payload is one SSZ object, signed with no slashing condition: the Gloas duties
 * (consensus-specs gloas/validator.md and builder.md, builder-specs gloas; remote-signing-api
 * v1.4.0 names and `{version, data}` shapes, plus the bare shapes and names Lighthouse and older
 * Lodestar send: docs/signing.md).
 */
const OBJECT_TYPES: Readonly<Record<string, ObjectTypeSpec>> = {
  PAYLOAD_ATTESTATION_MESSAGE: {
    operation: "PAYLOAD_ATTESTATION_MESSAGE",
    // Lighthouse: payload_attestation_data; Lodestar before #10071: payload_attestation.
    payloadKeys: ["payload_attestation_message", "payload_attestation_data", "payload_attestation"],
    containers: { GLOAS: PayloadAttestationData },
    domainType: DOMAIN_PTC_ATTESTER,
    domain: "fork",
    slotPath: ["slot"],
  },
  EXECUTION_PAYLOAD_ENVELOPE: {
    operation: "EXECUTION_PAYLOAD_ENVELOPE",
    payloadKeys: ["execution_payload_envelope"],
    containers: { GLOAS: ExecutionPayloadEnvelope },
    domainType: DOMAIN_BEACON_BUILDER,
    domain: "fork",
    slotPath: ["payload", "slot_number"],
  },
  PROPOSER_PREFERENCES: {
    operation: "PROPOSER_PREFERENCES",
    payloadKeys: ["proposer_preferences"],
    containers: { GLOAS: ProposerPreferences },
    domainType: DOMAIN_PROPOSER_PREFERENCES,
    domain: "fork",
    slotPath: ["proposal_slot"],
  },
  EXECUTION_PAYLOAD_BID: {
    operation: "EXECUTION_PAYLOAD_BID",
    payloadKeys: ["execution_payload_bid"],
    containers: { GLOAS: ExecutionPayloadBid },
    domainType: DOMAIN_BEACON_BUILDER,
    domain: "fork",
    slotPath: ["slot"],
  },
  BUILDER_REQUEST_AUTH: {
    operation: "BUILDER_REQUEST_AUTH",
    // Lighthouse: REQUEST_AUTH with request_auth.
    payloadKeys: ["builder_request_auth", "request_auth"],
    containers: { GLOAS: BuilderRequestAuth },
    domainType: DOMAIN_BUILDER_REQUEST_AUTH,
    domain: "genesis",
    slotPath: ["slot"],
    // builder-specs (PR #165): `data` is what the builder checks the auth against; empty, it
    // authenticates the request to no builder at all, and the spec calls it invalid.
    refuse: (auth) =>
      (auth.data as Uint8Array).length === 0
        ? "data: must not be empty (builder-specs: a zero-length RequestAuth data is invalid)"
        : undefined,
  },
};

/** Other names clients send for a type of the table (Lighthouse's, Lodestar's before #10071). */
const OBJECT_TYPE_ALIASES: Readonly<Record<string, string>> = {
  PAYLOAD_ATTESTATION: "PAYLOAD_ATTESTATION_MESSAGE",
  REQUEST_AUTH: "BUILDER_REQUEST_AUTH",
};

function buildRequestTypes(preset: Preset): Map<string, RequestType> {
  const types = presetTypes(preset);
  const { AggregateAndProofGloas } = gloasPresetTypes(preset);
  const { slotsPerEpoch } = types;
  const epochOfSlot = (slot: bigint): bigint => slot / slotsPerEpoch;

  function blockMessage(objectRoot: Uint8Array, slot: bigint): Message {
    return {
      objectRoot,
      epoch: epochOfSlot(slot),
      domainType: DOMAIN_BEACON_PROPOSER,
      slashable: { kind: "block", slot },
    };
  }

  /** BLOCK_V2 `{version, block | block_header}`; a header is accepted for every version. */
  function decodeBeaconBlock(payload: unknown, path: string): Message {
    const request = objectAt(payload, path);
    const version = choiceAt(request.version, `${path}.version`, FORKS);
    if (request.block_header !== undefined) {
      const header = decodeJson(BeaconBlockHeader, request.block_header, `${path}.block_header`);
      return blockMessage(BeaconBlockHeader.hashTreeRoot(header), header.slot);
    }
    if (!FULL_BLOCK_FORKS.includes(version)) {
      throw invalidRequest(
        `${path}.block_header: required for version ${version} (a full block is accepted only for PHASE0 and ALTAIR)`,
      );
    }
    if (request.block === undefined) throw invalidRequest(`${path}.block: required`);
    if (version === "PHASE0") {
      const block = decodeJson(types.BeaconBlock, request.block, `${path}.block`);
      return blockMessage(types.BeaconBlock.hashTreeRoot(block), block.slot);
    }
    const block = decodeJson(types.BeaconBlockAltair, request.block, `${path}.block`);
    return blockMessage(types.BeaconBlockAltair.hashTreeRoot(block), block.slot);
  }

  /** Legacy BLOCK: a phase0 block under `block`. */
  function decodeLegacyBlock(payload: unknown, path: string): Message {
    const block = decodeJson(types.BeaconBlock, payload, path);
    return blockMessage(types.BeaconBlock.hashTreeRoot(block), block.slot);
  }

  const aggregateContainers = {
    phase0: types.AggregateAndProof,
    electra: types.AggregateAndProofElectra,
    gloas: AggregateAndProofGloas,
  };
  type AggregateShape = keyof typeof aggregateContainers;

  function aggregateShapeOf(version: ForkName): AggregateShape {
    if (forkAtLeast(version, "GLOAS")) return "gloas";
    return forkAtLeast(version, "ELECTRA") ? "electra" : "phase0";
  }

  /**
   * A bare aggregate (no `version`: Lighthouse) is phase0's without `committee_bits`; with them,
   * Gloas' progressive container once its slot is in Gloas on this network (by epoch, or by the
   * fork version fork_info gives it), Electra's before.
   */
  function bareAggregateShape(data: unknown, path: string, context: DecodeContext): AggregateShape {
    const aggregate = isJsonObject(data) ? data.aggregate : undefined;
    if (!isJsonObject(aggregate) || aggregate.committee_bits === undefined) return "phase0";
    const slotJson = isJsonObject(aggregate.data) ? aggregate.data.slot : undefined;
    // Without a slot, the container's decoder names the missing field.
    if (slotJson === undefined) return "electra";
    const slot = decodeJson(Slot, slotJson, `${path}.aggregate.data.slot`);
    const { network, forkInfo } = context;
    const epoch = epochOfSlot(slot);
    if (epoch >= network.gloasForkEpoch) return "gloas";
    const gloasVersion = network.gloasForkVersion;
    const version = forkInfo ? forkVersionAt(forkInfo.fork, epoch) : undefined;
    if (gloasVersion && version && Buffer.from(version).equals(gloasVersion)) return "gloas";
    return "electra";
  }

  /** A plain AggregateAndProof, or `{version, data}` (AGGREGATE_AND_PROOF_V2). */
  function decodeAggregateAndProof(
    payload: unknown,
    path: string,
    context: DecodeContext,
  ): Message {
    const { version, data, dataPath } = unwrapVersioned(payload, path, FORKS);
    const shape = version ? aggregateShapeOf(version) : bareAggregateShape(data, dataPath, context);
    const container = aggregateContainers[shape];
    const value = decodeJson(container, data, dataPath);
    return {
      objectRoot: container.hashTreeRoot(value as never),
      epoch: epochOfSlot(value.aggregate.data.slot),
      domainType: DOMAIN_AGGREGATE_AND_PROOF,
    };
  }

  const aggregateAndProof: RequestType = {
    operation: "AGGREGATE_AND_PROOF",
    payloadKeys: ["aggregate_and_proof"],
    domain: "fork",
    decode: decodeAggregateAndProof,
  };

  const requestTypes = new Map<string, RequestType>([
    [
      "AGGREGATION_SLOT",
      {
        operation: "AGGREGATION_SLOT",
        payloadKeys: ["aggregation_slot"],
        domain: "fork",
        decode: (payload, path) => {
          const { slot } = decodeJson(AggregationSlotPayload, payload, path);
          return {
            objectRoot: Slot.hashTreeRoot(slot),
            epoch: epochOfSlot(slot),
            domainType: DOMAIN_SELECTION_PROOF,
          };
        },
      },
    ],
    ["AGGREGATE_AND_PROOF", aggregateAndProof],
    ["AGGREGATE_AND_PROOF_V2", aggregateAndProof],
    [
      "ATTESTATION",
      {
        operation: "ATTESTATION",
        payloadKeys: ["attestation"],
        domain: "fork",
        // From Gloas, data.index is the payload status (0 or 1); the root and the slashing
        // rules do not change: two roots for one target are a double vote whatever the index.
        decode: (payload, path) => {
          const data = decodeJson(AttestationData, payload, path);
          return {
            objectRoot: attestationDataRoot(data),
            epoch: data.target.epoch,
            domainType: DOMAIN_BEACON_ATTESTER,
            slashable: {
              kind: "attestation",
              sourceEpoch: data.source.epoch,
              targetEpoch: data.target.epoch,
            },
          };
        },
      },
    ],
    [
      "BLOCK_V2",
      {
        operation: "BLOCK_V2",
        payloadKeys: ["beacon_block"],
        domain: "fork",
        decode: decodeBeaconBlock,
      },
    ],
    [
      "BLOCK",
      { operation: "BLOCK_V2", payloadKeys: ["block"], domain: "fork", decode: decodeLegacyBlock },
    ],
    [
      "RANDAO_REVEAL",
      {
        operation: "RANDAO_REVEAL",
        payloadKeys: ["randao_reveal"],
        domain: "fork",
        decode: (payload, path) => {
          const { epoch } = decodeJson(RandaoRevealPayload, payload, path);
          return { objectRoot: Epoch.hashTreeRoot(epoch), epoch, domainType: DOMAIN_RANDAO };
        },
      },
    ],
    [
      "VOLUNTARY_EXIT",
      {
        operation: "VOLUNTARY_EXIT",
        payloadKeys: ["voluntary_exit"],
        domain: "exit",
        decode: (payload, path) => {
          const exit = decodeJson(VoluntaryExit, payload, path);
          return {
            objectRoot: VoluntaryExit.hashTreeRoot(exit),
            epoch: exit.epoch,
            domainType: DOMAIN_VOLUNTARY_EXIT,
          };
        },
      },
    ],
    [
      "SYNC_COMMITTEE_MESSAGE",
      {
        operation: "SYNC_COMMITTEE_MESSAGE",
        payloadKeys: ["sync_committee_message"],
        domain: "fork",
        decode: (payload, path) => {
          const message = decodeJson(SyncCommitteeMessagePayload, payload, path);
          return {
            objectRoot: Root.hashTreeRoot(message.beacon_block_root),
            epoch: epochOfSlot(message.slot),
            domainType: DOMAIN_SYNC_COMMITTEE,
          };
        },
      },
    ],
    [
      "SYNC_COMMITTEE_SELECTION_PROOF",
      {
        operation: "SYNC_COMMITTEE_SELECTION_PROOF",
        payloadKeys: ["sync_aggregator_selection_data"],
        domain: "fork",
        decode: (payload, path) => {
          const data = decodeJson(SyncAggregatorSelectionData, payload, path);
          return {
            objectRoot: SyncAggregatorSelectionData.hashTreeRoot(data),
            epoch: epochOfSlot(data.slot),
            domainType: DOMAIN_SYNC_COMMITTEE_SELECTION_PROOF,
          };
        },
      },
    ],
    [
      "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
      {
        operation: "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
        payloadKeys: ["contribution_and_proof"],
        domain: "fork",
        decode: (payload, path) => {
          const value = decodeJson(types.ContributionAndProof, payload, path);
          return {
            objectRoot: types.ContributionAndProof.hashTreeRoot(value),
            epoch: epochOfSlot(value.contribution.slot),
            domainType: DOMAIN_CONTRIBUTION_AND_PROOF,
          };
        },
      },
    ],
    [
      "VALIDATOR_REGISTRATION",
      {
        operation: "VALIDATOR_REGISTRATION",
        payloadKeys: ["validator_registration"],
        domain: "genesis",
        decode: (payload, path) => {
          const registration = decodeJson(ValidatorRegistrationV1, payload, path);
          return {
            objectRoot: ValidatorRegistrationV1.hashTreeRoot(registration),
            epoch: 0n, // unused: the genesis domain pins the fork version
            domainType: DOMAIN_APPLICATION_BUILDER,
          };
        },
      },
    ],
  ]);
  for (const [name, spec] of Object.entries(OBJECT_TYPES)) {
    requestTypes.set(name, objectRequestType(spec, slotsPerEpoch));
  }
  for (const [alias, name] of Object.entries(OBJECT_TYPE_ALIASES)) {
    const requestType = requestTypes.get(name);
    if (requestType) requestTypes.set(alias, requestType);
  }
  return requestTypes;
}

/** The request types of a network's preset: built on its first request, then looked up. */
export const requestTypesOf: (preset: Preset) => Map<string, RequestType> =
  perPreset(buildRequestTypes);
