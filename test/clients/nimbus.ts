/**
 * Nimbus's remote signer client, as read from status-im/nimbus-eth2:
 * - beacon_chain/spec/eth2_apis/rest_remote_signer_calls.nim `signData`: `Accept:
 *   application/json` and a JSON body. On 200: no Content-Type, or a wildcard media type, is
 *   `InvalidContentType`; `text/plain` is bare hex; otherwise the body is decoded as
 *   `{signature}` (presto's decodeBytes, which wants application/json). 400/404/412/500 become
 *   Error400/Error404/Error412/Error500, with the message from a JSON `{error}` body if there is
 *   one, else a fixed text; 404, 412 and 500 are retried with back-off (10 ms … 5 s).
 * - beacon_chain/spec/eth2_apis/eth2_rest_serialization.nim `writeValue(Web3SignerRequest)`:
 *   `{type, fork_info, signingRoot, <payload>}` with absent optionals left out; BLOCK_V2 is always
 *   `{version (upper case), block_header}` and Nimbus signs blocks remotely only from Bellatrix
 *   ("Web3Signer implementation supports Bellatrix and newer"), plus an optional `proofs` field
 *   (Merkle proofs of block properties, when `provenBlockProperties` is configured);
 *   AGGREGATE_AND_PROOF before Electra, `AGGREGATE_AND_PROOF_V2 {version, data}` from Electra with
 *   the version in lower case (`ConsensusFork.toString`); VALIDATOR_REGISTRATION without fork_info.
 * - fork_info: the fork at the message epoch, with its activation epoch; a voluntary exit once
 *   Deneb is reached is signed with `voluntary_exit_signature_fork`: previous and current version
 *   both Capella, epoch GENESIS_EPOCH (irrelevant when the two versions are equal).
 * - `getKeys` (GET /api/v1/eth2/publicKeys, how Nimbus finds the keys behind --web3-signer-url)
 *   and `getUpcheck` (GET /upcheck) send `Accept: application/json` and decode the body as JSON,
 *   which presto only does for an application/json Content-Type.
 */
import {
  activationForkInfo,
  atLeast,
  CAPELLA_VERSION,
  type ClientFixture,
  type Duty,
  type ForkInfoJson,
  failure,
  forkInfoJson,
  mediaType,
  type Outcome,
  PAYLOAD_KEY,
  parseJson,
  type RawResponse,
  root32,
  type SignRequest,
  signatureField,
  signatureHex,
  stringArray,
  VERSION,
} from "./common";

/** presto's decodeBytes: JSON only from an application/json body. */
function decodeJson(response: RawResponse): unknown {
  if (response.status !== 200 || mediaType(response.contentType) !== "application/json") {
    return undefined;
  }
  return parseJson(response.body);
}

function forkInfo(duty: Duty): ForkInfoJson {
  if (duty.kind === "VOLUNTARY_EXIT" && atLeast(duty.fork, "deneb")) {
    return forkInfoJson(CAPELLA_VERSION, CAPELLA_VERSION, 0);
  }
  return activationForkInfo(duty.epoch);
}

/** A `proofs` extra as Nimbus sends it for a proven fee recipient (gindex 401, then 801). */
function proofs(duty: Duty) {
  const index = atLeast(duty.fork, "deneb") ? "801" : "401";
  const depth = index === "801" ? 9 : 8;
  return [{ index, proof: Array.from({ length: depth }, (_, i) => root32(duty.slot + i, "9f")) }];
}

function request(duty: Duty, signingRoot: string): SignRequest | undefined {
  if (duty.kind === "VALIDATOR_REGISTRATION") {
    return {
      label: "VALIDATOR_REGISTRATION (no fork_info)",
      body: { type: duty.kind, signingRoot, validator_registration: duty.payload },
    };
  }
  const head = { fork_info: forkInfo(duty), signingRoot };
  if (duty.kind === "BLOCK") {
    if (!atLeast(duty.fork, "bellatrix")) return undefined;
    return {
      label: `BLOCK_V2 {version, block_header}${duty.blinded ? " (blinded)" : ""} + proofs`,
      body: {
        type: "BLOCK_V2",
        ...head,
        beacon_block: { version: VERSION(duty.fork), block_header: duty.header },
        proofs: proofs(duty),
      },
    };
  }
  if (duty.kind === "AGGREGATE_AND_PROOF" && atLeast(duty.fork, "electra")) {
    return {
      label: "AGGREGATE_AND_PROOF_V2 {version (lower case), data}",
      body: {
        type: "AGGREGATE_AND_PROOF_V2",
        ...head,
        aggregate_and_proof: { version: duty.fork, data: duty.payload },
      },
    };
  }
  const label =
    duty.kind === "VOLUNTARY_EXIT" && atLeast(duty.fork, "deneb")
      ? "VOLUNTARY_EXIT (fork_info {capella, capella, 0})"
      : duty.kind;
  return { label, body: { type: duty.kind, ...head, [PAYLOAD_KEY[duty.kind]]: duty.payload } };
}

const DEFAULT_ERRORS: Record<number, string> = {
  400: "Remote signer returns 400 Bad Request Format Error",
  404: "Remote signer returns 404 Validator's Key Not Found Error",
  412: "Remote signer returns 412 Slashing Protection Error",
  500: "Remote signer returns 500 Internal Server Error",
};

/** Web3SignerErrorResponse: `{error}` from a JSON body, else the fixed text. */
function errorMessage(response: RawResponse): string {
  if (mediaType(response.contentType) === "application/json") {
    const json = parseJson(response.body);
    const error =
      typeof json === "object" && json !== null ? (json as { error?: unknown }).error : undefined;
    if (typeof error === "string") return error;
  }
  return (
    DEFAULT_ERRORS[response.status] ??
    `Remote signer returns unexpected status code ${response.status}`
  );
}

function parse(response: RawResponse): Outcome {
  switch (response.status) {
    case 200:
      break;
    case 404:
      return failure("unknown_key", `Error404: ${errorMessage(response)}`);
    case 412:
      return failure("slashing", `Error412: ${errorMessage(response)}`);
    case 400:
      return failure("failed", `Error400: ${errorMessage(response)}`);
    case 500:
      return failure("failed", `Error500: ${errorMessage(response)}`);
    default:
      return failure("failed", `UknownStatus: ${errorMessage(response)}`);
  }
  const media = mediaType(response.contentType);
  if (media === undefined || media.includes("*")) {
    return failure(
      "invalid_response",
      "InvalidContentType: Unable to decode signature from missing or incorrect content",
    );
  }
  if (media === "text/plain") {
    const signature = signatureHex(response.body, false);
    if (!signature) return failure("invalid_response", "InvalidPlain");
    return { ok: true, signature };
  }
  if (media !== "application/json") {
    return failure("invalid_response", "InvalidContent: unsupported content type");
  }
  const signature = signatureHex(signatureField(parseJson(response.body)), true);
  if (!signature) return failure("invalid_response", "InvalidContent");
  return { ok: true, signature };
}

export const nimbus: ClientFixture = {
  name: "Nimbus",
  source:
    "status-im/nimbus-eth2 beacon_chain/spec/eth2_apis/{rest_remote_signer_calls,eth2_rest_serialization}.nim",
  headers: { "Content-Type": "application/json", Accept: "application/json" },
  request,
  parse,
  publicKeys: {
    headers: { Accept: "application/json" },
    parse: (response) => stringArray(decodeJson(response)),
  },
  upcheck: {
    headers: { Accept: "application/json" },
    parse: (response) => {
      const json = decodeJson(response);
      const status =
        typeof json === "object" && json !== null
          ? (json as { status?: unknown }).status
          : undefined;
      return typeof status === "string" ? status === "OK" : undefined;
    },
  },
};

/** The statuses Nimbus retries with back-off, resending the same request (non-critical errors). */
export const NIMBUS_RETRIED_STATUSES: readonly number[] = [404, 412, 500];
