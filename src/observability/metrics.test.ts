import { describe, expect, test } from "bun:test";
import { SignerMetrics } from "./metrics";

const line = (text: string, key: string) =>
  Number(
    text
      .split("\n")
      .find((l) => l.startsWith(`${key} `))
      ?.split(" ")[1] ?? Number.NaN,
  );

describe("SignerMetrics.signed", () => {
  test("counts each signed request once, whenever and however often Prometheus scrapes", async () => {
    const metrics = new SignerMetrics();
    const signed = 'signer_signing_requests_total{operation="ATTESTATION",status="signed"}';
    metrics.signed("ATTESTATION", 0.001, 0.002);
    metrics.signed("ATTESTATION", 0.001, 0.2);
    let text = await metrics.registry.metrics();
    expect(line(text, signed)).toBe(2);
    text = await metrics.registry.metrics();
    expect(line(text, signed)).toBe(2);
    metrics.signed("ATTESTATION", 0.003, 0.004);
    metrics.signed("BLOCK_V2", 0.003, 0.004);
    metrics.signingRequests.inc({ operation: "ATTESTATION", status: "slashing_protection" });
    text = await metrics.registry.metrics();
    expect(line(text, signed)).toBe(3);
    expect(line(text, 'signer_signing_requests_total{operation="BLOCK_V2",status="signed"}')).toBe(
      1,
    );
    expect(
      line(
        text,
        'signer_signing_requests_total{operation="ATTESTATION",status="slashing_protection"}',
      ),
    ).toBe(1);
    const sign = 'operation="ATTESTATION",phase="sign"';
    expect(line(text, `signer_signing_duration_seconds_count{${sign}}`)).toBe(3);
    expect(line(text, `signer_signing_duration_seconds_bucket{le="0.0025",${sign}}`)).toBe(1);
    expect(line(text, `signer_signing_duration_seconds_bucket{le="0.25",${sign}}`)).toBe(3);
    expect(line(text, `signer_signing_duration_seconds_sum{${sign}}`)).toBeCloseTo(0.206, 10);
  });
});
