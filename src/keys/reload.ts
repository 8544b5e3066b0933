import type { Logger } from "../observability/log";

/** Web3Signer's reload states (GET /reload). */
export type ReloadState = "idle" | "running" | "completed" | "completed_with_errors" | "failed";

export interface ReloadStatus {
  readonly status: ReloadState;
  /** When the last reload started (while running) or ended, ISO-8601. */
  readonly lastOperationTime?: string;
  /** With completed_with_errors or failed: what went wrong (no secrets). */
  readonly lastError?: string;
}

/** One source a reload reads: `run` answers how many keys failed, or undefined when skipped. */
export interface ReloadStep {
  readonly name: string;
  run(): Promise<{ readonly failed: number } | undefined>;
}

/**
 * Reloads the key sources in the background (POST /reload, SIGHUP): `request` returns at once.
 * One reload runs at a time; a request that arrives during one schedules one more after it (at
 * most one waits, however many requests come), so the sources are always read as they were at
 * the latest request, and a flood of requests costs at most two reloads.
 */
export class KeyReloader {
  #state: ReloadState = "idle";
  #time: string | undefined;
  #error: string | undefined;
  #running: Promise<void> | undefined;
  /** The trigger of the reload that waits, if one does. */
  #again: string | undefined;

  constructor(
    private readonly steps: readonly ReloadStep[],
    private readonly logger: Logger,
    /**
     * Runs after each reload: the composition root collects the garbage a reload leaves at once
     * (the keys it let go of, everything it read), so memory after a reload is the steady state.
     */
    private readonly after: () => void = () => {},
  ) {}

  request(trigger: string): void {
    if (this.#running) {
      this.#again = trigger;
      return;
    }
    this.#running = this.#loop(trigger).finally(() => {
      this.#running = undefined;
    });
  }

  status(): ReloadStatus {
    return {
      status: this.#state,
      ...(this.#time === undefined ? {} : { lastOperationTime: this.#time }),
      ...(this.#error === undefined ? {} : { lastError: this.#error }),
    };
  }

  /** Resolves once no reload runs or waits. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #loop(first: string): Promise<void> {
    let trigger: string | undefined = first;
    while (trigger !== undefined) {
      this.#again = undefined;
      await this.#once(trigger);
      trigger = this.#again;
    }
  }

  async #once(trigger: string): Promise<void> {
    this.#state = "running";
    this.#time = new Date().toISOString();
    this.#error = undefined;
    const started = performance.now();
    let failed = 0;
    const broken: string[] = [];
    for (const step of this.steps) {
      try {
        failed += (await step.run())?.failed ?? 0;
      } catch (error) {
        broken.push(`${step.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const collecting = performance.now();
    this.after();
    const collectMs = performance.now() - collecting;
    this.#time = new Date().toISOString();
    if (broken.length > 0) {
      this.#state = "failed";
      this.#error = `reload failed (the keys loaded before stay): ${broken.join("; ")}`;
      this.logger.warn("key reload failed; the keys loaded before stay in use", {
        trigger,
        error: broken.join("; "),
      });
    } else if (failed > 0) {
      this.#state = "completed_with_errors";
      this.#error = `reload completed with ${failed} key loading error(s)`;
    } else this.#state = "completed";
    this.logger.info("keys reloaded", {
      trigger,
      status: this.#state,
      failed,
      seconds: Number(((performance.now() - started) / 1000).toFixed(3)),
      after_ms: Number(collectMs.toFixed(1)),
    });
  }
}
