import type { SigningOperation } from "../wire/operations";
import type { Scope } from "./scopes";

/** One rule of a policy. A dimension it names (scopes, keys, operations) restricts it. */
export interface Rule {
  readonly effect: "allow" | "deny";
  readonly scopes?: readonly Scope[];
  /** 0x + 96 lower-case hex. */
  readonly keys?: readonly string[];
  readonly operations?: readonly SigningOperation[];
}

export interface Policy {
  readonly name: string;
  readonly rules: readonly Rule[];
}

/** What a request asks for: its route's scope and, where the route has them, a key and an operation. */
export interface AccessRequest {
  readonly scope: Scope;
  readonly pubkey?: string;
  readonly operation?: SigningOperation;
}

export type AccessDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string };
