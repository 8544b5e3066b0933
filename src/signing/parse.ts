/**
 * A Web3Signer eth2 sign request body → a validated `SigningRequest` whose signing root sigil
 * computed itself from the payload. Envelope: `{type, fork_info?, signingRoot? | signing_root?,
 * <payload>}`; the payload key depends on the type. A supplied signing root is only compared.
 */
import { SigilError } from "../errors";
import { toHex } from "../wire/hex";
import {
  builderDomain,
  computeSigningRoot,
  type ForkInfoValue,
  forkDomain,
  voluntaryExitDomain,
} from "./domain";
import { decodeJson, invalidRequest } from "./json";
import type { NetworkConstants } from "./network";
import type { SigningRequest } from "./request";
import { isJsonObject, type Json, type RequestType } from "./request-type";
import { requestTypesOf } from "./request-types";
import { ForkInfo, Root } from "./ssz";

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

/** The payload under the first of the type's keys that the body has. */
function payloadOf(body: Json, requestType: RequestType): { key: string; payload: unknown } {
  for (const key of requestType.payloadKeys) {
    const payload = body[key];
    if (payload !== undefined && payload !== null) return { key, payload };
  }
  const [canonical, ...others] = requestType.payloadKeys;
  const or = others.length > 0 ? ` (or ${others.join(", ")})` : "";
  throw invalidRequest(`${canonical}: required for type ${requestType.operation}${or}`);
}

export function parseSigningRequest(body: unknown, network: NetworkConstants): SigningRequest {
  if (!isJsonObject(body)) throw invalidRequest("request body: expected a JSON object");
  const requestType = requestTypeOf(body.type, requestTypesOf(network.preset));
  const { operation } = requestType;
  const supplied = suppliedRoots(body);
  const { key, payload } = payloadOf(body, requestType);

  let forkInfo: ForkInfoValue | undefined;
  if (requestType.domain !== "genesis") {
    if (body.fork_info === undefined || body.fork_info === null) {
      throw invalidRequest(`fork_info: required for type ${operation}`);
    }
    forkInfo = decodeJson(ForkInfo, body.fork_info, "fork_info");
  }

  const message = requestType.decode(payload, key, { network, forkInfo });
  let domain: Uint8Array;
  if (!forkInfo) {
    domain = builderDomain(message.domainType, network);
  } else if (requestType.domain === "exit") {
    domain = voluntaryExitDomain(message.epoch, forkInfo, network);
  } else {
    domain = forkDomain(message.domainType, message.epoch, forkInfo);
  }
  const signingRoot = computeSigningRoot(message.objectRoot, domain);

  for (const { key: rootKey, root } of supplied) {
    if (!Buffer.from(root).equals(signingRoot)) {
      throw new SigilError(
        "signing_root_mismatch",
        `supplied ${rootKey} ${toHex(root)} does not match the computed ${toHex(signingRoot)}`,
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
