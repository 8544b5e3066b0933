/**
 * Health of the parts of a running signer. Each feature registers a check; the report is UP
 * only when every check is UP. A check that throws or takes too long counts as DOWN, so a
 * stuck database cannot hang the health endpoint.
 */
export type HealthStatus = "UP" | "DOWN";

export interface CheckResult {
  status: HealthStatus;
  data?: Record<string, string | number | boolean>;
}

export interface HealthReport {
  status: HealthStatus;
  outcome: HealthStatus;
  checks: { id: string; status: HealthStatus; data?: CheckResult["data"] }[];
}

export type HealthCheck = () => CheckResult | Promise<CheckResult>;

const CHECK_TIMEOUT_MS = 2000;

export class HealthRegistry {
  private readonly checks = new Map<string, HealthCheck>();

  register(id: string, check: HealthCheck): void {
    if (this.checks.has(id)) throw new Error(`health check "${id}" registered twice`);
    this.checks.set(id, check);
  }

  async report(timeoutMs = CHECK_TIMEOUT_MS): Promise<HealthReport> {
    const checks = await Promise.all(
      [...this.checks].map(async ([id, check]) => ({ id, ...(await runCheck(check, timeoutMs)) })),
    );
    const status: HealthStatus = checks.every((c) => c.status === "UP") ? "UP" : "DOWN";
    return { status, outcome: status, checks };
  }
}

async function runCheck(check: HealthCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(
      () => resolve({ status: "DOWN", data: { error: "check timed out" } }),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([Promise.resolve().then(check), timeout]);
  } catch (error) {
    return {
      status: "DOWN",
      data: { error: error instanceof Error ? error.message : "check failed" },
    };
  } finally {
    clearTimeout(timer);
  }
}
