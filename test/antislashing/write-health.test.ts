// /healthcheck tells the truth about writes: a database that still answers reads but refuses
// every write makes every block and attestation 503, and must turn `slashing_protection` DOWN
// too, until a write succeeds again. sqlite: the -wal made immutable (chattr +i, as root on a
// file system that has it). PostgreSQL: the server switched to read-only transactions, as a
// replica is after a failover.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { TempDir } from "../support/cli";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS, postSign } from "../support/slashing";

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
const KEY = INTEROP_KEYS[0] ?? "";

beforeAll(() => {
  mkdirSync(keysDir);
  copyFileSync("examples/keys/interop-0.yaml", join(keysDir, "interop-0.yaml"));
});
afterAll(() => dir.remove());

function chattr(flag: "+i" | "-i", path: string): boolean {
  return (
    Bun.spawnSync(["chattr", flag, path], { stderr: "ignore", stdout: "ignore" }).exitCode === 0
  );
}

/** Whether this host lets the tests make a file immutable (root, and a file system with it). */
function immutableFilesWork(): boolean {
  const probe = join(dir.path, "chattr-probe");
  writeFileSync(probe, "x");
  const works = chattr("+i", probe);
  if (works) chattr("-i", probe);
  return works;
}

async function slashingHealth(
  url: string,
): Promise<{ status: number; check: { status: string; data?: Record<string, unknown> } }> {
  const response = await fetch(`${url}/healthcheck`);
  const report = (await response.json()) as {
    checks: { id: string; status: string; data?: Record<string, unknown> }[];
  };
  const check = report.checks.find((c) => c.id === "slashing_protection");
  if (!check) throw new Error("no slashing_protection check");
  return { status: response.status, check };
}

async function expectWritesFailThenRecover(
  signer: InProcessSigner,
  breakWrites: () => Promise<void> | void,
  repairWrites: () => Promise<void> | void,
): Promise<void> {
  expect((await postSign(signer.url, KEY, attestationRequest(10, 11, 1).body)).status).toBe(200);
  expect((await slashingHealth(signer.url)).status).toBe(200);

  await breakWrites();
  const refused = await postSign(signer.url, KEY, attestationRequest(11, 12, 2).body);
  expect(refused.status).toBe(503);
  expect(((await refused.json()) as { code: string }).code).toBe("slashing_db_unavailable");
  // DOWN, and it stays DOWN while writes fail: each health check tries one again.
  for (let i = 0; i < 2; i++) {
    const health = await slashingHealth(signer.url);
    expect(health.status).toBe(503);
    expect(health.check.status).toBe("DOWN");
    expect(String(health.check.data?.error)).toContain("last write failed");
  }

  await repairWrites();
  // The health check's own probe write succeeds: UP again without waiting for a signature.
  const recovered = await slashingHealth(signer.url);
  expect(recovered.status).toBe(200);
  expect(recovered.check.status).toBe("UP");
  // The refused attestation was not recorded: it is new now, and signed.
  expect((await postSign(signer.url, KEY, attestationRequest(11, 12, 2).body)).status).toBe(200);
  // And what was recorded before still holds.
  expect((await postSign(signer.url, KEY, attestationRequest(10, 11, 3).body)).status).toBe(412);
}

describe("slashing_protection health after a failed write", () => {
  // Making a file immutable needs root and a file system that supports it; where it cannot be
  // done the skip says so in the test's name, never silently.
  const immutable = immutableFilesWork();
  test.skipIf(!immutable)(
    `sqlite: main file immutable → checkpoints fail: signing goes on, DOWN with the reason and a metric; mutable again → retried, UP${immutable ? "" : " (SKIPPED: chattr +i is not permitted here; run as root on ext4/xfs)"}`,
    async () => {
      const database = join(dir.path, "checkpoint-health.sqlite");
      const signer = await startInProcessSigner(dir, "sqlite-checkpoint-health", {
        yaml: [
          `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
          `antislashing: {backend: sqlite, path: "${database}"}`,
        ],
        logLevel: "info",
      });
      const metric = async (name: string) => {
        const text = await (await fetch(`${signer.signer.metricsUrl}/metrics`)).text();
        const line = text.split("\n").find((l) => l.startsWith(`${name} `));
        return Number(line?.split(" ")[1]);
      };
      try {
        expect((await slashingHealth(signer.url)).status).toBe(200);
        expect(await metric("signer_slashing_checkpoint_failing")).toBe(0);
        expect(chattr("+i", database)).toBe(true);
        // The records are durable in the -wal: every new attestation is still signed.
        for (let target = 11; target <= 15; target++) {
          const body = attestationRequest(target - 1, target, target).body;
          expect((await postSign(signer.url, KEY, body)).status).toBe(200);
        }
        let health = await slashingHealth(signer.url);
        for (let i = 0; i < 100 && health.status === 200; i++) {
          await Bun.sleep(50);
          health = await slashingHealth(signer.url);
        }
        expect(health.status).toBe(503);
        expect(health.check.status).toBe("DOWN");
        expect(String(health.check.data?.error)).toStartWith("WAL checkpoints fail (");
        expect(Number(health.check.data?.wal_bytes)).toBeGreaterThan(0);
        expect(await metric("signer_slashing_checkpoint_failing")).toBe(1);
        expect(await metric("signer_slashing_checkpoint_failures")).toBeGreaterThanOrEqual(1);
        // Said once, however often it is retried.
        await Bun.sleep(1_500);
        const warnings = signer.logs.filter((l) => l.includes("checkpoints fail"));
        expect(warnings).toHaveLength(1);
        // What is recorded still holds while checkpoints fail.
        const double = attestationRequest(10, 11, 99).body;
        expect((await postSign(signer.url, KEY, double)).status).toBe(412);

        expect(chattr("-i", database)).toBe(true);
        // The worker has not given up: a retry succeeds (within its pause, at most 4 s by now).
        for (let i = 0; i < 200 && health.status !== 200; i++) {
          await Bun.sleep(50);
          health = await slashingHealth(signer.url);
        }
        expect(health.check.status).toBe("UP");
        expect(await metric("signer_slashing_checkpoint_failing")).toBe(0);
        expect(signer.logs.some((l) => l.includes("checkpoints succeed again"))).toBe(true);
      } finally {
        chattr("-i", database);
        await signer.stop();
      }
    },
  );

  test.skipIf(!immutable)(
    `sqlite: -wal immutable → 503 and DOWN; writable again → UP, signing resumes${immutable ? "" : " (SKIPPED: chattr +i is not permitted here; run as root on ext4/xfs)"}`,
    async () => {
      const database = join(dir.path, "health.sqlite");
      const signer = await startInProcessSigner(dir, "sqlite-health", {
        yaml: [
          `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
          `antislashing: {backend: sqlite, path: "${database}"}`,
        ],
        logLevel: "error",
      });
      const wal = `${database}-wal`;
      try {
        await expectWritesFailThenRecover(
          signer,
          () => expect(chattr("+i", wal)).toBe(true),
          () => expect(chattr("-i", wal)).toBe(true),
        );
      } finally {
        chattr("-i", wal);
        await signer.stop();
      }
    },
  );

  describe("postgres", () => {
    let server: PostgresServer;
    beforeAll(async () => {
      server = await startPostgres();
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
    });

    test("read-only transactions (a replica after a failover) → 503 and DOWN; writable → UP", async () => {
      const url = await server.createDatabase();
      const admin = postgres(url, { max: 1, onnotice: () => {} });
      const readOnly = async (on: boolean) => {
        await admin.unsafe(`ALTER SYSTEM SET default_transaction_read_only = ${on ? "on" : "off"}`);
        await admin.unsafe("SELECT pg_reload_conf()");
        // The reload reaches every backend at its next command; give them a moment.
        await Bun.sleep(300);
      };
      const signer = await startInProcessSigner(dir, "postgres-health", {
        yaml: [
          `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
          `antislashing: {backend: postgres, url: "${url}", pool_size: 2}`,
        ],
        logLevel: "error",
      });
      try {
        await expectWritesFailThenRecover(
          signer,
          () => readOnly(true),
          () => readOnly(false),
        );
      } finally {
        await readOnly(false).catch(() => {});
        await signer.stop();
        await admin.end({ timeout: 1 });
      }
    }, 60_000);
  });
});
