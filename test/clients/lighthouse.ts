/**
 * Lighthouse's Web3Signer client, as read from sigp/lighthouse:
 * - validator_client/signing_method/src/lib.rs: reqwest `.post(url).header(ACCEPT,
 *   "application/json").json(&request)` (so Content-Type: application/json), then
 *   `.error_for_status()` and `.json::<SigningResponse>()`: any non-2xx is
 *   `Web3SignerRequestFailed`, and the body is parsed as JSON `{signature}` whatever its
 *   Content-Type.
 * - validator_client/signing_method/src/web3signer.rs: `{type, fork_info?, signingRoot,
 *   <flattened object>}`; BLOCK_V2 is `{version, block}` for PHASE0/ALTAIR and
 *   `{version, block_header}` from BELLATRIX (full or blinded payload alike); aggregates are
 *   always AGGREGATE_AND_PROOF (the Electra container, with `committee_bits`, from Electra);
 *   VALIDATOR_REGISTRATION (and DEPOSIT, never sent) must not carry fork_info.
 * - validator_client/lighthouse_validator_store/src/lib.rs `signing_context`: fork_info is
 *   `spec.fork_at_epoch(signing_epoch)` (activation epoch); a voluntary exit whose epoch is at or
 *   after Deneb sends `{capella, capella, epoch: exit epoch}` (EIP-7044).
 */
import {
  activationForkInfo,
  atLeast,
  beaconBlockV2,
  CAPELLA_VERSION,
  type ClientFixture,
  type Duty,
  type ForkInfoJson,
  failure,
  forkInfoJson,
  type Outcome,
  PAYLOAD_KEY,
  parseJson,
  type RawResponse,
  type SignRequest,
  signatureField,
  signatureHex,
} from "./common";

const REASONS: Record<number, string> = {
  400: "Bad Request",
  404: "Not Found",
  412: "Precondition Failed",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

function forkInfo(duty: Duty): ForkInfoJson {
  if (duty.kind === "VOLUNTARY_EXIT" && atLeast(duty.fork, "deneb")) {
    return forkInfoJson(CAPELLA_VERSION, CAPELLA_VERSION, duty.epoch);
  }
  return activationForkInfo(duty.epoch);
}

function request(duty: Duty, signingRoot: string): SignRequest {
  if (duty.kind === "VALIDATOR_REGISTRATION") {
    return {
      label: "VALIDATOR_REGISTRATION (no fork_info)",
      body: { type: duty.kind, signingRoot, validator_registration: duty.payload },
    };
  }
  const head = { fork_info: forkInfo(duty), signingRoot };
  if (duty.kind === "BLOCK") {
    const { label, value } = beaconBlockV2(duty);
    return { label, body: { type: "BLOCK_V2", ...head, beacon_block: value } };
  }
  let label: string = duty.kind;
  if (duty.kind === "AGGREGATE_AND_PROOF" && atLeast(duty.fork, "electra")) {
    label = "AGGREGATE_AND_PROOF (Electra container, no version)";
  }
  if (duty.kind === "VOLUNTARY_EXIT" && atLeast(duty.fork, "deneb")) {
    label = "VOLUNTARY_EXIT (fork_info {capella, capella, exit epoch})";
  }
  return { label, body: { type: duty.kind, ...head, [PAYLOAD_KEY[duty.kind]]: duty.payload } };
}

function parse(response: RawResponse): Outcome {
  if (response.status < 200 || response.status > 299) {
    const reason = REASONS[response.status] ?? "";
    return failure(
      "failed",
      `Web3SignerRequestFailed("HTTP status client error (${response.status} ${reason}) for url ...")`,
    );
  }
  const json = parseJson(response.body);
  if (json === undefined) return failure("invalid_response", "Web3SignerJsonParsingFailed");
  // serde: `signature` is a 0x-prefixed hex string of a 96-byte compressed point.
  const signature = signatureHex(signatureField(json), true);
  if (!signature) return failure("invalid_response", "Web3SignerJsonParsingFailed");
  return { ok: true, signature };
}

export const lighthouse: ClientFixture = {
  name: "Lighthouse",
  source: "sigp/lighthouse validator_client/signing_method/src/{lib.rs,web3signer.rs}",
  // reqwest lower-cases header names.
  headers: { accept: "application/json", "content-type": "application/json" },
  request,
  parse,
};
