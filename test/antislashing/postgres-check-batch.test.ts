// The PostgreSQL attestation check of schema 7 (`sigil_check_attestations`, one call per batch)
// against a real server: a database a schema 6 signer wrote upgrades and keeps refusing what its
// history makes slashable; a schema 6 signer and today's share a database without both signing
// conflicting votes; and the function refuses a batch it could not decide safely.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import {
  LATEST_SCHEMA_VERSION,
  MIGRATION_LOCK_KEY,
  MIGRATIONS,
} from "../../src/antislashing/backends/postgres/migrations";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import type { Decision, SlashingStore } from "../../src/antislashing/store";
import { runPostgresMigrations } from "../../src/storage/postgres/migrate";
import { type PostgresServer, startPostgres } from "../support/postgres";

const GVR = new Uint8Array(32).fill(0x4b);
const root = (n: number) => new Uint8Array(32).fill(n);
const pubkey = (n: number) => `0x${n.toString(16).padStart(2, "0").repeat(48)}`;
const bytes = (hex: string) => Buffer.from(hex.slice(2), "hex");

let server: PostgresServer;
const opened: SlashingStore[] = [];
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await server?.stop();
});

function admin(url: string, max = 2): postgres.Sql {
  const sql = postgres(url, { max, onnotice: () => {} });
  admins.push(sql);
  return sql;
}

async function open(url: string): Promise<SlashingStore> {
  const store = await openPostgresStore({ create: true, url, poolSize: 4, forceIpv4: false });
  opened.push(store);
  return store;
}

/** A fresh schema migrated to schema 6 only, as the sigil of that version left it. */
async function schema6(): Promise<{ url: string; sql: postgres.Sql }> {
  const url = await server.createSchema();
  const sql = admin(url, 8);
  await runPostgresMigrations(sql, {
    versionTable: "sigil_schema_version",
    lockKey: MIGRATION_LOCK_KEY,
    migrations: MIGRATIONS.filter((m) => m.version <= 6),
    appliedMessage: "slashing protection: database migrated",
    tooNew: () => new Error("newer than schema 6"),
  });
  return { url, sql };
}

/** What a schema 6 signer runs for one attestation check (its own statement). */
async function schema6Vote(
  sql: postgres.Sql,
  key: string,
  source: bigint,
  target: bigint,
  r: number,
): Promise<string> {
  const [row] = await sql<{ outcome: string; reason: string | null }[]>`
    SELECT outcome, reason FROM sigil_check_and_insert_attestation_bounded(
      ${Buffer.from(GVR)}, ${bytes(key)}, ${source.toString()}::numeric,
      ${target.toString()}::numeric, ${Buffer.from(root(r))})`;
  return row?.reason ?? row?.outcome ?? "no row";
}

const vote = (store: SlashingStore, key: string, source: bigint, target: bigint, r: number) =>
  store.checkAndInsertAttestation(GVR, {
    pubkey: key,
    sourceEpoch: source,
    targetEpoch: target,
    signingRoot: root(r),
  });

const said = (d: Decision): string => (d.outcome === "refused" ? d.reason : d.outcome);

async function records(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM sigil_signed_attestations`;
  return row?.n ?? -1;
}

describe("schema 7: attestation checks of a batch in one call", () => {
  test("a schema 6 database with history upgrades and still refuses what it makes slashable", async () => {
    const { url, sql } = await schema6();
    const keys = Array.from({ length: 8 }, (_, i) => pubkey(0x10 + i));
    // Each validator's history as the schema 6 signer recorded it: (10, 11) then (11, 12); the
    // fifth also a wide vote (2, 9) before them.
    expect(await schema6Vote(sql, keys[4] as string, 2n, 9n, 9)).toBe("new");
    for (const key of keys.slice(0, 7)) {
      expect(await schema6Vote(sql, key, 10n, 11n, 1)).toBe("new");
      expect(await schema6Vote(sql, key, 11n, 12n, 2)).toBe("new");
    }
    expect(await records(sql)).toBe(15);
    const store = await open(url);
    const versions = await sql<{ version: number }[]>`
      SELECT version FROM sigil_schema_version ORDER BY version`;
    expect(versions.map((v) => v.version)).toEqual(
      Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    expect(LATEST_SCHEMA_VERSION).toBe(7);
    // In one turn, so in one call of the new function; each as the rules decide it alone.
    const batch: [string, bigint, bigint, number, string][] = [
      [keys[0] as string, 12n, 13n, 3, "new"],
      [keys[1] as string, 11n, 12n, 2, "same_data"],
      [keys[2] as string, 11n, 12n, 4, "double_vote"],
      [keys[3] as string, 9n, 13n, 5, "surrounding_vote"],
      [keys[4] as string, 3n, 8n, 6, "surrounded_vote"],
      [keys[5] as string, 5n, 6n, 7, "attestation_source_below_low_watermark"],
      [keys[6] as string, 13n, 12n, 8, "source_after_target"],
      [keys[7] as string, 1n, 2n, 9, "new"],
    ];
    const decided = await Promise.all(batch.map(([k, s, t, r]) => vote(store, k, s, t, r)));
    expect(decided.map(said)).toEqual(batch.map((b) => b[4]));
    expect(await records(sql)).toBe(17);
    // Alone, after the batch: its accepted votes are records like any other.
    expect(said(await vote(store, keys[0] as string, 12n, 13n, 3))).toBe("same_data");
    expect(said(await vote(store, keys[0] as string, 12n, 13n, 4))).toBe("double_vote");
    expect(said(await vote(store, keys[7] as string, 0n, 3n, 9))).toBe("surrounding_vote");
    expect(said(await vote(store, keys[6] as string, 12n, 13n, 1))).toBe("new");
    expect(await records(sql)).toBe(18);
  });

  test("a schema 6 signer and today's on one database never both accept conflicting votes", async () => {
    const { url, sql } = await schema6();
    const keys = Array.from({ length: 24 }, (_, i) => pubkey(0x40 + i));
    // Each validator has a record, so that a vote ahead of it takes the new function's short path.
    for (const key of keys) expect(await schema6Vote(sql, key, 1n, 2n, 1)).toBe("new");
    const store = await open(url);
    // Pairwise slashable: two double votes at target 10, and nested surrounds around (5, 10).
    const epochs = [5, 5, 4, 6, 3, 7].map((s) => [BigInt(s), BigInt(15 - s)] as const);
    const votes = epochs.map(([s, t], i) => [s, t, 11 + i] as const);
    const attempts: Promise<{ key: string; said: string }>[] = [];
    for (let round = 0; round < 2; round++) {
      for (const [v, key] of keys.entries()) {
        votes.forEach(([s, t, r], i) => {
          // Alternating: today's store (batched per turn) and the schema 6 statements.
          const decided =
            (v + i + round) % 2 === 0
              ? vote(store, key, s, t, r).then(said)
              : schema6Vote(sql, key, s, t, r);
          attempts.push(decided.then((answer) => ({ key, said: answer })));
        });
      }
    }
    const results = await Promise.all(attempts);
    for (const key of keys) {
      const mine = results.filter((r) => r.key === key);
      const accepted = mine.filter((r) => r.said === "new");
      expect({ key, accepted: accepted.length }).toEqual({ key, accepted: 1 });
      for (const r of mine.filter((m) => m.said !== "new" && m.said !== "same_data")) {
        expect(["double_vote", "surrounding_vote", "surrounded_vote"]).toContain(r.said);
      }
    }
    // One record per validator before, one accepted vote each in the race.
    expect(await records(sql)).toBe(2 * keys.length);
  }, 60_000);

  test("a vote ahead of every record still waits for the lock of a check in flight elsewhere", async () => {
    const { url, sql } = await schema6();
    // Sorts after the others: when the batch gives up, its check is sent alone last, so that
    // none of theirs is pipelined behind it on a connection (postgres.js sends to busy ones).
    const key = pubkey(0xf0);
    const others = Array.from({ length: 5 }, (_, i) => pubkey(0x71 + i));
    for (const k of [key, ...others]) expect(await schema6Vote(sql, k, 1n, 2n, 1)).toBe("new");
    const store = await open(url);
    // A schema 6 signer's check of (5, 10) that has recorded, not yet committed.
    const commit = Promise.withResolvers<void>();
    const recorded = Promise.withResolvers<void>();
    const elsewhere = sql.begin(async (tx) => {
      expect(await schema6Vote(tx as unknown as postgres.Sql, key, 5n, 10n, 2)).toBe("new");
      recorded.resolve();
      await commit.promise;
    });
    await recorded.promise;
    // The same target with another root, in a batch with votes of other validators: ahead of
    // every committed record, but the validator is locked until the other check commits.
    const conflicting = vote(store, key, 5n, 10n, 3);
    const rest = await Promise.all(others.map((k) => vote(store, k, 5n, 10n, 3)));
    expect(rest.map(said)).toEqual(others.map(() => "new"));
    const early = await Promise.race([
      conflicting.then(said),
      Bun.sleep(500).then(() => "waiting"),
    ]);
    expect(early).toBe("waiting");
    commit.resolve();
    await elsewhere;
    expect(said(await conflicting)).toBe("double_vote");
    expect(await records(sql)).toBe(1 + others.length + 1 + others.length);
  }, 30_000);

  test("a batch out of order, repeating a validator or of mismatched lengths is refused whole", async () => {
    const url = await server.createSchema();
    const store = await open(url);
    const sql = admin(url);
    const [a, b] = [pubkey(0x21), pubkey(0x22)];
    expect(said(await vote(store, a, 1n, 2n, 1))).toBe("new");
    expect(said(await vote(store, b, 1n, 2n, 1))).toBe("new");
    const call = (keys: string[], sources: string[], targets: string[], roots: number) =>
      sql`SELECT * FROM sigil_check_attestations(${Buffer.from(GVR)},
        ${Buffer.concat(keys.map(bytes))}, ${sources}::numeric[], ${targets}::numeric[],
        ${Buffer.concat(Array.from({ length: roots }, (_, i) => Buffer.from(root(i + 2))))}, NULL)`;
    // Descending order: a lock order other batches do not follow.
    await expect(call([b, a], ["2", "2"], ["3", "3"], 2)).rejects.toThrow(/ascending order/);
    // The same validator twice: both votes would be decided on the same history.
    await expect(call([a, a], ["2", "2"], ["3", "3"], 2)).rejects.toThrow(/ascending order/);
    await expect(call([a, b], ["2", "2"], ["3"], 2)).rejects.toThrow(/a batch is n public keys/);
    await expect(call([], [], [], 0)).rejects.toThrow(/a batch is n public keys/);
    await expect(call([a, b], ["2", "2"], ["3", "3"], 1)).rejects.toThrow(/a batch is n public/);
    await expect(call([a, b], ["2", "2.5"], ["3", "3"], 2)).rejects.toThrow(/epoch out of range/);
    await expect(call([a, b], ["2", "2"], ["3", "18446744073709551616"], 2)).rejects.toThrow(
      /epoch out of range/,
    );
    // The first check of each refused call was already made: the statement's rollback undid it.
    expect(await records(sql)).toBe(2);
    const rows = await call([a, b], ["2", "2"], ["3", "3"], 2);
    expect(rows.map((r) => [r.ord, r.outcome])).toEqual([
      [1, "new"],
      [2, "new"],
    ]);
    expect(await records(sql)).toBe(4);
  });
});
