import { SigilError } from "../errors";
import { type Cidr, cidrContains, parseCidr } from "./cidr";
import { evaluate, filterAllowedKeys, routeAllowed, scopeReachable } from "./policy";
import type { Scope } from "./scopes";
import type { TokenLookup } from "./store";
import { hashToken, presentedToken, secretsEqual } from "./tokens";
import type { AccessRequest, Policy } from "./types";

/** Who is calling: everything allowed (no auth, management token) or the policies bound to them. */
export type Principal =
  | { readonly kind: "unrestricted"; readonly management: boolean }
  | { readonly kind: "policies"; readonly policies: readonly Policy[]; readonly label: string };

export type AuthMode = "none" | "legacy" | "stateless" | "stateful";

/** Resolves the caller from the Authorization header and source address, or throws 401/403. */
export interface Authenticator {
  readonly mode: AuthMode;
  /** `peer.clientIp` is read only for a token bound to addresses (it costs a lookup). */
  authenticate(authorization: string | null, peer: Peer): Promise<Principal>;
}

/** Where a request came from; `clientIp` is undefined when the peer is unknown. */
export interface Peer {
  readonly clientIp: string | undefined;
}

const OPEN: Principal = { kind: "unrestricted", management: false };

export const noAuth: Authenticator = { mode: "none", authenticate: async () => OPEN };

function missingToken(): SigilError {
  return new SigilError(
    "unauthorized",
    "a token is required (Authorization: Bearer, or HTTP Basic password)",
  );
}

function invalidToken(): SigilError {
  return new SigilError("invalid_token", "invalid token");
}

function presented(authorization: string | null): string | undefined {
  const token = presentedToken(authorization);
  if (token.kind === "malformed") throw new SigilError("unauthorized", token.reason);
  return token.kind === "token" ? token.value : undefined;
}

function fromAllowedAddress(cidrs: readonly Cidr[], peer: Peer): boolean {
  if (cidrs.length === 0) return true;
  const clientIp = peer.clientIp;
  return clientIp !== undefined && cidrs.some((cidr) => cidrContains(cidr, clientIp));
}

function addressRefused(): SigilError {
  return new SigilError(
    "forbidden",
    "this token is not accepted from this source address (token_bound_cidrs)",
  );
}

/** Legacy `auth_policies`: a token names one policy; an unknown token is 403 (spec). */
export function legacyAuthenticator(
  tokens: readonly { token: string; policy: Policy }[],
  unauthenticated: Policy | undefined,
): Authenticator {
  return {
    mode: "legacy",
    async authenticate(authorization) {
      const token = presented(authorization);
      if (token === undefined) {
        if (!unauthenticated) throw missingToken();
        return { kind: "policies", policies: [unauthenticated], label: "unauthenticated_policy" };
      }
      // Every entry is compared, so the time taken does not depend on which one matches.
      const match = tokens.filter((entry) => secretsEqual(entry.token, token))[0];
      if (!match) throw new SigilError("forbidden", "unknown token");
      return { kind: "policies", policies: [match.policy], label: match.policy.name };
    },
  };
}

export interface StaticToken {
  readonly secret: string;
  readonly policies: readonly Policy[];
  readonly cidrs: readonly string[];
  readonly label: string;
}

/** Stateless `static_auth`: config-declared tokens and optional anonymous policies. */
export function staticAuthenticator(
  tokens: readonly StaticToken[],
  anonymous: readonly Policy[] | undefined,
): Authenticator {
  const entries = tokens.map((t) => ({
    ...t,
    parsed: t.cidrs.map((c) => parseCidr(c)).filter((c): c is Cidr => !!c),
  }));
  return {
    mode: "stateless",
    async authenticate(authorization, peer) {
      const token = presented(authorization);
      if (token === undefined) {
        if (!anonymous) throw missingToken();
        return { kind: "policies", policies: anonymous, label: "anonymous" };
      }
      const match = entries.filter((entry) => secretsEqual(entry.secret, token))[0];
      if (!match) throw invalidToken();
      if (!fromAllowedAddress(match.parsed, peer)) throw addressRefused();
      return { kind: "policies", policies: match.policies, label: match.label };
    },
  };
}

/**
 * Stateful: tokens and policies live in signer_state and are read on every request, so a revoke
 * or a policy change applies to the very next request. Expired or revoked tokens are 401, never
 * downgraded to anonymous access.
 */
export function statefulAuthenticator(
  store: TokenLookup,
  now: () => number = Date.now,
): Authenticator {
  return {
    mode: "stateful",
    async authenticate(authorization, peer) {
      const token = presented(authorization);
      if (token === undefined) throw missingToken();
      const record = await store.findToken(hashToken(token));
      // Unknown, revoked (deleted), expired or a setup token: one answer, so that a 401 never
      // tells whether a guessed or leaked token exists or once existed.
      if (!record || record.kind === "setup") throw invalidToken();
      if (record.expiresAt !== undefined && record.expiresAt <= now()) throw invalidToken();
      if (record.kind === "management") return { kind: "unrestricted", management: true };
      const cidrs = record.cidrs.map((c) => parseCidr(c)).filter((c): c is Cidr => !!c);
      if (!fromAllowedAddress(cidrs, peer)) throw addressRefused();
      const policies = await Promise.all(record.policies.map((name) => store.getPolicy(name)));
      return {
        kind: "policies",
        policies: policies.filter((p): p is Policy => p !== undefined),
        label: `token ${record.accessor}`,
      };
    },
  };
}

/** Throws 403 unless the principal may make this request. */
export function authorize(principal: Principal, request: AccessRequest): void {
  if (principal.kind === "unrestricted") return;
  const decision = evaluate(principal.policies, request);
  if (!decision.allowed) throw new SigilError("forbidden", decision.reason);
}

/** For listing routes: the keys the principal may see, or 403 when it has no grant for the scope. */
export function visibleKeys(
  principal: Principal,
  scope: Scope,
  pubkeys: readonly string[],
): string[] {
  if (principal.kind === "unrestricted") return [...pubkeys];
  if (!routeAllowed(principal.policies, scope, pubkeys)) {
    throw new SigilError("forbidden", `no policy allows scope ${scope}`);
  }
  return filterAllowedKeys(principal.policies, scope, pubkeys);
}

/**
 * The one rule of the key routes (list, import and delete, of the Key Manager API and of
 * cloud_kv alike): a caller may act on a key only when its policies allow the route's scope for
 * that key *and* the listing scope of the same API for that key. A key it may not see, it may
 * neither delete nor import over. `refusal` answers undefined when allowed, else why not (naming
 * the scope and the key, never whether the key exists).
 */
export interface KeyAccess {
  refusal(pubkey: string): string | undefined;
}

/**
 * The key rule for one request: throws 403 when no policy grants `scope` for any key at all (the
 * route is out of reach), else decides per key. `list` is the listing scope of the route's API.
 */
export function keyAccess(principal: Principal, scope: Scope, list: Scope): KeyAccess {
  if (principal.kind === "unrestricted") return { refusal: () => undefined };
  const { policies } = principal;
  if (!scopeReachable(policies, scope)) {
    throw new SigilError("forbidden", `no policy allows scope ${scope}`);
  }
  return {
    refusal(pubkey) {
      for (const wanted of scope === list ? [scope] : [scope, list]) {
        const decision = evaluate(policies, { scope: wanted, pubkey });
        if (!decision.allowed)
          return decision.reason.includes(`scope ${wanted}`)
            ? decision.reason
            : `scope ${wanted}: ${decision.reason}`;
      }
      return undefined;
    },
  };
}

export function requireManagement(principal: Principal): void {
  if (principal.kind !== "unrestricted" || !principal.management) {
    throw new SigilError("forbidden", "this route needs the management token");
  }
}
