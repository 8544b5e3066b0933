import { writeCutoff } from "../../keys/batch";
import type { CloudKvKeygen } from "../../keys/cloud-kv/keygen";
import type { deleteRequest, importRequest } from "../../keys/import-request";
import type { KeyInventory } from "../../keys/inventory";
import type { KeyService } from "../../keys/key-service";
import { keyRule, type Route, route } from "../route";

export const SIGNER_KEYS_PATH = "/api/v1/signer/keys";
export const GENERATE_PATH = "/api/v1/signer/keys/generate";

/** A cloud_kv write route's own limits (key_sources.cloud_kv.keygen / .writable). */
export interface WriteLimits {
  readonly timeoutMs: number;
  readonly maxBodyBytes?: number;
}

/** cloud_kv import and delete through the key service, with the bodies for writable's item limit. */
export interface CloudKvWrites {
  readonly service: KeyService;
  readonly limits: WriteLimits;
  readonly requests: {
    readonly import: ReturnType<typeof importRequest>;
    readonly delete: ReturnType<typeof deleteRequest>;
  };
}

/**
 * The signer's own key routes: the inventory always; generate and import/delete only when
 * cloud_kv keygen / writable are enabled (otherwise they do not exist: 404). The inventory,
 * import and delete apply the key rule to every key (the listing scope is signer_keys_list);
 * generate makes keys that do not exist yet, so its scope alone decides.
 */
export function signerKeysRoutes(services: {
  inventory: KeyInventory;
  keygen?: { service: CloudKvKeygen; limits: WriteLimits };
  writer?: CloudKvWrites;
}): Route[] {
  const { inventory, keygen, writer } = services;
  const routes = [
    route({
      method: "GET",
      path: SIGNER_KEYS_PATH,
      access: { kind: "keys", scope: "signer_keys_list", list: "signer_keys_list" },
      servedWhileSealed: false,
      handle: ({ query }, caller) => inventory.page(query, keyRule(caller)),
    }),
  ];
  if (keygen) {
    const { timeoutMs } = keygen.limits;
    routes.push(
      route({
        method: "POST",
        path: GENERATE_PATH,
        access: { kind: "scope", scope: "signer_keys_generate" },
        servedWhileSealed: false,
        ...keygen.limits,
        body: keygen.service.request,
        handle: ({ body, meta }) =>
          keygen.service.generate(body, writeCutoff(meta.deadline, timeoutMs)),
      }),
    );
  }
  if (writer) {
    const { service, limits, requests } = writer;
    routes.push(
      route({
        method: "POST",
        path: SIGNER_KEYS_PATH,
        access: { kind: "keys", scope: "signer_keys_write", list: "signer_keys_list" },
        servedWhileSealed: false,
        ...limits,
        body: requests.import,
        handle: ({ body, meta }, caller) =>
          service.import("cloud_kv", body, keyRule(caller), {
            cutoff: writeCutoff(meta.deadline, limits.timeoutMs),
          }),
      }),
      route({
        method: "DELETE",
        path: SIGNER_KEYS_PATH,
        access: { kind: "keys", scope: "signer_keys_delete", list: "signer_keys_list" },
        servedWhileSealed: false,
        ...limits,
        body: requests.delete,
        handle: ({ body }, caller) => service.delete("cloud_kv", body, keyRule(caller)),
      }),
    );
  }
  return routes;
}
