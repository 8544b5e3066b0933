import { writeCutoff } from "../../keys/batch";
import type { CloudKvKeygen } from "../../keys/cloud-kv/keygen";
import type { KeyInventory } from "../../keys/inventory";
import type { KeyService } from "../../keys/key-service";
import { keyRule } from "../route";
import type { Handlers } from "../table";

type SignerKeys = "listSignerKeys" | "generateKeys" | "importSignerKeys" | "deleteSignerKeys";

/**
 * The signer's own key routes: the inventory always; generate and import/delete only when
 * cloud_kv keygen / writable are enabled (otherwise they have no handler and do not exist: 404).
 * The inventory, import and delete apply the key rule to every key; generate makes keys that do
 * not exist yet, so its scope alone decides. Each write stops writing before its deadline.
 */
export function signerKeysHandlers(services: {
  inventory: KeyInventory;
  keygen?: { service: CloudKvKeygen; timeoutMs: number };
  writer?: { service: KeyService; timeoutMs: number };
}): Partial<Handlers<SignerKeys>> {
  const { inventory, keygen, writer } = services;
  return {
    listSignerKeys: ({ query }, caller) => inventory.page(query, keyRule(caller)),
    ...(keygen && {
      generateKeys: ({ body, meta }) =>
        keygen.service.generate(body, writeCutoff(meta.deadline, keygen.timeoutMs)),
    }),
    ...(writer && {
      importSignerKeys: ({ body, meta }, caller) =>
        writer.service.import("cloud_kv", body, keyRule(caller), {
          cutoff: writeCutoff(meta.deadline, writer.timeoutMs),
        }),
      deleteSignerKeys: ({ body }, caller) =>
        writer.service.delete("cloud_kv", body, keyRule(caller)),
    }),
  };
}
