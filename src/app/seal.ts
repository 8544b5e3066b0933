import type { Config } from "../config/schema";
import type { Logger } from "../observability/log";
import { SealService } from "../seal/service";
import { kmsClientFor } from "../seal/wrap/awskms";
import type { SignerStateStore } from "../state/store";

/**
 * The seal lifecycle of a stateful signer: created sealed (the master key is never stored), and
 * on an empty signer_state the one-time setup token is logged.
 */
export async function wireSeal(
  config: Config,
  store: SignerStateStore,
  logger: Logger,
): Promise<SealService> {
  const log = logger.child("seal");
  const cloudKv = config.key_sources.cloud_kv;
  const seal = new SealService({
    store,
    kmsClient: kmsClientFor,
    unsealTimeoutMs: (cloudKv.unseal_timeout_minutes ?? 0) * 60_000,
    defaults: { shareWrap: cloudKv.kms_key_arns, threshold: cloudKv.kms_threshold },
    logger: log,
  });
  const setupToken = await seal.issueSetupTokenIfUninitialized();
  if (setupToken) {
    // The spec's bootstrap: printed once, on an uninitialized signer_state; only its hash is kept.
    log.warn("signer_state is not initialized; one-time setup token follows", {
      setup_token: setupToken,
      next: "sigil operator init --setup-token env:VAR --share-wrap <awskms:ARN|age:RECIPIENT>,… --threshold N",
    });
  } else {
    log.info("sealed: waiting for a quorum of operators (sigil operator unseal)");
  }
  return seal;
}
