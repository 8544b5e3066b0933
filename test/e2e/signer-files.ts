// The files the end-to-end slashing suites give their sigil processes: a temporary directory with
// the interop keys 0 and 1, and a config per signer naming its slashing backend.
import { afterAll, beforeAll, expect } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { startDynamo } from "../support/dynamodb";
import { startPostgres } from "../support/postgres";
import { type Exported, exportRecords } from "./records";

export interface SignerFiles {
  readonly dir: TempDir;
  /** Writes `<name>.yaml`: a loopback listener on a free port, the two keys, `antislashing`. */
  config(name: string, antislashing: string): string;
  /**
   * Runs `run` against two `sigil serve` processes sharing one config and a database of their
   * own (PostgreSQL with pool_size 4, or a dynalite table), then stops both (each must exit 0)
   * and the database. `exported` reads the records back through `sigil slashing export`;
   * `database` pauses and resumes it (outages).
   */
  withTwoSignersOn(
    backend: SharedBackend,
    run: (
      processes: RunningSigil[],
      exported: () => Promise<Exported>,
      database: PausableDatabase,
    ) => Promise<void>,
  ): Promise<void>;
}

export type SharedBackend = "postgres" | "dynamodb";

export interface PausableDatabase {
  pause(): Promise<void>;
  resume(): Promise<void>;
}

/** Call at a test file's top level: the directory lives from its beforeAll to its afterAll. */
export function signerFiles(): SignerFiles {
  const dir = new TempDir();
  const keysDir = join(dir.path, "keys");
  beforeAll(() => {
    mkdirSync(keysDir);
    for (const name of ["interop-0.yaml", "interop-1.yaml"])
      copyFileSync(join("examples/keys", name), join(keysDir, name));
  });
  afterAll(() => dir.remove());
  const config = (name: string, antislashing: string) =>
    dir.file(
      `${name}.yaml`,
      `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keysDir}"]}}\n${antislashing}\n`,
    );
  const withTwoSigners = async (
    name: string,
    antislashing: string,
    env: Record<string, string>,
    run: (processes: RunningSigil[], exported: () => Promise<Exported>) => Promise<void>,
  ): Promise<void> => {
    const file = config(name, antislashing);
    const processes = await Promise.all([
      startSigil(["serve", "-c", file, "--init-slashing-protection"], env),
      startSigil(["serve", "-c", file, "--init-slashing-protection"], env),
    ]);
    try {
      await run(processes, () => exportRecords(dir.path, file, env));
    } finally {
      for (const sigil of processes) expect(await sigil.stop()).toBe(0);
    }
  };
  return {
    dir,
    config,
    async withTwoSignersOn(backend, run) {
      if (backend === "postgres") {
        const postgres = await startPostgres();
        try {
          await withTwoSigners(
            "postgres",
            "antislashing: {backend: postgres, pool_size: 4}",
            { SIGNER_ANTISLASHING__URL: postgres.url },
            (processes, exported) => run(processes, exported, postgres),
          );
        } finally {
          await postgres.stop();
        }
        return;
      }
      const dynamo = await startDynamo();
      try {
        await dynamo.createSlashingTable("sigil-slashing");
        await withTwoSigners(
          "dynamodb",
          "antislashing: {backend: dynamodb, table: sigil-slashing}",
          dynamo.processEnv,
          (processes, exported) => run(processes, exported, dynamo),
        );
      } finally {
        await dynamo.stop();
      }
    },
  };
}
