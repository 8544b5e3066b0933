// What a module gets when the proxy store fails under a running signer (sqlite proxy store, one
// BLS worker): a write the database refuses. The store fails for real: a second connection on
// the same file adds a trigger that aborts inserts.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { TempDir } from "../support/cli";
import { cbCall, startCommitBoostSigner } from "../support/commit-boost";
import { scrapeMetrics } from "../support/metrics";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const [KEY0 = ""] = INTEROP_KEYS;

const dir = new TempDir();
const storePath = join(dir.path, "failing-proxies.sqlite");
let signer: InProcessSigner;
let cb = "";
let db: Database;

beforeAll(async () => {
  signer = await startCommitBoostSigner(dir, "failing", {
    store: `{backend: sqlite, path: ${storePath}}`,
    workers: 1,
  });
  cb = signer.signer.commitBoostUrl ?? "";
  db = new Database(storePath);
  db.exec("PRAGMA busy_timeout = 5000");
});

afterAll(async () => {
  db?.close();
  await signer?.stop();
  dir.remove();
});

/** Keys the BLS workers hold, from the signer's own gauge. */
async function workerKeys(): Promise<number> {
  const metrics = await scrapeMetrics(signer.signer.metricsUrl);
  let keys = 0;
  for (const [name, value] of metrics) if (name.startsWith("signer_bls_worker_keys")) keys += value;
  return keys;
}

const generate = (scheme: "bls" | "ecdsa") =>
  cbCall(cb, "/signer/v1/generate_proxy_key", { pubkey: KEY0, scheme });

async function listedProxies(): Promise<string[]> {
  const response = await cbCall(cb, "/signer/v1/get_pubkeys");
  const { keys } = response.json() as {
    keys: { consensus: string; proxy_bls: string[]; proxy_ecdsa: string[] }[];
  };
  const entry = keys.find((k) => k.consensus === KEY0);
  return [...(entry?.proxy_bls ?? []), ...(entry?.proxy_ecdsa ?? [])];
}

describe("generate_proxy_key when the store does not record the proxy", () => {
  test("503 proxy_store_unavailable; the BLS key imported for it is forgotten; a retry works", async () => {
    const keysBefore = await workerKeys();
    const listedBefore = await listedProxies();
    db.exec(`CREATE TRIGGER refuse_proxies BEFORE INSERT ON sigil_cb_proxies
             BEGIN SELECT RAISE(ABORT, 'proxy writes refused by the test'); END`);
    try {
      for (const scheme of ["bls", "ecdsa"] as const) {
        const refused = await generate(scheme);
        expect(refused.status).toBe(503);
        expect(refused.json()).toEqual({
          code: "proxy_store_unavailable",
          message:
            "the sqlite proxy store did not record the new proxy: nothing was kept; retry once the store is writable",
        });
      }
      // No worker keeps the secret of a proxy that no row records, and none is listed.
      expect(await workerKeys()).toBe(keysBefore);
      expect(await listedProxies()).toEqual(listedBefore);
      const logged = signer.logs.filter((line) => line.includes("commit-boost proxy not stored"));
      expect(logged).toHaveLength(2);
      expect(logged[0]).toContain("proxy writes refused by the test");
    } finally {
      db.exec("DROP TRIGGER refuse_proxies");
    }
    const stored = await generate("bls");
    expect(stored.status).toBe(200);
    expect(await workerKeys()).toBe(keysBefore + 1);
  });
});
