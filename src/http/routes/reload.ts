import type { KeyReloader } from "../../keys/reload";
import type { Handlers } from "../table";

/**
 * Web3Signer's reload routes. POST answers 202 at once and reloads the key sources in the
 * background (the filesystem paths; cloud_kv too while unsealed); GET says how the last reload
 * went. Access (docs/keys.md): a reload changes which keys sign, so with auth configured it
 * takes the scope that loads keys, import_keystores; without auth it is open, as Web3Signer's.
 */
export function reloadHandlers(reloader: KeyReloader): Handlers<"reload" | "reloadStatus"> {
  return {
    reload: () => {
      reloader.request("api");
      return Response.json(
        {
          status: "accepted",
          message:
            "Reload operation accepted and is running in the background. Use GET /reload to check status.",
        },
        { status: 202 },
      );
    },
    reloadStatus: () => reloader.status(),
  };
}
