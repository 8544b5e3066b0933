/** The signing service wired as the signer wires it, over a given store and BLS backend (tests). */
import { StoreGuard } from "../../src/antislashing/guard";
import type { SlashingStore } from "../../src/antislashing/store";
import type { Principal } from "../../src/auth/authenticator";
import type { BlsBackend } from "../../src/bls/backend";
import { KeyStore } from "../../src/keys/key-store";
import type { Logger } from "../../src/observability/log";
import { CanaryMonitor } from "../../src/signing/canary";
import { JobLimiter } from "../../src/signing/limiter";
import { NETWORKS } from "../../src/signing/network";
import { SigningService } from "../../src/signing/service";
import { interopSecret } from "./interop";
import type { attestationRequest } from "./slashing";
import { INTEROP_KEYS } from "./slashing";

/** A caller that may sign with every key (auth mode none). */
const OPERATOR_OF_EVERY_KEY = async (): Promise<Principal> => ({
  kind: "unrestricted",
  management: false,
});

/**
 * The real SigningService and StoreGuard over `store`, mainnet, with the first interop key loaded
 * into `bls`; `sign` sends it a request as the HTTP route does.
 */
export function interopSigningService(
  store: SlashingStore,
  bls: BlsBackend,
  logger: Logger,
  limits: { maxConcurrent: number; maxQueued: number } = { maxConcurrent: 64, maxQueued: 64 },
) {
  const pubkey = INTEROP_KEYS[0] as string;
  const keys = new KeyStore();
  keys.add({
    pubkey,
    key: bls.importSecretKey(interopSecret(0)),
    source: "filesystem",
    readonly: true,
  });
  const service = new SigningService({
    keys,
    bls,
    limiter: new JobLimiter(limits),
    guard: new StoreGuard(store, logger),
    network: NETWORKS.mainnet,
    canaries: new CanaryMonitor([], { increment: () => {} }, logger),
    logger,
  });
  let counter = 0;
  const sign = (request: ReturnType<typeof attestationRequest>) =>
    service.handle(OPERATOR_OF_EVERY_KEY, pubkey, async () => request.body, {
      requestId: `r${++counter}`,
      deadline: new AbortController().signal,
    });
  return { pubkey, sign };
}
