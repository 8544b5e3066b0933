// The files the end-to-end slashing suites give their sigil processes: a temporary directory with
// the interop keys 0 and 1, and a config per signer naming its slashing backend.
import { afterAll, beforeAll } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { TempDir } from "../support/cli";

export interface SignerFiles {
  readonly dir: TempDir;
  /** Writes `<name>.yaml`: a loopback listener on a free port, the two keys, `antislashing`. */
  config(name: string, antislashing: string): string;
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
  return {
    dir,
    config: (name, antislashing) =>
      dir.file(
        `${name}.yaml`,
        `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keysDir}"]}}\n${antislashing}\n`,
      ),
  };
}
