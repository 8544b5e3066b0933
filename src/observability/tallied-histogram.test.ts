import { describe, expect, test } from "bun:test";
import { Histogram, Registry } from "prom-client";
import { TalliedHistogram } from "./tallied-histogram";

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const config = (registry: Registry) => ({
  name: "signer_signing_duration_seconds",
  help: "Time of signed requests.",
  labelNames: ["operation", "phase"] as const,
  buckets: BUCKETS,
  registers: [registry],
});

/** The same observations into prom-client's own histogram and into ours. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const oracle = new Histogram(config(theirs));
  const tallied = new TalliedHistogram({ ...config(ours), labelNames: ["operation", "phase"] });
  return {
    theirs,
    ours,
    tallied,
    observe(labels: { operation: string; phase: string }, value: number) {
      oracle.observe(labels, value);
      tallied.series(labels).observe(value);
    },
  };
}

describe("TalliedHistogram", () => {
  test("its exposition is prom-client's histogram's, byte for byte", async () => {
    const h = both();
    // Bounds themselves, values between them, above the last, zero; several series.
    const values = [0, 0.0005, 0.0007, 0.001, 0.003, 0.05, 0.3, 1, 2.5, 9.99, 10, 11, 1234.5];
    for (let i = 0; i < 500; i++) {
      const operation = ["ATTESTATION", "BLOCK_V2", "AGGREGATE_AND_PROOF"][i % 3] as string;
      const phase = i % 2 === 0 ? "queue" : "sign";
      const value = i < values.length ? (values[i] as number) : Math.random() ** 4 * 12;
      h.observe({ operation, phase }, value);
    }
    const expected = await h.theirs.metrics();
    expect(expected).toContain('signer_signing_duration_seconds_bucket{le="0.0005"');
    expect(await h.ours.metrics()).toBe(expected);
    expect(await h.ours.getMetricsAsJSON()).toEqual(await h.theirs.getMetricsAsJSON());
  });

  test("a series looked up twice is the same series; nothing is exported before an observation", async () => {
    const h = both();
    expect(await h.ours.metrics()).toBe(await h.theirs.metrics());
    const one = h.tallied.series({ operation: "ATTESTATION", phase: "sign" });
    expect(h.tallied.series({ phase: "sign", operation: "ATTESTATION" })).toBe(one);
    one.observe(0.002);
    expect(await h.ours.metrics()).toContain(
      'signer_signing_duration_seconds_count{operation="ATTESTATION",phase="sign"} 1',
    );
  });

  test("a label it was not declared with, or a value that is no number, is refused", () => {
    const h = both();
    expect(() => h.tallied.series({ operation: "x", pubkey: "0x…" })).toThrow(/not included/);
    const series = h.tallied.series({ operation: "x", phase: "sign" });
    expect(() => series.observe(Number.NaN)).toThrow(TypeError);
    expect(series.count).toBe(0);
  });
});
