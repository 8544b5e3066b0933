import type { Static, TSchema } from "@sinclair/typebox";
import type { KeyAccess, Principal } from "../auth/authenticator";
import type { Scope } from "../auth/scopes";
import { SigilError } from "../errors";
import { checkShape, describeProblem } from "../wire/check";
import type { JsonValue } from "../wire/json";
import type { RequestMeta } from "./request-meta";

export type Method = "GET" | "POST" | "PUT" | "DELETE";

/**
 * A route declared as data (`http/table.ts` holds every one): everything the listener decides
 * about a request before its handler runs — who may call it, whether it answers while sealed,
 * which deadline and body limit apply, the shape of its body. The dispatcher (`http/app.ts`)
 * enforces it in that order, before a byte of the body is read.
 */
export interface Declaration {
  readonly method: Method;
  /** `/api/v1/signer/auth/policies/:name`: literal segments and `:parameter` segments. */
  readonly path: string;
  readonly access: Access;
  /** Whether a sealed signer serves it (liveness, health, status, the seal lifecycle). */
  readonly servedWhileSealed: boolean;
  /** Whose deadline and body limit apply: the listener's (`server`) or a feature's own. */
  readonly limits: LimitGroup;
  /**
   * The body's wire shape, or a builder of it from the feature's limits (an item count that is a
   * config option); a body that does not match is 400 invalid_request naming the path.
   * `SERVICE_READS_BODY`: the service authenticates first and then reads the body through
   * `input.body()`, parsing it field by field itself (signing: a generic pass would cost every
   * request, and every refusal is recorded with the service's other outcomes).
   */
  readonly body?: TSchema | BodyBuilder | typeof SERVICE_READS_BODY;
  /**
   * The route takes no body, and a POST without one is fine (Web3Signer's `POST /reload`, which
   * operators send as `curl -X POST`); a body sent anyway is still read within the limit.
   */
  readonly bodyless?: boolean;
  /** Words for each path parameter in error messages ("public key"). */
  readonly params?: Readonly<Record<string, string>>;
}

export const SERVICE_READS_BODY = "read_by_service";

/** The limits of a group, as the configuration sets them when the feature is on. */
export interface FeatureLimits {
  readonly timeoutMs: number;
  readonly maxBodyBytes?: number;
  /** The item limit of the feature's bodies, and the config option that sets it (for messages). */
  readonly maxItems: number;
  readonly maxItemsOption: string;
}

export type LimitGroup = "server" | "key_manager_api" | "cloud_kv_keygen" | "cloud_kv_writable";
export type BodyBuilder = (limits: FeatureLimits) => TSchema;

/** Who may call a route, checked from the request's headers before its body is read. */
export type Access =
  /** Anyone: liveness, health, the seal status, and routes whose token travels in the body. */
  | { readonly kind: "public" }
  /** A caller whose policies grant the scope. */
  | { readonly kind: "scope"; readonly scope: Scope }
  /**
   * The service authenticates (through `caller.authenticate`, before it reads any body) and
   * decides per key: signing and key listings, whose refusals are recorded with the rest of the
   * route's outcomes.
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
  /**
   * An operator credential (`Authorization: Bearer sgo_…`): its presence is checked from the
   * headers, its validity by the seal service.
   */
  | { readonly kind: "operator" };

/** What the handler gets as `body`: the checked body, the reader, or whatever JSON came. */
export type BodyOf<B> = B extends typeof SERVICE_READS_BODY
  ? () => Promise<JsonValue | undefined>
  : B extends BodyBuilder
    ? Static<ReturnType<B>>
    : B extends TSchema
      ? Static<B>
      : JsonValue | undefined;

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

export type Handler<D extends Declaration> = (
  input: RouteInput<BodyOf<D["body"]>>,
  caller: Caller,
) => unknown;

/**
 * A declaration bound to its handler and to the configured limits: what the dispatcher serves.
 * `handle` takes the body as read (or the reader) and checks it against `body` itself.
 */
export interface Route {
  /** The declaration's name in the table (`sign`, `revokeToken`). */
  readonly name: string;
  readonly method: Method;
  readonly path: string;
  readonly access: Access;
  readonly servedWhileSealed: boolean;
  /** This route's deadline, when it is not `server.request_timeout_seconds`. */
  readonly timeoutMs?: number;
  /** This route's body limit, when it is not `server.max_request_body_bytes`. */
  readonly maxBodyBytes?: number;
  /** The resolved shape (a builder applied to its limits). */
  readonly body?: TSchema | typeof SERVICE_READS_BODY;
  readonly bodyless?: boolean;
  readonly params?: Readonly<Record<string, string>>;
  handle(input: RouteInput<unknown>, caller: Caller): unknown;
}

/** The key rule of a key route's caller; admission sets it for every route of access `keys`. */
export function keyRule(caller: Caller): KeyAccess {
  if (!caller.keys) throw new Error("keyRule: the route is not declared with access kind keys");
  return caller.keys;
}

/**
 * Binds a declaration to its handler and limits. The body is checked against the declared shape
 * before the handler sees it; only then is it given the shape's static type.
 */
export function bindRoute<D extends Declaration>(
  name: string,
  declaration: D,
  handler: Handler<D>,
  limits: FeatureLimits | undefined,
): Route {
  const { body: declared, limits: _group, ...rest } = declaration;
  const schema = typeof declared === "function" ? declared(requireLimits(name, limits)) : declared;
  return {
    ...rest,
    name,
    ...(schema !== undefined && { body: schema }),
    ...(limits?.timeoutMs !== undefined && { timeoutMs: limits.timeoutMs }),
    ...(limits?.maxBodyBytes !== undefined && { maxBodyBytes: limits.maxBodyBytes }),
    handle: checkedHandler<BodyOf<D["body"]>>(schema, handler),
  };
}

/** The handler behind the body check: a shape's body reaches it only once it is that shape. */
function checkedHandler<B>(
  schema: TSchema | typeof SERVICE_READS_BODY | undefined,
  handler: (input: RouteInput<B>, caller: Caller) => unknown,
): Route["handle"] {
  if (schema === undefined || schema === SERVICE_READS_BODY) {
    // What the dispatcher hands over unchecked: the JSON as read, or the reader.
    return (input, caller) => handler(input as RouteInput<B>, caller);
  }
  return (input, caller) => {
    const checked = checkShape(schema, input.body);
    if (!checked.ok) throw new SigilError("invalid_request", describeProblem(checked));
    // The check above is what makes the body this route's shape.
    return handler(withBody(input, checked.value as B), caller);
  };
}

/** The input with its checked body; `query` stays the lazy one (a getter, which a spread would call). */
function withBody<B>(input: RouteInput<unknown>, body: B): RouteInput<B> {
  return {
    body,
    params: input.params,
    headers: input.headers,
    meta: input.meta,
    get query() {
      return input.query;
    },
  };
}

function requireLimits(name: string, limits: FeatureLimits | undefined): FeatureLimits {
  if (!limits) throw new Error(`route ${name}: its body is built from limits the feature lacks`);
  return limits;
}

/** A route outside the table (tests, a listener's own harness), with its limits given inline. */
export interface AdHocRoute<S extends TSchema | typeof SERVICE_READS_BODY | undefined>
  extends Omit<Declaration, "limits" | "body"> {
  readonly name?: string;
  readonly timeoutMs?: number;
  readonly maxBodyBytes?: number;
  readonly body?: S;
  handle(input: RouteInput<BodyOf<S>>, caller: Caller): unknown;
}

export function route<S extends TSchema | typeof SERVICE_READS_BODY | undefined = undefined>(
  definition: AdHocRoute<S>,
): Route {
  const { handle, name, body, ...rest } = definition;
  return {
    ...rest,
    name: name ?? `${definition.method} ${definition.path}`,
    ...(body !== undefined && { body }),
    handle: checkedHandler<BodyOf<S>>(body, handle),
  };
}
