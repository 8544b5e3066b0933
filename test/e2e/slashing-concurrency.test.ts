import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { startDynamo } from "../support/dynamodb";
import { startPostgres } from "../support/postgres";
import { attestationRequest, blockRequest, INTEROP_KEYS, postSign } from "../support/slashing";

/**
 * Conflicting requests for the same validators, all in flight at once, against real sigil
 * processes sharing one database: for every set of mutually slashable messages exactly one
 * may be signed, whatever the interleaving.
 */
const dir = new TempDir();
const keysDir = join(dir.path, "keys");
beforeAll(() => {
  Bun.spawnSync(["mkdir", "-p", keysDir]);
  for (const name of ["interop-0.yaml", "interop-1.yaml"])
    copyFileSync(join("examples/keys", name), join(keysDir, name));
});
afterAll(() => dir.remove());

function config(name: string, antislashing: string): string {
  return dir.file(
    `${name}.yaml`,
    `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keysDir}"]}}\n${antislashing}`,
  );
}

/** 50 mutually conflicting attestations: 25 double votes at target 50 surrounding 25 at target 40. */
function conflictingAttestations() {
  return Array.from({ length: 50 }, (_, i) =>
    i % 2 === 0 ? attestationRequest(1, 50, i + 1) : attestationRequest(10, 40, i + 1),
  );
}

async function fireAcross(processes: RunningSigil[], pubkey: string, bodies: unknown[]) {
  const responses = await Promise.all(
    bodies.map((body, i) => postSign(processes[i % processes.length]?.url ?? "", pubkey, body)),
  );
  const statuses = responses.map((r) => r.status);
  const codes = await Promise.all(
    responses
      .filter((r) => r.status !== 200)
      .map(async (r) => ((await r.json()) as { code: string }).code),
  );
  return { signed: statuses.filter((s) => s === 200).length, codes };
}

async function exactlyOneOfEachConflict(processes: RunningSigil[]) {
  const attestations = await fireAcross(
    processes,
    INTEROP_KEYS[0] ?? "",
    conflictingAttestations().map((r) => r.body),
  );
  expect(attestations.signed).toBe(1);
  expect(new Set(attestations.codes)).toEqual(new Set(["slashing_protection"]));
  const blocks = await fireAcross(
    processes,
    INTEROP_KEYS[1] ?? "",
    Array.from({ length: 50 }, (_, i) => blockRequest(5, i + 1).body),
  );
  expect(blocks.signed).toBe(1);
  expect(new Set(blocks.codes)).toEqual(new Set(["slashing_protection"]));
}

describe("conflicting signing requests at once", () => {
  test("one process on sqlite: exactly one signature per conflict set", async () => {
    const sigil = await startSigil([
      "serve",
      "-c",
      config("sqlite", `antislashing: {backend: sqlite, path: "${dir.path}/one.sqlite"}\n`),
    ]);
    try {
      await exactlyOneOfEachConflict([sigil]);
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
  });

  test("two processes on one PostgreSQL database: exactly one signature per conflict set", async () => {
    const postgres = await startPostgres();
    const file = config("postgres", `antislashing: {backend: postgres, pool_size: 4}\n`);
    const env = { SIGNER_ANTISLASHING__URL: postgres.url };
    const processes = await Promise.all([
      startSigil(["serve", "-c", file], env),
      startSigil(["serve", "-c", file], env),
    ]);
    try {
      await exactlyOneOfEachConflict(processes);
    } finally {
      for (const sigil of processes) expect(await sigil.stop()).toBe(0);
      await postgres.stop();
    }
  });

  test("two processes on one DynamoDB table: exactly one signature per conflict set", async () => {
    const dynamo = await startDynamo();
    await dynamo.createSlashingTable("sigil-slashing");
    const file = config("dynamodb", "antislashing: {backend: dynamodb, table: sigil-slashing}\n");
    const env = {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
    };
    const processes = await Promise.all([
      startSigil(["serve", "-c", file], env),
      startSigil(["serve", "-c", file], env),
    ]);
    try {
      await exactlyOneOfEachConflict(processes);
    } finally {
      for (const sigil of processes) expect(await sigil.stop()).toBe(0);
      await dynamo.stop();
    }
  });
});
