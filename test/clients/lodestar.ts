/**
 * Lodestar's external signer client, packages/validator/src/util/externalSignerClient.ts in
 * ChainSafe/lodestar, in two versions.
 *
 * Current (`lodestar`):
 * - `Accept: application/json` and `Content-Type: application/json`. A non-ok status throws the
 *   body text (or the status text); a 200 needs a Content-Type whose media type (before `;`,
 *   trimmed, lower-cased) is exactly application/json, then `res.json()`.
 * - Body: the payload key first, then `type`, `signingRoot`, `fork_info`. fork_info is
 *   `getForkInfoForSigning`: the fork at the signing slot with **the signing slot's epoch**, not
 *   the activation epoch; a VOLUNTARY_EXIT whose fork is Deneb or later sends the Capella fork
 *   (`{bellatrix, capella, capella's epoch}`, EIP-7044). No fork_info for VALIDATOR_REGISTRATION.
 * - BLOCK_V2 `{version, block}` before Bellatrix, `{version, block_header}` after (full or
 *   blinded, `blindedOrFullBlockToHeader`); AGGREGATE_AND_PROOF before Electra,
 *   `AGGREGATE_AND_PROOF_V2 {version (upper case), data}` from Electra.
 * - `externalSignerGetKeys` and `externalSignerUpCheck`: GET with `Accept: application/json`,
 *   read by the same handler (`{status}` must be "OK").
 *
 * 1.5.x (`lodestarLegacy`, the era of the `@lodestar/validator@1.5.1` npm package that exports
 * `externalSignerPostSignature`): cross-fetch with only `Content-Type: application/json`, so
 * node-fetch's default wildcard Accept (`*` slash `*`); the body is `JSON.parse`d whatever the Content-Type;
 * fork_info always uses the signing slot's epoch (no EIP-7044 case: it predates Deneb); only
 * AGGREGATE_AND_PROOF. It knew the forks up to Capella. Its GETs (keys, upcheck) carry the same
 * headers, and their bodies are `JSON.parse`d too.
 *
 * The real library is not used: `@lodestar/validator` is not in node_modules (only
 * `@lodestar/{config,params,types,utils}` are), and nothing new is installed for this suite.
 * The fork_info below is built with the real `@lodestar/config` the client itself uses.
 */
import { ForkSeq } from "@lodestar/params";
import {
  atLeast,
  beaconBlockV2,
  type ClientFixture,
  type Duty,
  type ForkInfoJson,
  failure,
  forkIndex,
  forkInfoJson,
  MAINNET,
  mediaType,
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

/** getForkInfoForSigning (current); `exitRule: false` is 1.5.x, which had no EIP-7044 case. */
function forkInfo(duty: Duty, exitRule: boolean): ForkInfoJson {
  const fork = MAINNET.getForkInfo(duty.slot);
  if (exitRule && duty.kind === "VOLUNTARY_EXIT" && fork.seq >= ForkSeq.deneb) {
    const capella = MAINNET.forks.capella;
    return forkInfoJson(capella.prevVersion, capella.version, capella.epoch);
  }
  return forkInfoJson(fork.prevVersion, fork.version, Math.floor(duty.slot / 32));
}

function payload(duty: Duty, current: boolean): { label: string; fields: Record<string, unknown> } {
  switch (duty.kind) {
    case "BLOCK": {
      const { label, value } = beaconBlockV2(duty);
      return { label, fields: { beacon_block: value } };
    }
    case "AGGREGATE_AND_PROOF":
      if (current && atLeast(duty.fork, "electra")) {
        return {
          label: "AGGREGATE_AND_PROOF_V2 {version, data}",
          fields: { aggregate_and_proof: { version: VERSION(duty.fork), data: duty.payload } },
        };
      }
      return { label: duty.kind, fields: { aggregate_and_proof: duty.payload } };
    default:
      return { label: duty.kind, fields: { [PAYLOAD_KEY[duty.kind]]: duty.payload } };
  }
}

function requestFor(current: boolean) {
  return (duty: Duty, signingRoot: string): SignRequest | undefined => {
    if (!current && forkIndex(duty.fork) > forkIndex("capella")) return undefined;
    const { label, fields } = payload(duty, current);
    const type =
      duty.kind === "BLOCK"
        ? "BLOCK_V2"
        : label.startsWith("AGGREGATE_AND_PROOF_V2")
          ? "AGGREGATE_AND_PROOF_V2"
          : duty.kind;
    if (duty.kind === "VALIDATOR_REGISTRATION") {
      return {
        label: "VALIDATOR_REGISTRATION (no fork_info)",
        body: { ...fields, type, signingRoot },
      };
    }
    let shown = label;
    if (duty.kind === "VOLUNTARY_EXIT" && current && atLeast(duty.fork, "deneb")) {
      shown = "VOLUNTARY_EXIT (fork_info: the Capella fork)";
    }
    return {
      label: `${shown} [fork_info.epoch = message epoch]`,
      body: { ...fields, type, signingRoot, fork_info: forkInfo(duty, current) },
    };
  };
}

const STATUS_TEXT: Record<number, string> = {
  404: "Not Found",
  412: "Precondition Failed",
};

/** handleExternalSignerResponse (current): the JSON body, or the Error it throws. */
function handleCurrent(response: RawResponse): { json: unknown } | { error: Outcome } {
  if (response.status < 200 || response.status > 299) {
    return { error: failure("failed", response.body || (STATUS_TEXT[response.status] ?? "")) };
  }
  if (response.contentType === undefined) {
    return { error: failure("invalid_response", "No Content-Type header found in response") };
  }
  const media = mediaType(response.contentType);
  if (media !== "application/json") {
    return { error: failure("invalid_response", `Unsupported response media type: ${media}`) };
  }
  const json = parseJson(response.body);
  if (json === undefined) return { error: failure("invalid_response", "Invalid json response") };
  return { json };
}

/** handlerExternalSignerResponse (1.5.x): JSON.parse of any 2xx body. */
function handleLegacy(response: RawResponse): unknown {
  if (response.status < 200 || response.status > 299) return undefined;
  return parseJson(response.body);
}

const statusOk = (json: unknown): boolean | undefined => {
  const status =
    typeof json === "object" && json !== null ? (json as { status?: unknown }).status : undefined;
  return json === undefined ? undefined : status === "OK";
};

function parseCurrent(response: RawResponse): Outcome {
  const handled = handleCurrent(response);
  if ("error" in handled) return handled.error;
  const signature = signatureHex(signatureField(handled.json), false);
  if (!signature) return failure("invalid_response", "no signature in the response");
  return { ok: true, signature };
}

function parseLegacy(response: RawResponse): Outcome {
  if (response.status < 200 || response.status > 299) return failure("failed", response.body);
  const json = parseJson(response.body);
  if (json === undefined) return failure("invalid_response", "Unexpected token in JSON");
  const signature = signatureHex(signatureField(json), false);
  if (!signature) return failure("invalid_response", "no signature in the response");
  return { ok: true, signature };
}

export const lodestar: ClientFixture = {
  name: "Lodestar",
  source: "ChainSafe/lodestar packages/validator/src/util/externalSignerClient.ts (current)",
  headers: { Accept: "application/json", "Content-Type": "application/json" },
  request: requestFor(true),
  parse: parseCurrent,
  // externalSignerGetKeys and externalSignerUpCheck: GET with `Accept: application/json`.
  publicKeys: {
    headers: { Accept: "application/json" },
    parse: (response) => {
      const handled = handleCurrent(response);
      return "json" in handled ? stringArray(handled.json) : undefined;
    },
  },
  upcheck: {
    headers: { Accept: "application/json" },
    parse: (response) => {
      const handled = handleCurrent(response);
      return "json" in handled ? statusOk(handled.json) : undefined;
    },
  },
};

export const lodestarLegacy: ClientFixture = {
  name: "Lodestar 1.5.x",
  source: "ChainSafe/lodestar packages/validator/src/util/externalSignerClient.ts (v1.5)",
  // cross-fetch (node-fetch 2) adds `Accept: */*` when none is given.
  headers: { "Content-Type": "application/json", Accept: "*/*" },
  request: requestFor(false),
  parse: parseLegacy,
  // 1.5.x sent `Content-Type: application/json` on its GETs too (and node-fetch's wildcard Accept).
  publicKeys: {
    headers: { "Content-Type": "application/json", Accept: "*/*" },
    parse: (response) => stringArray(handleLegacy(response)),
  },
  upcheck: {
    headers: { "Content-Type": "application/json", Accept: "*/*" },
    parse: (response) => statusOk(handleLegacy(response)),
  },
};
