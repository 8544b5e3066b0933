// A PostgreSQL that speaks no TLS or goes away must make sigil fail loudly: no silent plaintext,
// and no "new" without a record. Its own server (plaintext only), since the test stops it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import type { SlashingStore } from "../../src/antislashing/store";
import { createLogger, parseLogFilter } from "../../src/observability/log";
import { captureSink } from "../support/log-capture";
import { freePort, type PostgresServer, startPostgres } from "../support/postgres";

const GVR = new Uint8Array(32).fill(0x4b);
const PUBKEY = `0x${"a1".repeat(48)}`;
const ROOT = new Uint8Array(32).fill(7);

let server: PostgresServer;

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const withoutSslmode = (url: string) => url.replace("?sslmode=disable", "");

test("TLS is the default: a server without TLS is refused with a clear error", async () => {
  const url = await server.createDatabase();
  const started = Date.now();
  await expect(
    openPostgresStore({ create: true, url: withoutSslmode(url), poolSize: 2, forceIpv4: false }),
  ).rejects.toThrow(/does not accept TLS.*sslmode=disable/);
  await expect(
    openPostgresStore({
      create: true,
      url: `${withoutSslmode(url)}?sslmode=verify-full`,
      poolSize: 2,
      forceIpv4: false,
    }),
  ).rejects.toThrow(/does not accept TLS/);
  expect(Date.now() - started).toBeLessThan(5000);
});

test("sslmode=prefer falls back to plaintext, with a warning", async () => {
  const url = await server.createDatabase();
  const lines: string[] = [];
  const filter = parseLogFilter("info");
  if (!filter.ok) throw new Error(filter.error);
  const logger = createLogger(
    { filter: filter.filter, format: "text", color: false, sink: captureSink(lines) },
    "antislashing",
  );
  const store = await openPostgresStore({
    create: true,
    url: url.replace("sslmode=disable", "sslmode=prefer"),
    poolSize: 2,
    forceIpv4: false,
    logger,
  });
  await store.ping();
  await store.close();
  expect(lines.filter((l) => l.includes("plaintext")).length).toBe(1);
});

test("nothing listening: open rejects promptly", async () => {
  const port = await freePort();
  await expect(
    openPostgresStore({
      create: true,
      url: `postgres://postgres:x@127.0.0.1:${port}/db?sslmode=disable`,
      poolSize: 2,
      forceIpv4: false,
    }),
  ).rejects.toThrow(/ECONNREFUSED|refused/i);
});

test("with the server stopped, every call rejects, and keeps rejecting", async () => {
  const url = await server.createDatabase();
  const poolSize = 3;
  const store: SlashingStore = await openPostgresStore({
    create: true,
    url,
    poolSize,
    forceIpv4: false,
  });
  expect(
    await store.checkAndInsertBlock(GVR, { pubkey: PUBKEY, slot: 1n, signingRoot: ROOT }),
  ).toEqual({ outcome: "new" });

  await server.stop();

  await expect(
    store.checkAndInsertBlock(GVR, { pubkey: PUBKEY, slot: 2n, signingRoot: ROOT }),
  ).rejects.toThrow();
  await expect(
    store.checkAndInsertAttestation(GVR, {
      pubkey: PUBKEY,
      sourceEpoch: 1n,
      targetEpoch: 2n,
      signingRoot: ROOT,
    }),
  ).rejects.toThrow();
  await expect(
    store.importInterchange({
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: `0x${"4b".repeat(32)}`,
      },
      async *validators() {
        yield { pubkey: PUBKEY, blocks: [{ slot: 5n }], attestations: [] };
      },
    }),
  ).rejects.toThrow();
  await expect(store.exportInterchange()).rejects.toThrow();
  // Failed connects must not use up the pool: many more calls than connections, all reject.
  const started = Date.now();
  const calls = Array.from({ length: poolSize * 4 }, (_, i) =>
    i % 2 === 0
      ? store.ping()
      : store.checkAndInsertBlock(GVR, { pubkey: PUBKEY, slot: BigInt(10 + i), signingRoot: ROOT }),
  );
  const settled = await Promise.allSettled(calls);
  expect(settled.every((s) => s.status === "rejected")).toBe(true);
  expect(Date.now() - started).toBeLessThan(10_000);
  await store.close();
}, 60_000);
