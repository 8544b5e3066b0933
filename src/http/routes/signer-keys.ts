import type { CloudKvKeygen } from "../../keys/cloud-kv/keygen";
import type { CloudKvWriter } from "../../keys/cloud-kv/writer";
import type { KeyInventory } from "../../keys/inventory";
import { type Route, route } from "../route";

export const SIGNER_KEYS_PATH = "/api/v1/signer/keys";
export const GENERATE_PATH = "/api/v1/signer/keys/generate";

/** A cloud_kv write route's own limits (key_sources.cloud_kv.keygen / .writable). */
export interface WriteLimits {
  readonly timeoutMs: number;
  readonly maxBodyBytes?: number;
}

/**
 * The signer's own key routes: the inventory always; generate and import/delete only when
 * cloud_kv keygen / writable are enabled (otherwise they do not exist: 404).
 */
export function signerKeysRoutes(services: {
  inventory: KeyInventory;
  keygen?: { service: CloudKvKeygen; limits: WriteLimits };
  writer?: { service: CloudKvWriter; limits: WriteLimits };
}): Route[] {
  const { inventory, keygen, writer } = services;
  const routes = [
    route({
      method: "GET",
      path: SIGNER_KEYS_PATH,
      // Operational inventory: the scope is checked, not the keys (it may list keys the caller cannot use).
      access: { kind: "scope", scope: "signer_keys_list" },
      servedWhileSealed: false,
      handle: ({ query }) => inventory.page(query),
    }),
  ];
  if (keygen) {
    routes.push(
      route({
        method: "POST",
        path: GENERATE_PATH,
        access: { kind: "scope", scope: "signer_keys_generate" },
        servedWhileSealed: false,
        ...keygen.limits,
        body: keygen.service.request,
        handle: ({ body }) => keygen.service.generate(body),
      }),
    );
  }
  if (writer) {
    routes.push(
      route({
        method: "POST",
        path: SIGNER_KEYS_PATH,
        access: { kind: "scope", scope: "signer_keys_write" },
        servedWhileSealed: false,
        ...writer.limits,
        body: writer.service.requests.import,
        handle: ({ body }) => writer.service.import(body),
      }),
      route({
        method: "DELETE",
        path: SIGNER_KEYS_PATH,
        access: { kind: "scope", scope: "signer_keys_delete" },
        servedWhileSealed: false,
        ...writer.limits,
        body: writer.service.requests.delete,
        handle: ({ body }) => writer.service.delete(body),
      }),
    );
  }
  return routes;
}
