import { route } from "../route";

/**
 * GET /api/v1/eth2/highWatermark (scope signer_status): Web3Signer's endpoint, the database's high
 * watermark as `{"epoch":"…","slot":"…"}` (uint64 as decimal strings), `{}` when there is none.
 */
export function watermarkRoutes(highWatermark: () => Promise<{ epoch?: string; slot?: string }>) {
  return [
    route({
      method: "GET",
      path: "/api/v1/eth2/highWatermark",
      access: { kind: "scope", scope: "signer_status" },
      servedWhileSealed: false,
      handle: () => highWatermark(),
    }),
  ];
}
