/**
 * Teku's external signer, as read from Consensys/teku validator/client/.../signer/:
 * - ExternalSigner.java `sign`: java.net.http with only `Content-Type: application/json` (no
 *   Accept header). The answer: 412 → `ExternalSignerException` with the slashing message
 *   ("External signer refused to sign … may violate a slashing condition"); any other non-200 →
 *   "Invalid response status code: N"; a 200 whose Content-Type starts with application/json is
 *   read as `{signature}`, anything else as bare hex (`Bytes.fromHexString`, 0x optional).
 * - ExternalSignerBlockRequestProvider.java: PHASE0 → legacy `BLOCK` with `block`; ALTAIR →
 *   `BLOCK_V2 {version, block}`; BELLATRIX on → `BLOCK_V2 {version, block_header}` (blinded too).
 * - Aggregates: AGGREGATE_AND_PROOF (as in ../shared/clients.md; from Electra the aggregate
 *   carries `committee_bits`). VALIDATOR_REGISTRATION has no fork_info.
 * - fork_info is the `ForkInfo` of the state at the message: the fork with its activation epoch
 *   (exits too; EIP-7044 is left to the signer).
 * - ExternalSignerUpcheck.java: GET /upcheck without headers, up when the status is 200 (body
 *   discarded). `--validators-external-signer-public-keys=external-signer` (or the URL of
 *   /api/v1/eth2/publicKeys) reads the keys as a JSON array; the request is modelled with
 *   java.net.http's defaults (no Accept header).
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
} from "./common";

function request(duty: Duty, signingRoot: string): SignRequest {
  if (duty.kind === "VALIDATOR_REGISTRATION") {
    return {
      label: "VALIDATOR_REGISTRATION (no fork_info)",
      body: { signingRoot, type: duty.kind, validator_registration: duty.payload },
    };
  }
  const head = { signingRoot, fork_info: activationForkInfo(duty.epoch) };
  if (duty.kind === "BLOCK") {
    if (duty.fork === "phase0") {
      return {
        label: "BLOCK {block} (legacy)",
        body: { ...head, type: "BLOCK", block: duty.payload },
      };
    }
    const { label, value } = beaconBlockV2(duty);
    return { label, body: { ...head, type: "BLOCK_V2", beacon_block: value } };
  }
  let label: string = duty.kind;
  if (duty.kind === "AGGREGATE_AND_PROOF" && atLeast(duty.fork, "electra")) {
    label = "AGGREGATE_AND_PROOF (Electra container, no version)";
  }
  return { label, body: { ...head, type: duty.kind, [PAYLOAD_KEY[duty.kind]]: duty.payload } };
}

/** ExternalSigner.slashable*Message: the error Teku raises for a 412. */
function slashingMessage(duty: Duty | undefined): string {
  if (duty?.kind === "BLOCK") {
    return `External signer refused to sign block at slot ${duty.slot} as it may violate a slashing condition`;
  }
  if (duty?.kind === "ATTESTATION") {
    const target = duty.payload.target as { epoch: string };
    const source = duty.payload.source as { epoch: string };
    return `External signer refused to sign attestation at slot ${duty.payload.slot} with source epoch ${source.epoch} and target epoch ${target.epoch} because it may violate a slashing condition`;
  }
  return `External signer refused to sign ${duty?.kind ?? "message"} because it may violate a slashing condition`;
}

function parse(response: RawResponse, duty?: Duty): Outcome {
  if (response.status === 412) return failure("slashing", slashingMessage(duty));
  if (response.status !== 200) {
    return failure("failed", `Invalid response status code: ${response.status}`);
  }
  const contentType = response.contentType ?? "";
  const text = contentType.startsWith("application/json")
    ? signatureField(parseJson(response.body))
    : response.body;
  const signature = signatureHex(text, false);
  if (!signature) return failure("invalid_response", "Returned an invalid signature");
  return { ok: true, signature };
}

export const teku: ClientFixture = {
  name: "Teku",
  source:
    "Consensys/teku validator/client/src/main/java/tech/pegasys/teku/validator/client/signer/",
  headers: { "Content-Type": "application/json" },
  request,
  parse,
  publicKeys: { headers: {}, parse: (response) => stringArray(parseJson(response.body)) },
  upcheck: { headers: {}, parse: (response) => response.status === 200 },
};
