import { visibleKeys } from "../../auth/authenticator";
import { isSigilError } from "../../errors";
import { NOOP_TRACER, type Tracer } from "../../observability/tracing";
import type { SigningService } from "../../signing/service";
import { toHex } from "../../wire/hex";
import { STATUS_BY_CODE } from "../errors";
import type { Handlers } from "../table";

let lastAccept: string | undefined;
let lastWantsJson = false;

/** Web3Signer's rule: JSON for `application/json` (or a wildcard that admits it), else bare hex. */
export function wantsJsonSignature(accept: string | null): boolean {
  if (!accept) return false;
  // A client sends the same Accept with every request: the last answer is remembered.
  if (accept === lastAccept) return lastWantsJson;
  lastWantsJson = acceptsJson(accept);
  lastAccept = accept;
  return lastWantsJson;
}

function acceptsJson(accept: string): boolean {
  return accept
    .split(",")
    .map((range) => range.split(";")[0]?.trim().toLowerCase())
    .some((type) => type === "application/json" || type === "*/*" || type === "application/*");
}

/** The headers `Response.json` would set, without building and serializing an object per answer. */
const JSON_TYPE = { "content-type": "application/json;charset=utf-8" };
const TEXT_TYPE = { "content-type": "text/plain; charset=utf-8" };

export function signatureResponse(signature: Uint8Array, accept: string | null): Response {
  const hex = toHex(signature);
  // `0x` and hex digits need no JSON escaping: the body is `{"signature":"0x…"}` as is.
  return wantsJsonSignature(accept)
    ? new Response(`{"signature":"${hex}"}`, { headers: JSON_TYPE })
    : new Response(hex, { headers: TEXT_TYPE });
}

/**
 * The Web3Signer signing routes. Each sign request is the server span `sign` (a child of the
 * caller's `traceparent`), which the service annotates with what it signed or why it did not;
 * this adapter adds only the HTTP status. The service authenticates the caller before it reads
 * the body (`body` is the reader), so a refused caller is answered before its body arrives.
 */
export function signingHandlers(
  service: SigningService,
  tracer: Tracer = NOOP_TRACER,
): Handlers<"sign" | "publicKeys"> {
  return {
    sign: ({ body, params, headers, meta }, caller) => {
      if (!tracer.enabled) {
        // Every request a validator client makes: no span, no closures, no trace headers read.
        return service
          .handle(caller.authenticate, params.identifier ?? "", body, {
            requestId: meta.id,
            deadline: meta.deadline,
          })
          .then((signature) => signatureResponse(signature, headers.get("accept")));
      }
      const trace = {
        traceparent: headers.get("traceparent"),
        tracestate: headers.get("tracestate"),
      };
      return tracer.serve("sign", trace, { "sigil.request_id": meta.id }, async () => {
        try {
          const signature = await service.handle(
            caller.authenticate,
            params.identifier ?? "",
            body,
            { requestId: meta.id, deadline: meta.deadline },
          );
          tracer.annotate({ "http.response.status_code": 200 });
          return signatureResponse(signature, headers.get("accept"));
        } catch (error) {
          // Past the deadline the client has been answered 503 request_timeout already.
          const code = meta.deadline.aborted
            ? "request_timeout"
            : isSigilError(error)
              ? error.code
              : "internal_error";
          tracer.annotate({ "http.response.status_code": STATUS_BY_CODE[code] });
          throw error;
        }
      });
    },
    publicKeys: async (_input, caller) =>
      Response.json(visibleKeys(await caller.authenticate(), "public_keys", service.publicKeys())),
  };
}
