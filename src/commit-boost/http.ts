/**
 * The Commit-Boost listener's HTTP adapter: routes as data, module-JWT authentication with the
 * failure limiter in front, then one service call per route. Its own Bun.serve listener
 * (`commit_boost.listen_*`), apart from the signing API: Commit-Boost's admin paths (/reload,
 * /status, …) mean something else there. Errors keep sigil's `{"code","message"}` body.
 */
import { type ErrorCode, SigilError } from "../errors";
import { readBodyBytes } from "../http/body";
import { errorResponse, responseForError } from "../http/errors";
import type { ServerTls } from "../http/tls";
import { checkHost, type HostAllowlist, isHostAllowed } from "../net/host";
import type { Logger } from "../observability/log";
import type { Tracer } from "../observability/tracing";
import { bearerToken, checkModuleJwt, type JwtRefusal } from "./jwt";
import type { AuthFailureLimiter } from "./limiter";
import type { CommitBoostService } from "./service";
import {
  delegationJson,
  generateProxyRequest,
  parseBody,
  pubkeysJson,
  signRequest,
  signResponseText,
} from "./wire";

export const GET_PUBKEYS_PATH = "/signer/v1/get_pubkeys";
export const REQUEST_SIGNATURE_BLS_PATH = "/signer/v1/request_signature/bls";
export const REQUEST_SIGNATURE_PROXY_BLS_PATH = "/signer/v1/request_signature/proxy-bls";
export const REQUEST_SIGNATURE_PROXY_ECDSA_PATH = "/signer/v1/request_signature/proxy-ecdsa";
export const GENERATE_PROXY_KEY_PATH = "/signer/v1/generate_proxy_key";
export const STATUS_PATH = "/status";

/** commit-boost-client's REQUEST_MAX_BODY_LENGTH. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** What a route's outcome is counted as: "ok" or the error code. */
export interface CommitBoostObserver {
  request(route: string, outcome: string): void;
  authFailure(reason: JwtRefusal | "blocked" | "body"): void;
}

interface Call {
  readonly module: string;
  readonly body: Uint8Array;
  readonly service: CommitBoostService;
}

interface CommitBoostRoute {
  readonly method: "GET" | "POST";
  readonly path: string;
  /** Metric and audit name. */
  readonly name: string;
  /** The key the request names, for the audit line (after parsing). */
  handle(call: Call): Promise<{ key?: string; response: Response }>;
}

const json = (text: string) =>
  new Response(text, { headers: { "content-type": "application/json" } });

export const COMMIT_BOOST_ROUTES: readonly CommitBoostRoute[] = [
  {
    method: "GET",
    path: GET_PUBKEYS_PATH,
    name: "get_pubkeys",
    async handle({ module, service }) {
      return { response: Response.json(pubkeysJson(await service.getPubkeys(module))) };
    },
  },
  {
    method: "POST",
    path: REQUEST_SIGNATURE_BLS_PATH,
    name: "request_signature_bls",
    async handle({ module, body, service }) {
      const request = signRequest(parseBody(body), "pubkey", 48);
      const signed = await service.signConsensus({ module, ...request });
      return { key: request.key, response: json(signResponseText(signed, "pubkey")) };
    },
  },
  {
    method: "POST",
    path: REQUEST_SIGNATURE_PROXY_BLS_PATH,
    name: "request_signature_proxy_bls",
    async handle({ module, body, service }) {
      const request = signRequest(parseBody(body), "proxy", 48);
      const signed = await service.signProxy("bls", { module, ...request });
      return { key: request.key, response: json(signResponseText(signed, "pubkey")) };
    },
  },
  {
    method: "POST",
    path: REQUEST_SIGNATURE_PROXY_ECDSA_PATH,
    name: "request_signature_proxy_ecdsa",
    async handle({ module, body, service }) {
      const request = signRequest(parseBody(body), "proxy", 20);
      const signed = await service.signProxy("ecdsa", { module, ...request });
      return { key: request.key, response: json(signResponseText(signed, "address")) };
    },
  },
  {
    method: "POST",
    path: GENERATE_PROXY_KEY_PATH,
    name: "generate_proxy_key",
    async handle({ module, body, service }) {
      const { pubkey, scheme } = generateProxyRequest(parseBody(body));
      const delegation = await service.generateProxy(module, pubkey, scheme);
      return {
        key: `${pubkey} -> ${delegation.proxy}`,
        response: Response.json(delegationJson(delegation)),
      };
    },
  },
];

export interface CommitBoostHttpOptions {
  readonly service: CommitBoostService;
  /** Module id → its JWT secret. */
  readonly secrets: ReadonlyMap<string, string>;
  readonly limiter: AuthFailureLimiter;
  readonly hostAllowlist: HostAllowlist;
  readonly observer: CommitBoostObserver;
  readonly tracer: Tracer;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** The listener's request handler: `client` is the peer's address. */
export function commitBoostHandler(options: CommitBoostHttpOptions) {
  const audit = options.logger.child("audit");
  const now = options.now ?? (() => Date.now() / 1000);
  const byPath = new Map(COMMIT_BOOST_ROUTES.map((route) => [route.path, route]));

  return async (request: Request, client: string): Promise<Response> => {
    const host = checkHost(request.headers.get("host"));
    if (!host.ok) return errorResponse("invalid_host", host.reason);
    if (!isHostAllowed(host.name, options.hostAllowlist))
      return errorResponse("host_not_allowed", `host ${JSON.stringify(host.name)} is not allowed`);
    const path = new URL(request.url).pathname;
    if (path === STATUS_PATH && request.method === "GET") return new Response("OK");
    const route = byPath.get(path);
    if (!route || route.method !== request.method)
      return errorResponse("not_found", `no route ${request.method} ${path}`);

    // One warn line per failure, and one when it blocks the address; requests refused while
    // blocked are only counted (a flood must not flood the log too).
    const refused = (reason: JwtRefusal | "body") => {
      options.observer.authFailure(reason);
      audit.warn("commit-boost request refused", { route: route.name, client, reason });
      if (options.limiter.fail(client))
        audit.warn("commit-boost client blocked after repeated auth failures", { client });
    };
    const blocked = () => {
      const blockedMs = options.limiter.blockedFor(client);
      if (blockedMs === 0) return undefined;
      options.observer.authFailure("blocked");
      options.observer.request(route.name, "too_many_requests");
      const seconds = Math.ceil(blockedMs / 1000);
      return Response.json(
        {
          code: "too_many_requests",
          message: `too many failed authentications: retry in ${seconds} s`,
        },
        { status: 429, headers: { "retry-after": String(seconds) } },
      );
    };
    const early = blocked();
    if (early) return early;
    const body = await readBody(request);
    if (!body.ok) {
      refused("body");
      options.observer.request(route.name, body.code);
      return errorResponse(body.code, body.message);
    }
    // Checked again with no await between it and the failure count below: of a burst of
    // concurrent bad requests with slow bodies, at most jwt_auth_fail_limit get 401.
    const late = blocked();
    if (late) return late;
    const token = bearerToken(request.headers.get("authorization"));
    const auth = checkModuleJwt(token, (m) => options.secrets.get(m), {
      route: path,
      body: body.bytes,
      now: now(),
    });
    if (!auth.ok) {
      refused(auth.reason);
      options.observer.request(route.name, "unauthorized");
      return errorResponse("unauthorized", "unauthorized", {
        "www-authenticate": 'Bearer realm="sigil commit-boost"',
      });
    }
    const module = auth.module;
    const caller = {
      traceparent: request.headers.get("traceparent"),
      tracestate: request.headers.get("tracestate"),
    };
    return options.tracer.serve(
      `commit_boost ${route.name}`,
      caller,
      { "commit_boost.route": route.name, "commit_boost.module": module },
      async (span) => {
        try {
          const { key, response } = await route.handle({
            module,
            body: body.bytes,
            service: options.service,
          });
          options.observer.request(route.name, "ok");
          span.setAttributes({ "commit_boost.outcome": "ok" });
          audit.info("commit-boost request served", { route: route.name, client, module, key });
          return response;
        } catch (error) {
          const code = error instanceof SigilError ? error.code : "internal_error";
          options.observer.request(route.name, code);
          span.setAttributes({ "commit_boost.outcome": code });
          const log = code === "internal_error" ? audit.error : audit.info;
          log.call(audit, "commit-boost request failed", {
            route: route.name,
            client,
            module,
            code,
            ...(code === "internal_error" && { error: String(error) }),
          });
          return responseForError(error);
        }
      },
    );
  };
}

type BodyRead = { ok: true; bytes: Uint8Array } | { ok: false; code: ErrorCode; message: string };

/** The body up to MAX_BODY_BYTES; a larger one is an error that counts as an auth failure. */
async function readBody(request: Request): Promise<BodyRead> {
  try {
    return { ok: true, bytes: await readBodyBytes(request, MAX_BODY_BYTES) };
  } catch (error) {
    if (error instanceof SigilError) return { ok: false, code: error.code, message: error.message };
    throw error;
  }
}

export interface CommitBoostListenerOptions {
  readonly hostname: string;
  readonly port: number;
  readonly tls?: ServerTls;
  readonly handle: (request: Request, client: string) => Promise<Response>;
}

export interface RunningCommitBoostListener {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The listener itself: Bun.serve, nothing shared with the signing API's server. */
export function startCommitBoostListener(
  options: CommitBoostListenerOptions,
): RunningCommitBoostListener {
  const server = Bun.serve({
    hostname: options.hostname,
    port: options.port,
    maxRequestBodySize: MAX_BODY_BYTES + 1,
    ...(options.tls ? { tls: options.tls.options } : {}),
    fetch(request, bunServer) {
      const client = bunServer.requestIP(request)?.address ?? "unknown";
      return options.handle(request, client);
    },
    error() {
      return errorResponse("internal_error", "internal error");
    },
  });
  const port = server.port ?? options.port;
  const host = options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname;
  return {
    url: `${options.tls ? "https" : "http"}://${host}:${port}`,
    port,
    async stop() {
      await server.stop();
    },
  };
}
