import type { Logger } from "../observability/log";
import type { RunningSigner } from "./signer";

export interface StopSignals {
  /** Resolves with the first SIGTERM/SIGINT. */
  readonly received: Promise<NodeJS.Signals>;
  /**
   * Runs `reload` on every SIGHUP from now on; SIGHUPs that came before (during start-up) run it
   * once now.
   */
  onReload(reload: () => void): void;
}

/**
 * Installed before anything binds, so a signal that arrives during start-up is not lost to the
 * default handler (SIGHUP's would end the process). A second stop signal exits at once with 1
 * (the operator insists). SIGHUP reloads the keys (docs/keys.md, "Reload").
 */
export function listenForStopSignals(logger: Logger): StopSignals {
  let reload: (() => void) | undefined;
  let reloadAsked = false;
  process.on("SIGHUP", () => {
    logger.child("app").info("SIGHUP: reloading the keys");
    if (reload) reload();
    else reloadAsked = true;
  });
  let first: NodeJS.Signals | undefined;
  const received = new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (first) {
        logger.warn("second signal: exiting without waiting", { signal });
        process.exit(1);
      }
      first = signal;
      resolve(signal);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  return {
    received,
    onReload(run) {
      reload = run;
      if (reloadAsked) run();
      reloadAsked = false;
    },
  };
}

/**
 * Waits for a stop signal, then stops gracefully. Returns the exit code: 0 when the stop
 * completed (systemd reads that as a clean stop), 1 when stopping itself failed.
 */
export async function runUntilStopped(
  signer: RunningSigner,
  signals: StopSignals,
  logger: Logger,
): Promise<number> {
  const log = logger.child("app");
  signals.onReload(() => signer.reloadKeys("sighup"));
  const signal = await signals.received;
  log.info("stopping: no new requests; waiting for in-flight ones", {
    signal,
    in_flight: signer.http.inFlight(),
  });
  try {
    const { forced } = await signer.stop();
    if (forced) log.warn("grace period over: closed remaining connections");
    log.info("stopped");
    return 0;
  } catch (error) {
    log.error("error while stopping", { error: String(error) });
    return 1;
  }
}
