import { Elysia } from "elysia";
import type { HealthRegistry } from "../../observability/health";

function wantsJson(request: Request): boolean {
  return (request.headers.get("accept") ?? "").toLowerCase().includes("application/json");
}

/** Liveness (`/upcheck`, Web3Signer's plain "OK") and readiness (`/healthcheck`, JSON). */
export function healthRoutes(health: HealthRegistry) {
  return new Elysia()
    .get("/upcheck", ({ request }) =>
      wantsJson(request)
        ? Response.json({ status: "OK" })
        : new Response("OK", { headers: { "content-type": "text/plain; charset=utf-8" } }),
    )
    .get("/healthcheck", async () => {
      const report = await health.report();
      return Response.json(report, { status: report.status === "UP" ? 200 : 503 });
    });
}
