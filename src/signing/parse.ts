/**
 * A Web3Signer eth2 sign request body → a validated `SigningRequest` whose signing root sigil
 * computed itself from the payload. Envelope: `{type, fork_info?, signingRoot? | signing_root?,
 * <payload>}`; the payload key depends on the type. A supplied signing root is only compared.
 */
import { ContainerType } from "@chainsafe/ssz";
import type { SlashableMessage } from "../antislashing/guard";
import { SigilError } from "../errors";
import { toHex } from "../wire/hex";
import type { SigningOperation } from "../wire/operations";
import {
  builderDomain,
  computeSigningRoot,
  type ForkInfoValue,
  forkDomain,
  voluntaryExitDomain,
} from "./domain";
import { decodeJson, invalidRequest, kindOf } from "./json";
import type { NetworkConstants } from "./network";
import type { Preset } from "./preset";
import type { SigningRequest } from "./request";
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
  ForkInfo,
  type PresetTypes,
  presetTypes,
  Root,
  Slot,
  SyncAggregatorSelectionData,
  ValidatorRegistrationV1,
  VoluntaryExit,
} from "./ssz";

/** The JSON wrappers of bare values; only used to decode them. */
const AggregationSlotPayload = new ContainerType({ slot: Slot });
const RandaoRevealPayload = new ContainerType({ epoch: Epoch });
const SyncCommitteeMessagePayload = new ContainerType({ beacon_block_root: Root, slot: Slot });

/** What a payload contributes to the signing root. */
interface Message {
  readonly objectRoot: Uint8Array;
  /** The epoch that selects the fork version. */
  readonly epoch: bigint;
  readonly domainType: Uint8Array;
  readonly slashable?: SlashableMessage;
}

interface RequestType {
  readonly operation: SigningOperation;
  readonly payloadKey: string;
  readonly decode: (payload: unknown, path: string) => Message;
}

type Json = Record<string, unknown>;

function isJsonObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function objectAt(value: unknown, path: string): Json {
  if (!isJsonObject(value)) throw invalidRequest(`${path}: expected an object`);
  return value;
}

/** An upper-cased enum string such as a fork `version`. */
function choiceAt<T extends string>(value: unknown, path: string, choices: readonly T[]): T {
  if (value === undefined) throw invalidRequest(`${path}: required`);
  const upper = typeof value === "string" ? value.toUpperCase() : undefined;
  const choice = choices.find((c) => c === upper);
  if (choice === undefined) {
    throw invalidRequest(`${path}: expected one of ${choices.join(", ")}, got ${kindOf(value)}`);
  }
  return choice;
}

const FORKS = ["PHASE0", "ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"] as const;
type ForkName = (typeof FORKS)[number];
const FULL_BLOCK_FORKS: readonly ForkName[] = ["PHASE0", "ALTAIR"];
const ELECTRA_AGGREGATE_FORKS: readonly ForkName[] = ["ELECTRA", "FULU"];

/**
 * How to read each request `type` (upper case) with the containers and the epoch length of one
 * preset. Built once per preset (`requestTypesOf`), so that a request only looks its map up.
 */
function buildRequestTypes(types: PresetTypes): Map<string, RequestType> {
  const {
    AggregateAndProof,
    AggregateAndProofElectra,
    BeaconBlock,
    BeaconBlockAltair,
    ContributionAndProof,
    slotsPerEpoch,
  } = types;
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
      const block = decodeJson(BeaconBlock, request.block, `${path}.block`);
      return blockMessage(BeaconBlock.hashTreeRoot(block), block.slot);
    }
    const block = decodeJson(BeaconBlockAltair, request.block, `${path}.block`);
    return blockMessage(BeaconBlockAltair.hashTreeRoot(block), block.slot);
  }

  /** Legacy BLOCK: a phase0 block under `block`. */
  function decodeLegacyBlock(payload: unknown, path: string): Message {
    const block = decodeJson(BeaconBlock, payload, path);
    return blockMessage(BeaconBlock.hashTreeRoot(block), block.slot);
  }

  /**
   * A plain AggregateAndProof, or `{version, data}` (AGGREGATE_AND_PROOF_V2). A plain one is the
   * Electra container when its aggregate carries `committee_bits` (Lighthouse sends it so).
   */
  function decodeAggregateAndProof(payload: unknown, path: string): Message {
    const request = objectAt(payload, path);
    let electra: boolean;
    let data: unknown;
    let dataPath: string;
    if (request.version !== undefined) {
      const version = choiceAt(request.version, `${path}.version`, FORKS);
      electra = ELECTRA_AGGREGATE_FORKS.includes(version);
      if (request.data === undefined) throw invalidRequest(`${path}.data: required`);
      data = request.data;
      dataPath = `${path}.data`;
    } else {
      const aggregate = request.aggregate;
      electra = isJsonObject(aggregate) && aggregate.committee_bits !== undefined;
      data = request;
      dataPath = path;
    }
    if (electra) {
      const value = decodeJson(AggregateAndProofElectra, data, dataPath);
      return {
        objectRoot: AggregateAndProofElectra.hashTreeRoot(value),
        epoch: epochOfSlot(value.aggregate.data.slot),
        domainType: DOMAIN_AGGREGATE_AND_PROOF,
      };
    }
    const value = decodeJson(AggregateAndProof, data, dataPath);
    return {
      objectRoot: AggregateAndProof.hashTreeRoot(value),
      epoch: epochOfSlot(value.aggregate.data.slot),
      domainType: DOMAIN_AGGREGATE_AND_PROOF,
    };
  }

  const aggregateAndProof: RequestType = {
    operation: "AGGREGATE_AND_PROOF",
    payloadKey: "aggregate_and_proof",
    decode: decodeAggregateAndProof,
  };

  return new Map<string, RequestType>([
    [
      "AGGREGATION_SLOT",
      {
        operation: "AGGREGATION_SLOT",
        payloadKey: "aggregation_slot",
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
        payloadKey: "attestation",
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
    ["BLOCK_V2", { operation: "BLOCK_V2", payloadKey: "beacon_block", decode: decodeBeaconBlock }],
    ["BLOCK", { operation: "BLOCK_V2", payloadKey: "block", decode: decodeLegacyBlock }],
    [
      "RANDAO_REVEAL",
      {
        operation: "RANDAO_REVEAL",
        payloadKey: "randao_reveal",
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
        payloadKey: "voluntary_exit",
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
        payloadKey: "sync_committee_message",
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
        payloadKey: "sync_aggregator_selection_data",
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
        payloadKey: "contribution_and_proof",
        decode: (payload, path) => {
          const value = decodeJson(ContributionAndProof, payload, path);
          return {
            objectRoot: ContributionAndProof.hashTreeRoot(value),
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
        payloadKey: "validator_registration",
        decode: (payload, path) => {
          const registration = decodeJson(ValidatorRegistrationV1, payload, path);
          return {
            objectRoot: ValidatorRegistrationV1.hashTreeRoot(registration),
            epoch: 0n, // unused: builderDomain pins the fork version to the network's genesis
            domainType: DOMAIN_APPLICATION_BUILDER,
          };
        },
      },
    ],
  ]);
}

const requestTypesByPreset = new Map<Preset, Map<string, RequestType>>();

/** The request types of a network's preset: built on its first request, then looked up. */
function requestTypesOf(preset: Preset): Map<string, RequestType> {
  let requestTypes = requestTypesByPreset.get(preset);
  if (!requestTypes) {
    requestTypes = buildRequestTypes(presetTypes(preset));
    requestTypesByPreset.set(preset, requestTypes);
  }
  return requestTypes;
}

function requestTypeOf(type: unknown, requestTypes: Map<string, RequestType>): RequestType {
  if (type === undefined || type === null) throw invalidRequest("type: required");
  if (typeof type !== "string") throw invalidRequest("type: expected a string");
  const requestType = requestTypes.get(type.toUpperCase());
  if (!requestType) {
    const shown = JSON.stringify(type.length > 64 ? `${type.slice(0, 61)}...` : type);
    throw new SigilError(
      "unsupported_operation",
      `unsupported signing type ${shown}; supported: ${[...requestTypes.keys()].join(", ")}`,
    );
  }
  return requestType;
}

/** `signingRoot` (as all clients send it) and/or `signing_root`, each checked if present. */
function suppliedRoots(body: Json): { key: string; root: Uint8Array }[] {
  const roots: { key: string; root: Uint8Array }[] = [];
  for (const key of ["signingRoot", "signing_root"]) {
    const value = body[key];
    if (value !== undefined && value !== null)
      roots.push({ key, root: decodeJson(Root, value, key) });
  }
  return roots;
}

export function parseSigningRequest(body: unknown, network: NetworkConstants): SigningRequest {
  if (!isJsonObject(body)) throw invalidRequest("request body: expected a JSON object");
  const requestType = requestTypeOf(body.type, requestTypesOf(network.preset));
  const { operation, payloadKey } = requestType;
  const supplied = suppliedRoots(body);

  const payload = body[payloadKey];
  if (payload === undefined || payload === null) {
    throw invalidRequest(`${payloadKey}: required for type ${operation}`);
  }

  let forkInfo: ForkInfoValue | undefined;
  if (operation !== "VALIDATOR_REGISTRATION") {
    if (body.fork_info === undefined || body.fork_info === null) {
      throw invalidRequest(`fork_info: required for type ${operation}`);
    }
    forkInfo = decodeJson(ForkInfo, body.fork_info, "fork_info");
  }

  const message = requestType.decode(payload, payloadKey);
  let domain: Uint8Array;
  if (!forkInfo) {
    domain = builderDomain(network); // VALIDATOR_REGISTRATION
  } else if (operation === "VOLUNTARY_EXIT") {
    domain = voluntaryExitDomain(message.epoch, forkInfo, network);
  } else {
    domain = forkDomain(message.domainType, message.epoch, forkInfo);
  }
  const signingRoot = computeSigningRoot(message.objectRoot, domain);

  for (const { key, root } of supplied) {
    if (!Buffer.from(root).equals(signingRoot)) {
      throw new SigilError(
        "signing_root_mismatch",
        `supplied ${key} ${toHex(root)} does not match the computed ${toHex(signingRoot)}`,
      );
    }
  }

  return {
    operation,
    signingRoot,
    ...(message.slashable ? { slashable: message.slashable } : {}),
    ...(forkInfo ? { genesisValidatorsRoot: forkInfo.genesis_validators_root } : {}),
  };
}
