import { Elysia } from "elysia";
import { authorize, visibleKeys } from "../../auth/authenticator";
import { isSigilError } from "../../errors";
import { NOOP_TRACER, type Tracer } from "../../observability/tracing";
import { type PreparedSignature, type SigningService, shortKey } from "../../signing/service";
import type { Authenticate } from "../access";
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

/**
 * POST /api/v1/eth2/sign/{pubkey} (scope sign) and GET /api/v1/eth2/publicKeys (scope public_keys).
 * Each sign request is a `sign` span; `auth` covers authenticate, parse and authorize.
 */
export function signingRoutes(
  service: SigningService,
  authenticate: Authenticate,
  tracer: Tracer = NOOP_TRACER,
) {
  return new Elysia()
    .post("/api/v1/eth2/sign/:identifier", ({ params, body, request }) => {
      const meta = requestMeta(request);
      return tracer.span("sign", { "sigil.request_id": meta.id }, async (span) => {
        let prepared: PreparedSignature | undefined;
        try {
          const ready = await tracer.span("auth", {}, async () => {
            const principal = await authenticate(request);
            const parsed = service.prepare(pathParam(params.identifier, "public key"), body);
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
          const code = isSigilError(error) ? error.code : "internal_error";
          span.setAttributes({
            "sigil.outcome": code,
            "http.response.status_code": STATUS_BY_CODE[code],
          });
          service.recordFailure(error, {
            requestId: meta.id,
            pubkey: prepared?.pubkey,
            operation: prepared?.request.operation,
          });
          throw error;
        }
      });
    })
    .get("/api/v1/eth2/publicKeys", async ({ request }) =>
      Response.json(visibleKeys(await authenticate(request), "public_keys", service.publicKeys())),
    );
}
