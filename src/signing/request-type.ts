/**
 * What a sign request `type` is: its operation, the payload key(s) it is read from, how its
 * payload becomes an object root and a message epoch, and which domain signs it. The table of
 * types is request-types.ts; the envelope around them is parse.ts.
 */
import type { Type } from "@chainsafe/ssz";
import type { SlashableMessage } from "../antislashing/guard";
import type { SigningOperation } from "../wire/operations";
import type { ForkInfoValue } from "./domain";
import type { ForkName } from "./forks";
import { decodeJson, invalidRequest, kindOf } from "./json";
import type { NetworkConstants } from "./network";

/** What a payload contributes to the signing root. */
export interface Message {
  readonly objectRoot: Uint8Array;
  /** The epoch that selects the fork version (unused for a genesis domain). */
  readonly epoch: bigint;
  readonly domainType: Uint8Array;
  readonly slashable?: SlashableMessage;
}

/** What a decoder may look at besides its payload. */
export interface DecodeContext {
  readonly network: NetworkConstants;
  /** Absent for the types signed over the genesis domain. */
  readonly forkInfo: ForkInfoValue | undefined;
}

/**
 * How the domain is chosen:
 * - `fork`: the fork version `fork_info` gives for the message epoch (get_domain);
 * - `genesis`: the network's genesis fork version and a zero root, no `fork_info` (compute_domain,
 *   as the builder API's messages are signed);
 * - `exit`: VOLUNTARY_EXIT's EIP-7044 rule (domain.ts).
 */
export type DomainRule = "fork" | "genesis" | "exit";

export interface RequestType {
  readonly operation: SigningOperation;
  /** Where the payload is read from: the first of these keys the body has. */
  readonly payloadKeys: readonly string[];
  readonly domain: DomainRule;
  readonly decode: (payload: unknown, path: string, context: DecodeContext) => Message;
}

export type Json = Record<string, unknown>;

export function isJsonObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function objectAt(value: unknown, path: string): Json {
  if (!isJsonObject(value)) throw invalidRequest(`${path}: expected an object`);
  return value;
}

/** An upper-cased enum string such as a fork `version`. */
export function choiceAt<T extends string>(value: unknown, path: string, choices: readonly T[]): T {
  if (value === undefined) throw invalidRequest(`${path}: required`);
  const upper = typeof value === "string" ? value.toUpperCase() : undefined;
  const choice = choices.find((c) => c === upper);
  if (choice === undefined) {
    throw invalidRequest(`${path}: expected one of ${choices.join(", ")}, got ${kindOf(value)}`);
  }
  return choice;
}

/**
 * A payload that is `{version, data}` (remote-signing-api's fork-versioned shape) or the object
 * itself (bare, as Lighthouse sends it). The two are told apart by `version`, which no signed
 * container has as a field.
 */
export function unwrapVersioned<T extends string>(
  payload: unknown,
  path: string,
  versions: readonly T[],
): { version: T | undefined; data: unknown; dataPath: string } {
  const request = objectAt(payload, path);
  if (request.version === undefined) return { version: undefined, data: request, dataPath: path };
  const version = choiceAt(request.version, `${path}.version`, versions);
  if (request.data === undefined || request.data === null) {
    throw invalidRequest(`${path}.data: required`);
  }
  return { version, data: request.data, dataPath: `${path}.data` };
}

/** A container (plain or progressive), seen as the decoder and the hasher use it. */
type Container = Type<unknown>;

/**
 * A request type whose payload is one SSZ object, fork-versioned or bare, with no slashing
 * condition: one entry of the table in request-types.ts is all a new one of these needs.
 */
export interface ObjectTypeSpec {
  readonly operation: SigningOperation;
  /** Canonical key first, then the keys of clients that name it otherwise. */
  readonly payloadKeys: readonly string[];
  /** The container of each `version` a wrapped payload may name, oldest first; a bare one is the first's. */
  readonly containers: Partial<Record<ForkName, Container>>;
  readonly domainType: Uint8Array;
  readonly domain: "fork" | "genesis";
  /** Field path (from the object) of the slot whose epoch selects the fork version. */
  readonly slotPath: readonly string[];
  /**
   * What the spec refuses that the container's JSON shape cannot say (an empty list that must
   * not be): the reason, as `<field>: <why>` relative to the object, or undefined.
   */
  readonly refuse?: (value: Json) => string | undefined;
}

export function objectRequestType(spec: ObjectTypeSpec, slotsPerEpoch: bigint): RequestType {
  const versions = Object.keys(spec.containers) as ForkName[];
  const first = versions[0];
  if (first === undefined) throw new Error(`${spec.operation}: no container`);
  return {
    operation: spec.operation,
    payloadKeys: spec.payloadKeys,
    domain: spec.domain,
    decode(payload, path) {
      const { version, data, dataPath } = unwrapVersioned(payload, path, versions);
      const container = spec.containers[version ?? first] as Container;
      const value = decodeJson(container, data, dataPath);
      const refused = spec.refuse?.(value as Json);
      if (refused !== undefined) throw invalidRequest(`${dataPath}.${refused}`);
      let slot: unknown = value;
      for (const key of spec.slotPath) slot = (slot as Record<string, unknown>)[key];
      return {
        objectRoot: container.hashTreeRoot(value),
        epoch: (slot as bigint) / slotsPerEpoch,
        domainType: spec.domainType,
      };
    },
  };
}
