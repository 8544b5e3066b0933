import type { Logger } from "../observability/log";
import type { RunningSigner } from "./signer";

/**
 * SIGTERM/SIGINT start a graceful stop and exit 0 when it completes (systemd reads that as a
 * clean stop). A second signal during the stop exits at once with 1.
 */
export function stopOnSignals(signer: RunningSigner, logger: Logger): Promise<number> {
  const log = logger.child("app");
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn("second signal: exiting without waiting", { signal });
        resolve(1);
        return;
      }
      stopping = true;
      log.info("stopping: no new requests; waiting for in-flight ones", {
        signal,
        in_flight: signer.http.inFlight(),
      });
      signer.stop().then(
        ({ forced }) => {
          if (forced) log.warn("grace period over: closed remaining connections");
          log.info("stopped");
          resolve(0);
        },
        (error: unknown) => {
          log.error("error while stopping", { error: String(error) });
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}
