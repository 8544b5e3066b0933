// One database, one chain, on every backend: `sigil slashing init` writes the configured network's
// genesis validators root; a signer configured for another network refuses to start (exit 2,
// naming both roots); and every way in of another chain's history (`sigil slashing import`, the
// Key Manager API, `sigil migrate web3signer`) is refused naming both roots, with nothing written.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import postgres from "postgres";
import { cloneScenarios, MAINNET_GVR, populate } from "../migrate/web3signer-fixture";
import { createWeb3SignerSchema } from "../migrate/web3signer-schema";
import { runSigilAsync, startSigil, TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { importKeys, listKeys } from "../support/keymanager";
import { interopKeystore } from "../support/keystores";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { serveExpectingExit } from "../support/serve-exit";
import { INTEROP_KEYS } from "../support/slashing";

/** The devnet sigil's database is made for, and another chain. */
const CHAIN = `0x${"0a".repeat(32)}`;
const OTHER = `0x${"0b".repeat(32)}`;
const PASSWORD = "chain-binding-test";

const dir = new TempDir();
let pg: PostgresServer;
let dynamo: RunningDynamo;
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  [pg, dynamo] = await Promise.all([startPostgres(), startDynamo()]);
}, 120_000);

afterAll(async () => {
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await Promise.all([pg?.stop(), dynamo?.stop()]);
  dir.remove();
});

type Backend = "sqlite" | "postgres" | "dynamodb";

/** A database of `backend` nobody created yet: its antislashing line and the environment. */
async function newDatabase(
  backend: Backend,
): Promise<{ antislashing: string; env: Record<string, string> }> {
  if (backend === "sqlite") {
    return {
      antislashing: `antislashing: {backend: sqlite, path: "${join(dir.path, "chain.sqlite")}"}`,
      env: {},
    };
  }
  if (backend === "postgres") {
    return {
      antislashing: `antislashing: {backend: postgres, url: "${await pg.createDatabase()}"}`,
      env: {},
    };
  }
  return {
    antislashing: "antislashing: {backend: dynamodb, table: chain-test}",
    env: dynamo.processEnv,
  };
}

const interchange = (gvr: string) =>
  JSON.stringify({
    metadata: { interchange_format_version: "5", genesis_validators_root: gvr },
    data: [
      {
        pubkey: INTEROP_KEYS[0],
        signed_blocks: [{ slot: "100" }],
        signed_attestations: [{ source_epoch: "1", target_epoch: "2" }],
      },
    ],
  });

const EMPTY_EXPORT = {
  metadata: { interchange_format_version: "5", genesis_validators_root: CHAIN },
  data: [],
};

describe.each(["sqlite", "postgres", "dynamodb"] as const)("%s", (backend) => {
  test("init binds the database to the network; every other chain is refused, nothing written", async () => {
    const { antislashing, env } = await newDatabase(backend);
    const keysDir = join(dir.path, `${backend}-keys`);
    mkdirSync(keysDir, { recursive: true });
    const devnet = dir.file(
      `${backend}-devnet.yaml`,
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}",
        `network_config: {genesis_validators_root: "${CHAIN}"}`,
        `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true}}`,
        antislashing,
        "",
      ].join("\n"),
    );
    const mainnet = dir.file(
      `${backend}-mainnet.yaml`,
      `server: {listen_address: 127.0.0.1, listen_port: 0}\nnetwork: mainnet\n${antislashing}\n`,
    );
    const exported = async () => {
      const result = await runSigilAsync(["slashing", "export", "-c", devnet, "--file", "-"], env);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as unknown;
    };

    // Created by init, nowhere else: serve without it refuses a missing database.
    const missing = await serveExpectingExit(["-c", devnet], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("sigil slashing init -c");
    const created = await runSigilAsync(["slashing", "init", "-c", devnet], env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`initialized for mainnet (with network_config)`);
    expect(created.stdout).toContain(CHAIN);
    if (backend === "dynamodb") {
      const { Table } = await dynamo
        .client()
        .send(new DescribeTableCommand({ TableName: "chain-test" }));
      expect(Table?.KeySchema).toEqual([{ AttributeName: "pubkey", KeyType: "HASH" }]);
    }
    expect(await exported()).toEqual(EMPTY_EXPORT);

    // A signer configured for another network does not start on it.
    const wrongNetwork = await serveExpectingExit(["-c", mainnet], env);
    expect(wrongNetwork.code).toBe(2);
    expect(wrongNetwork.stderr).toContain(`genesis validators root ${CHAIN}`);
    expect(wrongNetwork.stderr).toContain(MAINNET_GVR);
    expect(wrongNetwork.stderr).not.toContain("sigil listening");
    // Nor does init, which never rebinds a database.
    const rebind = await runSigilAsync(["slashing", "init", "-c", mainnet], env);
    expect(rebind.code).toBe(2);

    // `sigil slashing import` of another chain's history.
    const foreign = dir.file(`${backend}-foreign.json`, interchange(OTHER));
    const imported = await runSigilAsync(
      ["slashing", "import", "-c", devnet, "--file", foreign],
      env,
    );
    expect(imported.code).toBe(1);
    expect(imported.stderr).toContain(OTHER);
    expect(imported.stderr).toContain(CHAIN);
    expect(await exported()).toEqual(EMPTY_EXPORT);

    // `sigil migrate web3signer` from a Web3Signer database of mainnet.
    const w3sUrl = await pg.createDatabase();
    const admin = postgres(w3sUrl, { max: 1, onnotice: () => {} });
    admins.push(admin);
    await createWeb3SignerSchema(admin);
    await populate(admin, cloneScenarios().slice(0, 3));
    const migrated = await runSigilAsync(
      ["migrate", "web3signer", "-c", devnet, "--db-url", "env:W3S_URL"],
      { ...env, W3S_URL: w3sUrl },
    );
    expect(migrated.code).toBe(1);
    expect(migrated.stderr).toContain(MAINNET_GVR);
    expect(migrated.stderr).toContain(CHAIN);
    expect(await exported()).toEqual(EMPTY_EXPORT);

    // The Key Manager API, with a keystore and another chain's history.
    const sigil = await startSigil(["serve", "-c", devnet], env);
    try {
      const keystore = await interopKeystore(0, PASSWORD);
      const refused = await importKeys(sigil.url, {
        keystores: [keystore.keystore],
        passwords: [PASSWORD],
        slashing_protection: interchange(OTHER),
      });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain(OTHER);
      expect(refused.body.message).toContain(CHAIN);
      expect((await listKeys(sigil.url)).data).toEqual([]);
      const health = await fetch(`${sigil.url}/healthcheck`);
      expect(health.status).toBe(200);
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
    expect(await exported()).toEqual(EMPTY_EXPORT);
  }, 120_000);
});
