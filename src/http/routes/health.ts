import type { HealthRegistry } from "../../observability/health";
import type { Handlers } from "../table";

/**
 * JSON when asked for, or when a GET declares a JSON body (Lodestar 1.5's upcheck sends
 * `Content-Type: application/json` with a wildcard Accept and parses the answer as JSON); plain "OK"
 * otherwise, as Web3Signer answers and as `curl /upcheck` shows.
 */
function wantsJson(headers: Headers): boolean {
  const accept = (headers.get("accept") ?? "").toLowerCase();
  const contentType = (headers.get("content-type") ?? "").toLowerCase();
  return accept.includes("application/json") || contentType.startsWith("application/json");
}

/** Liveness (`/upcheck`, Web3Signer's plain "OK") and readiness (`/healthcheck`, JSON). */
export function healthHandlers(health: HealthRegistry): Handlers<"upcheck" | "healthcheck"> {
  return {
    upcheck: ({ headers }) =>
      wantsJson(headers)
        ? Response.json({ status: "OK" })
        : new Response("OK", { headers: { "content-type": "text/plain; charset=utf-8" } }),
    healthcheck: async () => {
      const report = await health.report();
      return Response.json(report, { status: report.status === "UP" ? 200 : 503 });
    },
  };
}
