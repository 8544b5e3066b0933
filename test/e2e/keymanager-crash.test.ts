import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { parse } from "yaml";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { registerTestSecret } from "../support/log-capture";
import { verifiesAgainstOracle } from "../support/oracle";
import { startPostgres } from "../support/postgres";
import { attestationRequest, blockRequest, GVR, postSign } from "../support/slashing";
import { crashSeed, recordFigures, seededRandom } from "./figures";
import { type Exported, exportRecords, isCovered } from "./records";

/**
 * SIGKILL a signer at a random moment of a Key Manager import (several keystores and their
 * slashing history in one POST /eth/v1/keystores), on sqlite and on postgres. Before the restart
 * every key of the batch must be either whole on disk (descriptor, keystore and password file,
 * consistent, and its imported history in the database) or have no descriptor at all; after it,
 * the signer starts with health UP, lists exactly the keys whose descriptor is on disk, signs with
 * them under their imported history, and a re-import of the batch completes it. Torn temporary
 * files and orphan keystore/password files, as a kill leaves them, are planted too.
 */
const ROUNDS = 5;
const KEYS_PER_IMPORT = 6;
const PASSWORD = registerTestSecret(`km-crash-${crypto.randomUUID()}`, "keymanager-crash password");
const SEED = crashSeed();

interface TestKey {
  pubkey: string;
  keystore: string;
}

const dir = new TempDir();
/** Batch r is the keys of round r; the last batch calibrates an uninterrupted import. */
let batches: TestKey[][] = [];

async function makeKey(index: number): Promise<TestKey> {
  const secret = registerTestSecret(interopSecret(index), `interop private key ${index}`);
  const pubkey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
  // The standard PBKDF2 cost (c = 2^18): each decryption takes a little while, so kills land
  // among decryptions and file writes, not only before or after the whole import.
  const path = `m/12381/3600/${index}/0/0`;
  const keystore = await create(PASSWORD, secret, pubkey, path, "", defaultPbkdfModule());
  return { pubkey: `0x${Buffer.from(pubkey).toString("hex")}`, keystore: JSON.stringify(keystore) };
}

beforeAll(async () => {
  const indices = Array.from({ length: (ROUNDS + 1) * KEYS_PER_IMPORT }, (_, i) => 100 + i);
  const keys = await Promise.all(indices.map((i) => makeKey(i)));
  batches = Array.from({ length: ROUNDS + 1 }, (_, r) =>
    keys.slice(r * KEYS_PER_IMPORT, (r + 1) * KEYS_PER_IMPORT),
  );
}, 120_000);
afterAll(() => dir.remove());

/** Each key's imported history: one block and one attestation (counted as the helpers count). */
const HISTORY = { blockSlot: 3, source: 10, target: 11 };
const historyBlock = (key: TestKey) => blockRequest(HISTORY.blockSlot, saltOf(key));
const historyAttestation = (key: TestKey, salt = saltOf(key)) =>
  attestationRequest(HISTORY.source, HISTORY.target, salt);
const saltOf = (key: TestKey) => Number.parseInt(key.pubkey.slice(2, 10), 16);

function interchangeOf(batch: readonly TestKey[]): string {
  return JSON.stringify({
    metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
    data: batch.map((key) => {
      const block = historyBlock(key).message;
      const attestation = historyAttestation(key).message;
      return {
        pubkey: key.pubkey,
        signed_blocks: [{ slot: String(block.slot), signing_root: block.signingRoot }],
        signed_attestations: [
          {
            source_epoch: String(attestation.source),
            target_epoch: String(attestation.target),
            signing_root: attestation.signingRoot,
          },
        ],
      };
    }),
  });
}

function importBody(batch: readonly TestKey[]) {
  return {
    keystores: batch.map((k) => k.keystore),
    passwords: batch.map(() => PASSWORD),
    slashing_protection: interchangeOf(batch),
  };
}

async function postImport(url: string, batch: readonly TestKey[]) {
  const response = await fetch(`${url}/eth/v1/keystores`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(importBody(batch)),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { status: string }[] }).data.map((d) => d.status);
}

/**
 * Deletes keys through the API once a round is checked: their history stays in the database, and
 * the next start-up does not spend its time decrypting every earlier round's keystores.
 */
async function deleteAll(url: string, batch: readonly TestKey[]) {
  const response = await fetch(`${url}/eth/v1/keystores`, {
    method: "DELETE",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ pubkeys: batch.map((k) => k.pubkey) }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { status: string }[] };
  expect(body.data.map((d) => d.status)).toEqual(batch.map(() => "deleted"));
}

async function listed(url: string): Promise<Map<string, boolean>> {
  const response = await fetch(`${url}/eth/v1/keystores`);
  const body = (await response.json()) as {
    data: { validating_pubkey: string; readonly: boolean }[];
  };
  return new Map(body.data.map((d) => [d.validating_pubkey, d.readonly]));
}

async function expectHealthUp(url: string) {
  const response = await fetch(`${url}/healthcheck`);
  const body = (await response.json()) as {
    status: string;
    checks: { id: string; data?: Record<string, unknown> }[];
  };
  expect(body.status).toBe("UP");
  expect(response.status).toBe(200);
  expect(body.checks.find((c) => c.id === "keys")?.data?.filesystem_failed).toBe(0);
}

/** What the kill left of one key on disk. */
interface KeyOnDisk {
  descriptor: boolean;
  keystore: boolean;
  password: boolean;
}

function onDisk(keysDir: string, key: TestKey): KeyOnDisk {
  const at = (ext: string) => existsSync(join(keysDir, `${key.pubkey}.${ext}`));
  return { descriptor: at("yaml"), keystore: at("json"), password: at("password") };
}

/** What is wrong with a key whose descriptor is on disk: it must have both files, as imported. */
function halfImported(keysDir: string, key: TestKey): string[] {
  const read = (ext: string) => {
    const path = join(keysDir, `${key.pubkey}.${ext}`);
    return existsSync(path) ? readFileSync(path, "utf8") : undefined;
  };
  const problems: string[] = [];
  const descriptor = parse(read("yaml") ?? "") as Record<string, unknown> | null;
  if (
    descriptor?.type !== "file-keystore" ||
    descriptor.keystoreFile !== `${key.pubkey}.json` ||
    descriptor.keystorePasswordFile !== `${key.pubkey}.password`
  )
    problems.push(`descriptor ${JSON.stringify(descriptor)}`);
  if (read("json") !== key.keystore) problems.push("keystore file missing or not the imported one");
  if (read("password") !== PASSWORD) problems.push("password file missing or not the imported one");
  return problems;
}

function historyRecorded(exported: Exported, key: TestKey): boolean {
  return [historyBlock(key), historyAttestation(key)].every((request) =>
    isCovered(exported, { pubkey: key.pubkey, ...request.message }, "complete"),
  );
}

/**
 * A signer restarted after the import: the imported history binds the key (a double vote is
 * refused, the identical imported vote is signed again) and a fresh duty is signed; both
 * signatures verify against independently computed signing roots.
 */
async function expectSignsUnderHistory(url: string, key: TestKey) {
  const doubleVote = await postSign(url, key.pubkey, historyAttestation(key, 1).body);
  expect(doubleVote.status).toBe(412);
  for (const request of [historyAttestation(key), attestationRequest(20, 21, saltOf(key))]) {
    const response = await postSign(url, key.pubkey, request.body);
    expect(response.status).toBe(200);
    const { signature } = (await response.json()) as { signature: string };
    expect(verifiesAgainstOracle({ pubkey: key.pubkey, ...request.message }, signature)).toBe(true);
  }
}

/**
 * What a kill between two renames or in the middle of a write leaves of a key that was never
 * imported: torn hidden temporaries, and a keystore and password file without a descriptor.
 * Returns the temporaries' names.
 */
function plantLeftovers(keysDir: string, key: TestKey): string[] {
  const torn = (name: string, text: string) => {
    // Named as writeFileAtomic names its temporaries (12 hex digits).
    const temporary = `.${name}.${randomBytes(6).toString("hex")}.tmp`;
    writeFileSync(join(keysDir, temporary), text);
    return temporary;
  };
  writeFileSync(join(keysDir, `${key.pubkey}.json`), key.keystore);
  writeFileSync(join(keysDir, `${key.pubkey}.password`), PASSWORD, { mode: 0o600 });
  return [
    torn(`${key.pubkey}.yaml`, "type: file-keystore\nkeystoreFi"),
    torn(`${key.pubkey}.json`, key.keystore.slice(0, 100)),
  ];
}

interface CrashFigures {
  kills: number;
  killsBeforeAnyWrite: number;
  killsMidImport: number;
  killsAfterImport: number;
  halfImported: number;
  keysWhole: number;
  keysAbsent: number;
  orphanFiles: number;
  tempFiles: number;
}

async function crashImports(backend: string, configFile: string, env: Record<string, string>) {
  const keysDir = join(dir.path, `${backend}-keys`);
  const random = seededRandom(SEED + backend.length);
  const figures: CrashFigures = {
    kills: 0,
    killsBeforeAnyWrite: 0,
    killsMidImport: 0,
    killsAfterImport: 0,
    halfImported: 0,
    keysWhole: 0,
    keysAbsent: 0,
    orphanFiles: 0,
    tempFiles: 0,
  };
  // Only the first start creates the database; every restart must find it.
  let created = false;
  const start = () => {
    const init = created ? [] : ["--init-slashing-protection"];
    created = true;
    return startSigil(["serve", "-c", configFile, ...init], env);
  };
  /** Temporaries seen so far or planted, and keys whose orphan files were planted. */
  const leftovers = new Set<string>();
  const plantedKeys = new Set<string>();

  // An uninterrupted import of the calibration batch: how long a whole import takes here.
  const calibration = batches[ROUNDS] ?? [];
  let sigil: RunningSigil = await start();
  const began = performance.now();
  expect(await postImport(sigil.url, calibration)).toEqual(calibration.map(() => "imported"));
  const importMs = performance.now() - began;
  await deleteAll(sigil.url, calibration);
  expect(await sigil.stop()).toBe(0);

  for (let round = 0; round < ROUNDS; round++) {
    const batch = batches[round] ?? [];
    sigil = await start();
    const request = fetch(`${sigil.url}/eth/v1/keystores`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(importBody(batch)),
    }).catch(() => undefined);
    await Bun.sleep(Math.floor(random() * importMs * 1.2));
    sigil.process.kill("SIGKILL");
    await sigil.process.exited;
    await request;
    figures.kills++;

    // The kill's leftovers, before anything reads them.
    const states = batch.map((key) => onDisk(keysDir, key));
    const exported = await exportRecords(dir.path, configFile, env);
    const withHistory = batch.filter((key) => historyRecorded(exported, key)).length;
    // The interchange is imported in one transaction, and before any key: all or nothing.
    expect([0, batch.length]).toContain(withHistory);
    for (const [i, key] of batch.entries()) {
      const state = states[i] as KeyOnDisk;
      if (state.descriptor) {
        const problems = halfImported(keysDir, key);
        if (problems.length > 0 || !historyRecorded(exported, key)) figures.halfImported++;
        expect(problems).toEqual([]);
        expect(historyRecorded(exported, key)).toBe(true);
        figures.keysWhole++;
      } else {
        figures.keysAbsent++;
        if (!plantedKeys.has(key.pubkey))
          figures.orphanFiles += Number(state.keystore) + Number(state.password);
      }
    }
    const whole = states.filter((s) => s.descriptor).length;
    if (whole === batch.length) figures.killsAfterImport++;
    else if (withHistory > 0) figures.killsMidImport++;
    else figures.killsBeforeAnyWrite++;
    // Temporaries are never read (they do not end in .yaml); the restart removes them.
    for (const name of readdirSync(keysDir).filter((n) => n.endsWith(".tmp"))) {
      if (!leftovers.has(name)) figures.tempFiles++;
      leftovers.add(name);
    }
    const next = batches[round + 1];
    if (round % 2 === 0 && next?.[0]) {
      for (const name of plantLeftovers(keysDir, next[0])) leftovers.add(name);
      plantedKeys.add(next[0].pubkey);
    }

    // Restart: health UP, exactly the keys whose descriptor is on disk, all deletable.
    sigil = await start();
    try {
      await expectHealthUp(sigil.url);
      // Torn temporaries (they may hold a password) are gone after the restart.
      expect(readdirSync(keysDir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
      // Keystore/password files without a descriptor are kept, and named in a warning.
      const orphans = readdirSync(keysDir).filter(
        (name) =>
          /^0x[0-9a-f]{96}\.(json|password)$/.test(name) &&
          !existsSync(join(keysDir, `${name.slice(0, name.lastIndexOf("."))}.yaml`)),
      );
      const stderr = sigil.stderrText();
      for (const name of orphans) expect(stderr).toContain(name);
      if (orphans.length > 0) expect(stderr).toContain("keystore files without their descriptor");
      const onDiskKeys = readdirSync(keysDir)
        .filter((name) => name.endsWith(".yaml"))
        .map((name) => name.slice(0, -".yaml".length))
        .sort();
      const keys = await listed(sigil.url);
      expect([...keys.keys()].sort()).toEqual(onDiskKeys);
      expect([...keys.values()].every((readonly) => readonly === false)).toBe(true);
      for (const [i, key] of batch.entries()) {
        if (!states[i]?.descriptor)
          expect((await postSign(sigil.url, key.pubkey, historyBlock(key).body)).status).toBe(404);
      }

      // Re-import: the absent keys are imported, the whole ones are duplicates.
      const statuses = await postImport(sigil.url, batch);
      expect(statuses).toEqual(states.map((s) => (s.descriptor ? "duplicate" : "imported")));
      for (const key of batch) {
        expect(halfImported(keysDir, key)).toEqual([]);
        await expectSignsUnderHistory(sigil.url, key);
      }
      expect((await listed(sigil.url)).size).toBe(
        onDiskKeys.length + statuses.filter((s) => s === "imported").length,
      );
      await deleteAll(sigil.url, batch);
      expect(await listed(sigil.url)).toEqual(new Map());
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
  }
  recordFigures(`sigkill during key manager imports (${backend})`, {
    seed: SEED,
    keys_per_import: KEYS_PER_IMPORT,
    uninterrupted_import_ms: Math.round(importMs),
    kills_survived: figures.kills,
    kills_before_any_write: figures.killsBeforeAnyWrite,
    kills_mid_import: figures.killsMidImport,
    kills_after_import: figures.killsAfterImport,
    keys_whole_after_kill: figures.keysWhole,
    keys_absent_after_kill: figures.keysAbsent,
    keys_half_imported: figures.halfImported,
    orphan_keystore_or_password_files: figures.orphanFiles,
    temporary_files_found_after_kills_then_removed: figures.tempFiles,
  });
}

describe("SIGKILL during Key Manager imports", () => {
  const config = (name: string, antislashing: string) => {
    const keysDir = join(dir.path, `${name}-keys`);
    mkdirSync(keysDir, { recursive: true });
    return dir.file(
      `${name}.yaml`,
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}",
        `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true}}`,
        antislashing,
      ].join("\n"),
    );
  };

  test("sqlite: every key whole or absent, history first, start-up and re-import work", async () => {
    const file = config(
      "sqlite",
      `antislashing: {backend: sqlite, path: "${dir.path}/km-crash.sqlite"}`,
    );
    await crashImports("sqlite", file, {});
  }, 180_000);

  test("postgres: every key whole or absent, history first, start-up and re-import work", async () => {
    const postgres = await startPostgres();
    try {
      const file = config("postgres", "antislashing: {backend: postgres, pool_size: 4}");
      await crashImports("postgres", file, { SIGNER_ANTISLASHING__URL: postgres.url });
    } finally {
      await postgres.stop();
    }
  }, 180_000);
});
