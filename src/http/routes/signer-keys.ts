import { Elysia } from "elysia";
import { authorize } from "../../auth/authenticator";
import type { CloudKvKeygen } from "../../keys/cloud-kv/keygen";
import type { CloudKvWriter } from "../../keys/cloud-kv/writer";
import type { KeyInventory } from "../../keys/inventory";
import type { Authenticate } from "../access";

export const SIGNER_KEYS_PATH = "/api/v1/signer/keys";
export const GENERATE_PATH = "/api/v1/signer/keys/generate";

/**
 * The signer's own key routes: the inventory always; generate and import/delete only when
 * cloud_kv keygen / writable are enabled (otherwise they do not exist: 404).
 */
export function signerKeysRoutes(
  services: { inventory: KeyInventory; keygen?: CloudKvKeygen; writer?: CloudKvWriter },
  authenticate: Authenticate,
) {
  const { inventory, keygen, writer } = services;
  let app = new Elysia().get(SIGNER_KEYS_PATH, async ({ request }) => {
    // Operational inventory: the scope is checked, not the keys (it may list keys the caller cannot use).
    authorize(await authenticate(request), { scope: "signer_keys_list" });
    return inventory.page(new URL(request.url).searchParams);
  });
  if (keygen) {
    app = app.post(GENERATE_PATH, async ({ body, request }) => {
      authorize(await authenticate(request), { scope: "signer_keys_generate" });
      return keygen.generate(body);
    });
  }
  if (writer) {
    app = app
      .post(SIGNER_KEYS_PATH, async ({ body, request }) => {
        authorize(await authenticate(request), { scope: "signer_keys_write" });
        return writer.import(body);
      })
      .delete(SIGNER_KEYS_PATH, async ({ body, request }) => {
        authorize(await authenticate(request), { scope: "signer_keys_delete" });
        return writer.delete(body);
      });
  }
  return app;
}
