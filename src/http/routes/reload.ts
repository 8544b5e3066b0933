import type { KeyReloader } from "../../keys/reload";
import { route } from "../route";

export const RELOAD_PATH = "/reload";

/**
 * Web3Signer's reload routes. POST answers 202 at once and reloads the key sources in the
 * background (the filesystem paths; cloud_kv too while unsealed); GET says how the last reload
 * went. Access (docs/keys.md): a reload changes which keys sign, so with auth configured it
 * takes the scope that loads keys, import_keystores; without auth it is open, as Web3Signer's.
 */
export function reloadRoutes(reloader: KeyReloader) {
  return [
    route({
      method: "POST",
      path: RELOAD_PATH,
      access: { kind: "scope", scope: "import_keystores" },
      servedWhileSealed: false,
      bodyless: true,
      handle: () => {
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
    }),
    route({
      method: "GET",
      path: RELOAD_PATH,
      access: { kind: "scope", scope: "signer_status" },
      servedWhileSealed: false,
      handle: () => reloader.status(),
    }),
  ];
}
