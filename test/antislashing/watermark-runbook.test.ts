// The cluster-migration runbook of docs/antislashing.md ("Moving validators between clusters"),
// on each backend with real databases: the old cluster's database A gets a high watermark H, the
// new cluster's database B gets its low watermark raised to H, and both clusters then serve every
// request for the same validators at once. A refuses at and beyond H (also after a restart, and on
// every instance of a shared database), B signs from H on, and no slot or target epoch is signed
// by both. The one attestation neither signs is the one whose target is H: its source lies below
// B's low watermark (Web3Signer's semantics; docs/antislashing.md says why).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDynamoStore } from "../../src/antislashing/backends/dynamodb/store";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import type { SlashingStore } from "../../src/antislashing/store";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { block, GVR_A, pubkey, root, vote } from "./support";

const H = { epoch: 100n, slot: 3200n };
const VALIDATORS = [pubkey(1), pubkey(2), pubkey(3)];
const SLOTS_PER_EPOCH = 32n;

/** A backend's databases: each `open(name)` opens (again) the database of that name. */
interface Databases {
  /** A second instance of a database while the first stays open (postgres, dynamodb). */
  readonly shared: boolean;
  open(name: string): Promise<SlashingStore>;
}

interface Served {
  /** "target:<epoch>" and "slot:<slot>" each store signed. */
  readonly a: Set<string>;
  readonly b: Set<string>;
}

/** Both clusters get every request of epochs `from`..`to` for every validator. */
async function serveBoth(a: SlashingStore, b: SlashingStore, from: bigint, to: bigint) {
  const served: Served = { a: new Set(), b: new Set() };
  for (let epoch = from; epoch <= to; epoch++) {
    for (const [i, pk] of VALIDATORS.entries()) {
      const slot = epoch * SLOTS_PER_EPOCH + BigInt(i);
      for (const [store, signed] of [
        [a, served.a],
        [b, served.b],
      ] as const) {
        // Each cluster's own client builds the same duties, with roots of its own.
        const tag = store === a ? "a" : "b";
        const att = await store.checkAndInsertAttestation(
          GVR_A,
          vote(pk, epoch - 1n, epoch, root(tag, pk, epoch)),
        );
        if (att.outcome === "new") signed.add(`${pk}/target:${epoch}`);
        const blk = await store.checkAndInsertBlock(GVR_A, block(pk, slot, root(tag, pk, slot)));
        if (blk.outcome === "new") signed.add(`${pk}/slot:${slot}`);
      }
    }
  }
  return served;
}

function runbook(name: string, databases: () => Databases): void {
  describe(`${name}: cluster migration with a high and a low watermark`, () => {
    test("A refuses at and beyond H, B signs from H on, nothing is signed by both", async () => {
      const dbs = databases();
      let a = await dbs.open("A");
      let b = await dbs.open("B");
      try {
        // The old cluster's history.
        const scratch = await dbs.open("scratch");
        const before = await serveBoth(a, scratch, 90n, 95n).finally(() => scratch.close());
        expect(before.a.size).toBe(VALIDATORS.length * 2 * 6);

        // Step 1: the high watermark on A. On a shared database, from another instance (the
        // operator's watermark-repair) while the signer's instance keeps running; on sqlite the
        // signer is stopped for it (one writer per file), and restarted.
        if (dbs.shared) {
          const repair = await dbs.open("A");
          await repair.changeWatermarks({ kind: "set_high", high: H });
          await repair.close();
        } else {
          await a.close();
          const repair = await dbs.open("A");
          await repair.changeWatermarks({ kind: "set_high", high: H });
          await repair.close();
          a = await dbs.open("A");
        }
        expect(await a.databaseWatermarks()).toEqual({ high: H });
        // Step 2: B's low watermark at H (B is new: it has no history at all).
        expect(await b.changeWatermarks({ kind: "raise_low", low: H })).toEqual({ low: H });

        // Both clusters serve every duty of epochs 96..106 at once.
        const { a: byA, b: byB } = await serveBoth(a, b, 96n, 106n);
        const both = [...byA].filter((signed) => byB.has(signed));
        expect(both).toEqual([]);
        for (const pk of VALIDATORS) {
          for (let epoch = 96n; epoch <= 106n; epoch++) {
            const target = `${pk}/target:${epoch}`;
            expect(byA.has(target)).toBe(epoch < H.epoch);
            // Target H has source H - 1, below B's low watermark: neither signs it.
            expect(byB.has(target)).toBe(epoch > H.epoch);
            const slot = `${pk}/slot:${epoch * SLOTS_PER_EPOCH + BigInt(VALIDATORS.indexOf(pk))}`;
            expect(byA.has(slot)).toBe(epoch < H.epoch);
            expect(byB.has(slot)).toBe(epoch >= H.epoch);
          }
        }
        expect(
          await a.checkAndInsertBlock(GVR_A, block(VALIDATORS[0] ?? "", H.slot - 1n, root("x"))),
        ).toEqual({ outcome: "new" });
        expect(
          await a.checkAndInsertBlock(GVR_A, block(VALIDATORS[0] ?? "", H.slot, root("x"))),
        ).toMatchObject({ outcome: "refused", reason: "block_slot_at_or_above_high_watermark" });

        // Both bounds survive a restart.
        await a.close();
        await b.close();
        a = await dbs.open("A");
        b = await dbs.open("B");
        expect(await a.databaseWatermarks()).toEqual({ high: H });
        expect(await b.databaseWatermarks()).toEqual({ low: H });
        const after = await serveBoth(a, b, 107n, 107n);
        expect(after.a.size).toBe(0);
        expect(after.b.size).toBe(VALIDATORS.length * 2);
      } finally {
        await a.close();
        await b.close();
      }
    }, 120_000);
  });
}

// ─── sqlite ────────────────────────────────────────────────────────────────────────────────────

const dir = mkdtempSync(join(tmpdir(), "sigil-runbook-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

runbook("sqlite", () => ({
  shared: false,
  open: (name) => openSqliteStore(join(dir, `${name}.sqlite`), { create: true }),
}));

// ─── postgres ──────────────────────────────────────────────────────────────────────────────────

let server: PostgresServer | undefined;
const urls = new Map<string, string>();
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

runbook("postgres", () => ({
  shared: true,
  async open(name) {
    if (server === undefined) throw new Error("postgres did not start");
    let url = urls.get(name);
    if (url === undefined) {
      url = await server.createDatabase();
      urls.set(name, url);
    }
    return openPostgresStore({ create: true, url, poolSize: 2, forceIpv4: false });
  },
}));

// ─── dynamodb ──────────────────────────────────────────────────────────────────────────────────

let dynamo: RunningDynamo | undefined;
beforeAll(async () => {
  dynamo = await startDynamo();
});
afterAll(async () => {
  await dynamo?.stop();
});

const tables = new Set<string>();
runbook("dynamodb", () => ({
  shared: true,
  async open(name) {
    if (dynamo === undefined) throw new Error("dynalite did not start");
    const table = `runbook-${name}`;
    if (!tables.has(table)) {
      await dynamo.createSlashingTable(table);
      tables.add(table);
    }
    // Reads the stored watermarks before every check (the signer's default is a copy at most 1 s
    // old; watermarks.ts says why that is safe): what this shows is that the bound another
    // instance wrote is in the table and applied, not kept in the writer's memory.
    return openDynamoStore({ table, client: dynamo.client(), watermarkRefreshMs: 0 });
  },
}));
