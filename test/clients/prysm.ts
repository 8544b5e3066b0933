/**
 * Prysm's remote-web3signer keymanager, as read from prysmaticlabs/prysm
 * validator/keymanager/remote-web3signer/:
 * - internal/client.go: Go net/http with only `Content-Type: application/json` (no Accept).
 *   `doRequest` turns 500 into "internal Web3Signer server error" and 400 into "bad request
 *   format"; `Sign` turns 404 into "public key not found" and 412 into "signing operation failed
 *   due to slashing protection rules"; otherwise a Content-Type starting with application/json is
 *   read as `{signature}`, anything else as bare hex through `hexutil.Decode` (0x required). Any
 *   other status falls through to that parsing.
 * - v1/web3signer_types.go, v1/requests.go: `{type, fork_info, signingRoot, <payload>}`; PHASE0
 *   blocks are the legacy `BLOCK` with `block`, ALTAIR `BLOCK_V2 {version, block}`, BELLATRIX on
 *   `BLOCK_V2 {version, block_header}` (blinded too); aggregates are AGGREGATE_AND_PROOF before
 *   Electra and `AGGREGATE_AND_PROOF_V2 {version, data}` from Electra; the
 *   VALIDATOR_REGISTRATION request type has no fork_info field at all.
 * - fork_info: the fork at the signing slot with its activation epoch.
 * - `GetPublicKeys` (keys from a URL): the same `doRequest`, so a GET that carries
 *   `Content-Type: application/json`, its body decoded as a JSON array whatever its Content-Type.
 */
import {
  activationForkInfo,
  atLeast,
  beaconBlockV2,
  type ClientFixture,
  type Duty,
  failure,
  type Outcome,
  PAYLOAD_KEY,
  parseJson,
  type RawResponse,
  type SignRequest,
  signatureField,
  signatureHex,
  stringArray,
  VERSION,
} from "./common";

function request(duty: Duty, signingRoot: string): SignRequest {
  if (duty.kind === "VALIDATOR_REGISTRATION") {
    return {
      label: "VALIDATOR_REGISTRATION (no fork_info)",
      body: { type: duty.kind, signingRoot, validator_registration: duty.payload },
    };
  }
  const head = { fork_info: activationForkInfo(duty.epoch), signingRoot };
  if (duty.kind === "BLOCK") {
    if (duty.fork === "phase0") {
      return {
        label: "BLOCK {block} (legacy)",
        body: { type: "BLOCK", ...head, block: duty.payload },
      };
    }
    const { label, value } = beaconBlockV2(duty);
    return { label, body: { type: "BLOCK_V2", ...head, beacon_block: value } };
  }
  if (duty.kind === "AGGREGATE_AND_PROOF" && atLeast(duty.fork, "electra")) {
    return {
      label: "AGGREGATE_AND_PROOF_V2 {version, data}",
      body: {
        type: "AGGREGATE_AND_PROOF_V2",
        ...head,
        aggregate_and_proof: { version: VERSION(duty.fork), data: duty.payload },
      },
    };
  }
  return {
    label: duty.kind,
    body: { type: duty.kind, ...head, [PAYLOAD_KEY[duty.kind]]: duty.payload },
  };
}

function parse(response: RawResponse): Outcome {
  if (response.status === 500) return failure("failed", "internal Web3Signer server error");
  if (response.status === 400) return failure("failed", "bad request format");
  if (response.status === 404) return failure("unknown_key", "public key not found");
  if (response.status === 412) {
    return failure("slashing", "signing operation failed due to slashing protection rules");
  }
  const contentType = response.contentType ?? "";
  const text = contentType.startsWith("application/json")
    ? signatureField(parseJson(response.body))
    : response.body;
  const signature = signatureHex(text, true);
  if (!signature) return failure("invalid_response", "could not decode the signature");
  return { ok: true, signature };
}

export const prysm: ClientFixture = {
  name: "Prysm",
  source: "prysmaticlabs/prysm validator/keymanager/remote-web3signer/{internal/client.go,v1/}",
  // Go canonicalises header names.
  headers: { "Content-Type": "application/json" },
  request,
  parse,
  publicKeys: {
    headers: { "Content-Type": "application/json" },
    parse: (response) =>
      response.status === 200 ? stringArray(parseJson(response.body)) : undefined,
  },
};
