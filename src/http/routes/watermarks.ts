import type { Handlers } from "../table";

/**
 * GET /api/v1/eth2/highWatermark (scope signer_status): Web3Signer's endpoint, the database's high
 * watermark as `{"epoch":"…","slot":"…"}` (uint64 as decimal strings), `{}` when there is none.
 */
export function watermarkHandlers(
  highWatermark: () => Promise<{ epoch?: string; slot?: string }>,
): Handlers<"highWatermark"> {
  return { highWatermark: () => highWatermark() };
}
