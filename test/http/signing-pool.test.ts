// Signing through HTTP with the BLS worker pool (bls.workers: 2): many concurrent requests, each
// signature checked against the signing root Lodestar computes and an independently made signature.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { resolve } from "node:path";
import type { RunningSigner } from "../../src/app/signer";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { hexToBytes } from "../support/oracle";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const REQUESTS = 400;

const dir = new TempDir();
let logLines: string[] = [];
let signer: RunningSigner;

beforeAll(async () => {
  const started = await startInProcessSigner(dir, "pool", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      "antislashing: {backend: noop}",
      "bls: {workers: 2}",
    ],
  });
  signer = started.signer;
  logLines = started.logs;
});

afterAll(async () => {
  await signer.stop();
  dir.remove();
});

test("the signer starts a pool of 2 BLS workers", () => {
  const line = logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === "BLS worker pool");
  expect(line).toMatchObject({ workers: 2 });
});

test(`${REQUESTS} concurrent sign requests over 4 keys all get the right signature`, async () => {
  const blst = createBlstBackend();
  const noble = createNobleBackend();
  // Made on this thread from the interop secrets, not by the signer under test.
  const references = INTEROP_KEYS.map((_, k) => blst.importSecretKey(interopSecret(k)));
  const cases = Array.from({ length: REQUESTS }, (_, i) => {
    const k = i % INTEROP_KEYS.length;
    return { k, request: attestationRequest(0, 1 + Math.floor(i / 4), i) };
  });
  const signatures = await Promise.all(
    cases.map(async ({ k, request }) => {
      const response = await fetch(`${signer.http.url}/api/v1/eth2/sign/${INTEROP_KEYS[k]}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(request.body),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { signature: string }).signature;
    }),
  );
  let wrong = 0;
  cases.forEach(({ k, request }, i) => {
    const root = hexToBytes(request.message.signingRoot);
    const signature = hexToBytes(signatures[i] as string);
    const pubkey = hexToBytes(INTEROP_KEYS[k] as string);
    const expected = blst.sign(references[k] as (typeof references)[number], root);
    if (Buffer.compare(signature, expected) !== 0 || !blst.verify(pubkey, root, signature)) wrong++;
  });
  expect(wrong).toBe(0);
  // noble (≈25 ms a verify) as a second, independent verifier on a sample.
  for (let i = 0; i < REQUESTS; i += 50) {
    const { k, request } = cases[i] as (typeof cases)[number];
    const root = hexToBytes(request.message.signingRoot);
    expect(
      noble.verify(
        hexToBytes(INTEROP_KEYS[k] as string),
        root,
        hexToBytes(signatures[i] as string),
      ),
    ).toBe(true);
  }
});
