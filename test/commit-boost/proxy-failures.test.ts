// What a module gets when the proxy store fails under a running signer (sqlite proxy store, one
// BLS worker): a write the database refuses, a store that cannot be read, and a stored proxy whose
// sealed secret does not open. The store fails for real: a second connection on the same file adds
// a trigger that aborts inserts, renames the table away, or edits a row, as a damaged, tampered or
// half-migrated database would.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { TempDir } from "../support/cli";
import { cbCall, startCommitBoostSigner } from "../support/commit-boost";
import { scrapeMetrics } from "../support/metrics";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const [KEY0 = ""] = INTEROP_KEYS;
const ROOT = `0x${"5c".repeat(32)}`;

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
      // The log names the proxy that was not kept: it signs nothing.
      const { proxy, scheme } = JSON.parse(logged[0] ?? "{}") as { proxy: string; scheme: string };
      expect(scheme).toBe("bls");
      const route = "/signer/v1/request_signature/proxy-bls";
      const attempt = await cbCall(cb, route, { proxy, object_root: ROOT, nonce: 1 });
      expect(attempt.status).toBe(404);
    } finally {
      db.exec("DROP TRIGGER refuse_proxies");
    }
    const stored = await generate("bls");
    expect(stored.status).toBe(200);
    expect(await workerKeys()).toBe(keysBefore + 1);
  });
});

describe("reads when the store cannot be read", () => {
  const UNREADABLE = {
    code: "proxy_store_unavailable",
    message: "the sqlite proxy store could not be read; retry once it is readable",
  };
  const signProxy = (proxy: string | undefined) =>
    cbCall(cb, "/signer/v1/request_signature/proxy-bls", { proxy, object_root: ROOT, nonce: 7 });

  test("503 proxy_store_unavailable for every read, the cause logged; 404 stays 404", async () => {
    const generated = await generate("bls");
    expect(generated.status).toBe(200);
    const { proxy } = (generated.json() as { message: { proxy: string } }).message;
    const sealed = db
      .query<{ sealed: string }, [string]>("SELECT sealed FROM sigil_cb_proxies WHERE proxy = ?")
      .get(proxy)?.sealed;
    expect(sealed).toBeString();
    // A proxy id the store never held: a fresh BLS pubkey-shaped id.
    const unknown = `0x${"a1".repeat(48)}`;
    const keysBefore = await workerKeys();
    const loggedBefore = signer.logs.length;
    // The signer's connection re-reads the schema and finds no table to read from.
    db.exec("ALTER TABLE sigil_cb_proxies RENAME TO sigil_cb_proxies_away");
    try {
      const listed = await cbCall(cb, "/signer/v1/get_pubkeys");
      expect(listed.status).toBe(503);
      expect(listed.json()).toEqual(UNREADABLE);
      // A stored proxy and an unknown one alike: the signer cannot tell them apart, so neither
      // is called unknown (a module must not give up on a proxy it holds).
      for (const id of [proxy, unknown]) {
        const refused = await signProxy(id);
        expect(refused.status).toBe(503);
        expect(refused.json()).toEqual(UNREADABLE);
      }
      // generate_proxy_key counts the module's proxies first: it stops there, nothing generated.
      const refusedGenerate = await generate("bls");
      expect(refusedGenerate.status).toBe(503);
      expect(refusedGenerate.json()).toEqual(UNREADABLE);
      expect(await workerKeys()).toBe(keysBefore);
      // Consensus-key signing does not read the store: it goes on.
      const consensus = await cbCall(cb, "/signer/v1/request_signature/bls", {
        pubkey: KEY0,
        object_root: ROOT,
        nonce: 7,
      });
      expect(consensus.status).toBe(200);
    } finally {
      db.exec("ALTER TABLE sigil_cb_proxies_away RENAME TO sigil_cb_proxies");
    }
    const logged = signer.logs
      .slice(loggedBefore)
      .filter((line) => line.includes("commit-boost proxy store not read"));
    expect(logged).toHaveLength(4);
    for (const line of logged) {
      expect(line).toContain("no such table: sigil_cb_proxies");
      expect(line).toContain('"store":"sqlite"');
      expect(line).not.toContain(sealed ?? "");
    }
    expect(logged[1]).toContain(proxy);
    // Readable again: the stored proxy signs, the unknown one is 404 as before, both listed.
    expect((await signProxy(proxy)).status).toBe(200);
    const notFound = await signProxy(unknown);
    expect(notFound.status).toBe(404);
    expect((notFound.json() as { code: string }).code).toBe("unknown_pubkey");
    expect(await listedProxies()).toContain(proxy);
  });
});

describe("a stored proxy whose sealed secret does not open", () => {
  /** Signs with the proxy; its row's `sealed` replaced by `damage` first. */
  async function signWithDamaged(scheme: "bls" | "ecdsa", damage: (sealed: string) => string) {
    const generated = await generate(scheme);
    expect(generated.status).toBe(200);
    const { proxy } = (generated.json() as { message: { proxy: string } }).message;
    const route = `/signer/v1/request_signature/proxy-${scheme}`;
    const body = { proxy, object_root: ROOT, nonce: 1 };
    // It signs before the damage (and is opened in memory then).
    expect((await cbCall(cb, route, body)).status).toBe(200);
    const row = db
      .query<{ sealed: string }, [string]>("SELECT sealed FROM sigil_cb_proxies WHERE proxy = ?")
      .get(proxy);
    if (!row) throw new Error("the proxy's row is missing");
    db.query("UPDATE sigil_cb_proxies SET sealed = ? WHERE proxy = ?").run(
      damage(row.sealed),
      proxy,
    );
    return { proxy, response: await cbCall(cb, route, body), sealed: row.sealed };
  }

  const flipLastByte = (sealed: string) => {
    const bytes = Buffer.from(sealed, "base64");
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    return bytes.toString("base64");
  };

  for (const [what, scheme, damage] of [
    ["tampered (its tag fails)", "bls", flipLastByte],
    ["tampered (its tag fails)", "ecdsa", flipLastByte],
    ["missing (empty)", "bls", () => ""],
  ] as const) {
    test(`${scheme}, ${what}: 500 proxy_key_unusable, the cause in the log, no secret`, async () => {
      const { proxy, response, sealed } = await signWithDamaged(scheme, damage);
      expect(response.status).toBe(500);
      expect(response.json()).toEqual({
        code: "proxy_key_unusable",
        message: `proxy ${proxy} is stored but cannot be opened on this signer; the signer's log says why`,
      });
      const logged = signer.logs.filter(
        (line) => line.includes("commit-boost proxy cannot be opened") && line.includes(proxy),
      );
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatch(/sealed proxy secret (does not open|has an unknown format)/);
      expect(logged[0]).not.toContain(sealed);
    });
  }
});
