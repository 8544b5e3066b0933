import { Elysia } from "elysia";
import { authorize, visibleKeys } from "../../auth/authenticator";
import type { PreparedSignature, SigningService } from "../../signing/service";
import type { Authenticate } from "../access";
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

/** POST /api/v1/eth2/sign/{pubkey} (scope sign) and GET /api/v1/eth2/publicKeys (scope public_keys). */
export function signingRoutes(service: SigningService, authenticate: Authenticate) {
  return new Elysia()
    .post("/api/v1/eth2/sign/:identifier", async ({ params, body, request }) => {
      const meta = requestMeta(request);
      let prepared: PreparedSignature | undefined;
      try {
        const principal = await authenticate(request);
        prepared = service.prepare(params.identifier, body);
        const { pubkey, request: parsed } = prepared;
        authorize(principal, { scope: "sign", pubkey, operation: parsed.operation });
        const signature = await service.sign(prepared, {
          requestId: meta.id,
          deadline: meta.deadline,
        });
        return signatureResponse(signature, request.headers.get("accept"));
      } catch (error) {
        service.recordFailure(error, {
          requestId: meta.id,
          pubkey: prepared?.pubkey,
          operation: prepared?.request.operation,
        });
        throw error;
      }
    })
    .get("/api/v1/eth2/publicKeys", async ({ request }) =>
      Response.json(visibleKeys(await authenticate(request), "public_keys", service.publicKeys())),
    );
}
