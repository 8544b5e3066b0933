import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { RunningSigner } from "../../src/app/signer";
import { TempDir } from "../support/cli";
import { scrapeMetrics } from "../support/metrics";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
let logs: string[] = [];
const [K0 = "", K1 = ""] = INTEROP_KEYS;
const TOKEN = "metrics-test-token-0123456789";
let signer: RunningSigner;

beforeAll(async () => {
  const keys = join(dir.path, "keys");
  mkdirSync(keys);
  for (const name of ["interop-0.yaml", "interop-1.yaml"])
    copyFileSync(join("examples/keys", name), join(keys, name));
  dir.file("keys/broken.yaml", "type: file-raw\nprivateKey: not-hex\n");
  const started = await startInProcessSigner(dir, "metrics", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${keys}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `canary_keys: ["${K1}"]`,
      "bls: {workers: 2}",
      "static_auth:",
      `  policies: [{name: vc, rules: [{effect: allow, scopes: [sign, public_keys], keys: ["${K0}", "${K1}"]}]}]`,
      `  tokens: [{secret: ${TOKEN}, policies: [vc]}]`,
    ],
  });
  signer = started.signer;
  logs = started.logs;
});

afterAll(async () => {
  await signer.stop();
  dir.remove();
});

const sign = (key: string, body: unknown, token?: string) =>
  fetch(`${signer.http.url}/api/v1/eth2/sign/${key}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });

const scrape = () => scrapeMetrics(signer.metricsUrl);

describe("metrics after real requests", () => {
  test("counters and histograms move as the requests say", async () => {
    const before = await scrape();
    const first = attestationRequest(10, 11, 1);
    expect((await sign(K0, first.body, TOKEN)).status).toBe(200);
    expect((await sign(K0, attestationRequest(12, 13, 2).body, TOKEN)).status).toBe(200);
    expect((await sign(K0, attestationRequest(10, 11, 3).body, TOKEN)).status).toBe(412); // double vote
    expect((await sign(K1, attestationRequest(10, 11, 4).body, TOKEN)).status).toBe(200); // canary
    expect((await sign(K0, first.body)).status).toBe(401);
    expect((await sign(INTEROP_KEYS[2] ?? "", first.body, TOKEN)).status).toBe(403);
    const after = await scrape();
    const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);

    expect(delta('signer_signing_requests_total{operation="ATTESTATION",status="signed"}')).toBe(3);
    expect(
      delta('signer_signing_requests_total{operation="ATTESTATION",status="slashing_protection"}'),
    ).toBe(1);
    expect(delta('signer_signing_requests_total{operation="unknown",status="unauthorized"}')).toBe(
      1,
    );
    expect(delta('signer_signing_requests_total{operation="ATTESTATION",status="forbidden"}')).toBe(
      1,
    );
    expect(
      delta('signer_slashing_refusals_total{operation="ATTESTATION",reason="double_vote"}'),
    ).toBe(1);
    expect(
      delta('signer_signing_duration_seconds_count{operation="ATTESTATION",phase="queue"}'),
    ).toBe(3);
    expect(
      delta('signer_signing_duration_seconds_count{operation="ATTESTATION",phase="sign"}'),
    ).toBe(3);
    expect(delta("signer_canary_signing_total")).toBe(1);
    expect(delta('signer_auth_denied_total{reason="unauthorized"}')).toBe(1);
    expect(delta('signer_auth_denied_total{reason="forbidden"}')).toBe(1);
    expect(after.get('signer_keys_loaded{source="filesystem"}')).toBe(2);
    expect(
      after.get('signer_key_load_failures_total{source="filesystem",reason="invalid_descriptor"}'),
    ).toBe(1);
    expect(after.get("signer_signing_queue_depth")).toBe(0);
    expect(after.get("signer_seal_state")).toBe(1);
    // Two keys, two workers: each worker holds one key (fewest-keys placement) and is idle now.
    for (const worker of ["0", "1"]) {
      expect(after.get(`signer_bls_worker_keys{worker="${worker}"}`)).toBe(1);
      expect(after.get(`signer_bls_worker_queued{worker="${worker}"}`)).toBe(0);
      expect(after.get(`signer_bls_worker_in_flight{worker="${worker}"}`)).toBe(0);
    }
    expect(after.has('signer_bls_worker_keys{worker="2"}')).toBe(false);
    expect(after.has("process_cpu_user_seconds_total")).toBe(true);
  });

  test("the canary warning names the key and the operation; refusals and denials are logged with a request id", () => {
    const records = logs.map((line) => JSON.parse(line) as Record<string, string>);
    const canary = records.find((r) => r.msg === "canary key signed");
    expect(canary?.level).toBe("warn");
    expect(canary?.pubkey).toBe(K1);
    expect(canary?.operation).toBe("ATTESTATION");
    const refusal = records.find((r) => r.msg === "signing refused by slashing protection");
    expect(refusal?.reason).toBe("double_vote");
    expect(refusal?.request_id).toBeTruthy();
    expect(refusal?.pubkey).toMatch(/^0xa99a76ed…/);
    const denial = records.find((r) => r.msg === "access denied" && r.code === "forbidden");
    expect(denial?.request_id).toBeTruthy();
    expect(logs.join("\n")).not.toContain(TOKEN);
  });

  test("the metrics listener serves only GET /metrics", async () => {
    const other = await fetch(`${signer.metricsUrl}/api/v1/eth2/publicKeys`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { code: string }).code).toBe("not_found");
  });
});
