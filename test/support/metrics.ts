import { expect } from "bun:test";

/** `name{labels} value` lines of the Prometheus text format, by metric name and label set. */
export async function scrapeMetrics(metricsUrl: string): Promise<Map<string, number>> {
  const response = await fetch(`${metricsUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split("\n")) {
    const match = line.match(/^([a-z_]+)(\{[^}]*\})? (\S+)$/);
    if (match?.[1] && match[3]) samples.set(`${match[1]}${match[2] ?? ""}`, Number(match[3]));
  }
  return samples;
}
