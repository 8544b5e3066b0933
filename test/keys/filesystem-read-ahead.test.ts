// The first load (syncReads) stops reading descriptors while MAX_RAW_BATCHES_AHEAD batches of raw
// keys wait for the BLS backend, and goes on as they are answered: the keys read ahead of slow
// workers are memory at start-up (docs/performance.md, startup).
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BlsBackend, BlsImportResult } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { loadFilesystemKeys } from "../../src/keys/filesystem";
import { testLogger } from "../support/log-capture";

const KEYS = 4000;
const BATCH = 256;
const dir = mkdtempSync(join(tmpdir(), "sigil-read-ahead-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const secretOf = (i: number) => {
  const secret = new Uint8Array(32);
  secret[0] = 0x22;
  secret[30] = i >> 8;
  secret[31] = i & 0xff;
  return secret;
};
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

test("reading pauses while batches wait for the backend, and every key loads once answered", async () => {
  for (let i = 0; i < KEYS; i++) {
    const name = `raw${String(i).padStart(5, "0")}.yaml`;
    writeFileSync(join(dir, name), `type: file-raw\nprivateKey: "${hex(secretOf(i))}"\n`);
  }
  const blst = createBlstBackend();
  let handed = 0;
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  // A backend whose answers wait for the gate, as slow workers would.
  const bls: BlsBackend = {
    ...blst,
    importSecretKeys(secrets): Promise<BlsImportResult[]> {
      handed += secrets.length;
      const copies = secrets.map((secret) => secret.slice());
      return gate.then(() => copies.map((copy) => ({ ok: true, key: blst.importSecretKey(copy) })));
    },
  };
  const loading = loadFilesystemKeys({
    paths: [dir],
    keystoreConcurrency: 2,
    rawConcurrency: 8,
    bls,
    logger: testLogger("warn"),
    syncReads: true,
  });
  // Let the loader read as far as it will.
  for (let waited = 0; handed === 0 && waited < 5000; waited += 10) await Bun.sleep(10);
  await Bun.sleep(300);
  expect(handed).toBeGreaterThan(0);
  expect(handed).toBeLessThanOrEqual(9 * BATCH);
  open();
  const result = await loading;
  expect(handed).toBe(KEYS);
  expect(result.failures).toEqual([]);
  expect(result.keys).toHaveLength(KEYS);
  const noble = createNobleBackend();
  for (const i of [0, 1, 2047, KEYS - 1]) {
    expect(result.keys[i]?.pubkey).toBe(hex(noble.importSecretKey(secretOf(i)).publicKey));
  }
});
