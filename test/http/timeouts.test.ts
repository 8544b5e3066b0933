import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { TempDir } from "../support/cli";
import { scrapeMetrics } from "../support/metrics";
import { verifiesAgainstOracle } from "../support/oracle";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/**
 * More signing work than fits in the request deadline: the pure-TypeScript backend on the main
 * thread signs about a hundred attestations a second, and every request has one second. Each
 * request is answered 200 or 503 request_timeout, and the signing metrics count exactly those
 * answers: a request answered 503 is never counted signed, however its job ended.
 */

const dir = new TempDir();
let signer: InProcessSigner;
const REQUESTS_PER_KEY = 100;

beforeAll(async () => {
  signer = await startInProcessSigner(dir, "timeouts", {
    server: "server: {listen_address: 127.0.0.1, listen_port: 0, request_timeout_seconds: 1}",
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      "bls: {backend: noble, workers: 0}",
      "max_concurrent_signing_jobs: 2",
    ],
    logLevel: "error",
  });
});

afterAll(async () => {
  await signer.stop();
  dir.remove();
});

describe("request deadlines", () => {
  test("every request is answered 200 or 503 request_timeout, and the metrics say the same", async () => {
    const before = await scrapeMetrics(signer.signer.metricsUrl);
    // One attestation per key, asked for again and again: the first to be checked is recorded and
    // the others are the same data, signed again, in whatever order the connections deliver
    // them. Different votes of one key would not be: one that arrives after a later vote of its
    // key is below that record's low watermark and refused (412), which is not what this test is
    // about.
    const requests = INTEROP_KEYS.flatMap((pubkey) =>
      Array.from({ length: REQUESTS_PER_KEY }, () => ({
        pubkey,
        ...attestationRequest(2, 3, 0),
      })),
    );
    const answers = await Promise.all(
      requests.map(async ({ pubkey, body, message }) => {
        const response = await fetch(`${signer.url}/api/v1/eth2/sign/${pubkey}`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify(body),
        });
        const json = (await response.json()) as { signature?: string; code?: string };
        if (response.status === 200) {
          expect(
            verifiesAgainstOracle(
              { pubkey, signingRoot: message.signingRoot },
              json.signature ?? "",
            ),
          ).toBe(true);
        }
        return response.status === 200 ? "signed" : `${response.status} ${json.code}`;
      }),
    );
    const count = (answer: string) => answers.filter((a) => a === answer).length;
    const signed = count("signed");
    const timedOut = count("503 request_timeout");
    // Named on failure: which other answers came, not only how many.
    expect(answers.filter((a) => a !== "signed" && a !== "503 request_timeout")).toEqual([]);
    expect(signed + timedOut).toBe(requests.length);
    // The run only shows something if both kinds of answer happened.
    expect(signed).toBeGreaterThan(0);
    expect(timedOut).toBeGreaterThan(0);

    // Jobs still running when their 503 went out finish in the background; let them.
    await Bun.sleep(1500);
    const after = await scrapeMetrics(signer.signer.metricsUrl);
    const delta = (status: string) => {
      const key = `signer_signing_requests_total{operation="ATTESTATION",status="${status}"}`;
      return (after.get(key) ?? 0) - (before.get(key) ?? 0);
    };
    expect(delta("signed")).toBe(signed);
    expect(delta("request_timeout")).toBe(timedOut);
    const rejected =
      (after.get('signer_signing_rejected_total{reason="timeout"}') ?? 0) -
      (before.get('signer_signing_rejected_total{reason="timeout"}') ?? 0);
    expect(rejected).toBe(timedOut);
  });
});
