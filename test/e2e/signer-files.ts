// The files the end-to-end slashing suites give their sigil processes: a temporary directory with
// the interop keys 0 and 1, and a config per signer naming its slashing backend.
import { afterAll, beforeAll, expect } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { type Exported, exportRecords } from "./records";

export interface SignerFiles {
  readonly dir: TempDir;
  /** Writes `<name>.yaml`: a loopback listener on a free port, the two keys, `antislashing`. */
  config(name: string, antislashing: string): string;
  /**
   * Runs `run` against two `sigil serve` processes sharing one config and database, then stops
   * both (each must exit 0). `exported` reads the database back through `sigil slashing export`.
   */
  withTwoSigners(
    name: string,
    antislashing: string,
    env: Record<string, string>,
    run: (processes: RunningSigil[], exported: () => Promise<Exported>) => Promise<void>,
  ): Promise<void>;
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
  return {
    dir,
    config,
    async withTwoSigners(name, antislashing, env, run) {
      const file = config(name, antislashing);
      const processes = await Promise.all([
        startSigil(["serve", "-c", file], env),
        startSigil(["serve", "-c", file], env),
      ]);
      try {
        await run(processes, () => exportRecords(dir.path, file, env));
      } finally {
        for (const sigil of processes) expect(await sigil.stop()).toBe(0);
      }
    },
  };
}
