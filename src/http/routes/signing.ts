import { Elysia } from "elysia";
import { authorize, visibleKeys } from "../../auth/authenticator";
import { isSigilError } from "../../errors";
import { NOOP_TRACER, type Tracer } from "../../observability/tracing";
import { type PreparedSignature, type SigningService, shortKey } from "../../signing/service";
import type { Authenticate } from "../access";
import type { DirectRoute } from "../app";
import { STATUS_BY_CODE } from "../errors";
import { pathParam } from "../params";
import { requestMeta } from "../request-meta";

/** Web3Signer's rule: JSON for `application/json` (or a wildcard that admits it), else bare hex. */
export function wantsJsonSignature(accept: string | null): boolean {
  if (!accept) return false;
  return accept
    .split(",")
    .map((range) => range.split(";")[0]?.trim().toLowerCase())
    .some((type) => type === "application/json" || type === "*/*" || type === "application/*");
}

function signatureResponse(signature: Uint8Array, accept: string | null): Response {
  const hex = `0x${Buffer.from(signature).toString("hex")}`;
  return wantsJsonSignature(accept)
    ? Response.json({ signature: hex })
    : new Response(hex, { headers: { "content-type": "text/plain; charset=utf-8" } });
}

export const SIGN_PATH_PREFIX = "/api/v1/eth2/sign/";

/**
 * POST /api/v1/eth2/sign/{pubkey} (scope sign). Each sign request is a `sign` span; `auth` covers
 * authenticate, parse and authorize. Served directly (DirectRoute): it is every request a
 * validator client makes, and the Elysia route below only sees identifiers that need decoding.
 */
export function signRoute(
  service: SigningService,
  authenticate: Authenticate,
  tracer: Tracer = NOOP_TRACER,
): DirectRoute {
  const handle = (request: Request, identifier: string, body: unknown): Promise<Response> => {
    const meta = requestMeta(request);
    const caller = {
      traceparent: request.headers.get("traceparent"),
      tracestate: request.headers.get("tracestate"),
    };
    return tracer.serve("sign", caller, { "sigil.request_id": meta.id }, async (span) => {
      let prepared: PreparedSignature | undefined;
      try {
        const ready = await tracer.span("auth", {}, async () => {
          const principal = await authenticate(request);
          const parsed = service.prepare(identifier, body);
          prepared = parsed;
          const { pubkey, request: signingRequest } = parsed;
          span.setAttributes({
            "sigil.operation": signingRequest.operation,
            "sigil.pubkey": shortKey(pubkey),
          });
          authorize(principal, { scope: "sign", pubkey, operation: signingRequest.operation });
          return parsed;
        });
        const signature = await service.sign(ready, {
          requestId: meta.id,
          deadline: meta.deadline,
        });
        span.setAttributes({ "sigil.outcome": "signed", "http.response.status_code": 200 });
        return signatureResponse(signature, request.headers.get("accept"));
      } catch (error) {
        // Past the deadline the client has been answered 503 request_timeout already.
        const timedOut = meta.deadline.aborted;
        const code = timedOut
          ? "request_timeout"
          : isSigilError(error)
            ? error.code
            : "internal_error";
        span.setAttributes({
          "sigil.outcome": code,
          "http.response.status_code": STATUS_BY_CODE[code],
        });
        service.recordFailure(error, {
          requestId: meta.id,
          pubkey: prepared?.pubkey,
          operation: prepared?.request.operation,
          timedOut,
        });
        throw error;
      }
    });
  };
  return { method: "POST", prefix: SIGN_PATH_PREFIX, handle };
}

/** The signing routes for Elysia: sign (as `sign` serves it) and GET /api/v1/eth2/publicKeys (scope public_keys). */
export function signingRoutes(
  sign: DirectRoute,
  service: SigningService,
  authenticate: Authenticate,
) {
  return new Elysia()
    .post(`${SIGN_PATH_PREFIX}:identifier`, ({ params, body, request }) =>
      sign.handle(request, pathParam(params.identifier, "public key"), body),
    )
    .get("/api/v1/eth2/publicKeys", async ({ request }) =>
      Response.json(visibleKeys(await authenticate(request), "public_keys", service.publicKeys())),
    );
}
