import type { KeyManagerService } from "../../keys/key-manager";
import { keyRule } from "../route";
import type { Handlers } from "../table";

/**
 * The Key Manager API's keystore routes. The key rule applies to every key of every route: a key
 * the caller may not list, it may not delete or import over.
 */
export function keyManagerHandlers(
  service: KeyManagerService,
): Handlers<"listKeystores" | "importKeystores" | "deleteKeystores"> {
  return {
    listKeystores: ({ meta }, caller) => service.list(keyRule(caller), meta.deadline),
    importKeystores: ({ body, meta }, caller) =>
      service.import(body, keyRule(caller), meta.deadline),
    deleteKeystores: ({ body, meta }, caller) =>
      service.delete(body, keyRule(caller), meta.deadline),
  };
}
