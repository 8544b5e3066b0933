import type { Static, TSchema } from "@sinclair/typebox";
import type { KeyAccess, Principal } from "../auth/authenticator";
import type { Scope } from "../auth/scopes";
import type { JsonValue } from "../wire/json";
import type { RequestMeta } from "./request-meta";

/**
 * A route declared as data: everything the listener enforces about it (who may call it, whether
 * it answers while sealed, its deadline and body limit, the shape of its body) sits beside the
 * handler, and `http/app.ts` builds the routes from the table. A handler parses nothing by
 * hand: it gets the checked body and the caller, calls a service with a typed command, and maps
 * the result.
 */
export interface Route<S extends TSchema | undefined = TSchema | undefined> {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  /** Elysia's syntax: `/api/v1/signer/auth/policies/:name`. */
  readonly path: string;
  readonly access: Access;
  /** Whether a sealed signer serves it (liveness, health, status, the seal lifecycle). */
  readonly servedWhileSealed: boolean;
  /** This route's deadline, when it is not `server.request_timeout_seconds`. */
  readonly timeoutMs?: number;
  /** This route's body limit, when it is not `server.max_request_body_bytes`. */
  readonly maxBodyBytes?: number;
  /** The body's wire shape; a body that does not match is 400 invalid_request naming the path. */
  readonly body?: S;
  /**
   * Instead of `body`: the module whose parser checks this body field by field, with the
   * service (the signing hot path, where a generic pass over the body would cost each request).
   */
  readonly bodyParsedBy?: string;
  /**
   * The route takes no body, and a POST without one is fine (Web3Signer's `POST /reload`, which
   * operators send as `curl -X POST`); a body sent anyway is still read within the limit.
   */
  readonly bodyless?: boolean;
  /** Words for each path parameter in error messages ("public key"). */
  readonly params?: Readonly<Record<string, string>>;
  /**
   * Served before Elysia: the hot path (every signing request). Its path ends in its one
   * parameter; an identifier that needs percent-decoding is still served, through Elysia.
   */
  readonly direct?: boolean;
  handle(input: RouteInput<BodyOf<S>>, caller: Caller): unknown | Promise<unknown>;
}

/** Who may call a route, checked before its handler runs. */
export type Access =
  /** Anyone: liveness, health, the seal status, and routes whose token travels in the body. */
  | { readonly kind: "public" }
  /** A caller whose policies grant the scope. */
  | { readonly kind: "scope"; readonly scope: Scope }
  /**
   * The service authenticates (through `caller.authenticate`) and decides per key: signing and
   * key listings, whose refusals are recorded with the rest of the route's outcomes.
   */
  | { readonly kind: "per_key"; readonly scope: Scope }
  /**
   * A key route (list, import or delete of keys): the caller is authenticated and refused 403
   * unless a policy grants the scope for some key, before the body is read; the handler gets
   * the key rule in `caller.keys` and the service applies it to each key. `list` is the listing
   * scope of the route's API: a key the caller may not list, it may not act on either.
   */
  | { readonly kind: "keys"; readonly scope: Scope; readonly list: Scope }
  /** The management token. */
  | { readonly kind: "management" }
  /** An operator credential (`Authorization: Bearer sgo_…`), checked by the seal service. */
  | { readonly kind: "operator" };

/** The checked body, or for a route that declares none, whatever JSON came (usually none). */
export type BodyOf<S> = S extends TSchema ? Static<S> : JsonValue | undefined;

export interface RouteInput<B> {
  readonly body: B;
  /** Decoded path parameters. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** For content negotiation and trace context; never handed to a service whole. */
  readonly headers: Headers;
  readonly meta: RequestMeta;
}

export interface Caller {
  /** Who is calling, from the Authorization header and the peer address (once per request). */
  authenticate(): Promise<Principal>;
  /** The operator credential presented (operator routes only). */
  readonly credential?: string;
  /** The key rule for this caller (key routes only). */
  readonly keys?: KeyAccess;
}

/** The key rule of a key route's caller; admission sets it for every route of access `keys`. */
export function keyRule(caller: Caller): KeyAccess {
  if (!caller.keys) throw new Error("keyRule: the route is not declared with access kind keys");
  return caller.keys;
}

/** Keeps each route's body type while the table holds routes of every shape. */
export function route<S extends TSchema | undefined = undefined>(definition: Route<S>): Route {
  return definition as unknown as Route;
}
