import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runSigil, startSigil, TempDir } from "../support/cli";
import { startPostgres } from "../support/postgres";
import {
  attestationRequest,
  blockRequest,
  INTEROP_KEYS,
  postSign,
  type SignedMessage,
  slashablePairs,
} from "../support/slashing";

/**
 * SIGKILL a signer again and again while it signs. After every restart, each signature it
 * returned must be in the database with the same signing root, and across all rounds no two
 * returned signatures may be slashable together.
 */
const ROUNDS = 4;
const WORKERS = 8;
const VALIDATORS = INTEROP_KEYS.slice(0, 2);

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
beforeAll(() => {
  mkdirSync(keysDir);
  for (const name of ["interop-0.yaml", "interop-1.yaml"])
    copyFileSync(join("examples/keys", name), join(keysDir, name));
});
afterAll(() => dir.remove());

interface Exported {
  data: {
    pubkey: string;
    signed_blocks: { slot: string; signing_root?: string }[];
    signed_attestations: { source_epoch: string; target_epoch: string; signing_root?: string }[];
  }[];
}

function recorded(exported: Exported, message: SignedMessage): boolean {
  const validator = exported.data.find((v) => v.pubkey === message.pubkey);
  if (!validator) return false;
  if (message.kind === "block") {
    return validator.signed_blocks.some(
      (b) => Number(b.slot) === message.slot && b.signing_root === message.signingRoot,
    );
  }
  return validator.signed_attestations.some(
    (a) =>
      Number(a.source_epoch) === message.source &&
      Number(a.target_epoch) === message.target &&
      a.signing_root === message.signingRoot,
  );
}

/** Mostly progressing duties, with a steady share of conflicting ones (double votes, surrounds, double blocks). */
function nextRequest(state: { epoch: number; salt: number }, validator: number) {
  state.salt++;
  const roll = (state.salt * 7919 + validator * 104729) % 10;
  if (roll < 6) {
    state.epoch++;
    return attestationRequest(state.epoch - 1, state.epoch, state.salt);
  }
  if (roll < 8)
    return attestationRequest(Math.max(0, state.epoch - 3), state.epoch + 1, state.salt);
  return blockRequest(Math.floor(state.epoch / 2), state.salt);
}

async function crashRounds(configFile: string, env: Record<string, string>) {
  const signed: SignedMessage[] = [];
  const state = VALIDATORS.map(() => ({ epoch: 100, salt: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    const sigil = await startSigil(["serve", "-c", configFile], env);
    let alive = true;
    const workers = Array.from({ length: WORKERS }, async (_, w) => {
      const validator = w % VALIDATORS.length;
      const pubkey = VALIDATORS[validator] ?? "";
      while (alive) {
        const request = nextRequest(state[validator] ?? { epoch: 0, salt: 0 }, validator);
        try {
          const response = await postSign(sigil.url, pubkey, request.body);
          if (response.status === 200) signed.push({ pubkey, ...request.message });
          else await response.arrayBuffer();
        } catch {
          return; // the process is gone
        }
      }
    });
    await Bun.sleep(300 + ((round * 211) % 500));
    sigil.process.kill("SIGKILL");
    await sigil.process.exited;
    alive = false;
    await Promise.all(workers);

    const file = join(dir.path, `export-${round}-${crypto.randomUUID()}.json`);
    const exported = runSigil(["slashing", "export", "-c", configFile, "--file", file], env);
    expect(exported.code, exported.stderr).toBe(0);
    const records = JSON.parse(readFileSync(file, "utf8")) as Exported;
    const missing = signed.filter((message) => !recorded(records, message));
    expect(missing).toEqual([]);
  }
  expect(signed.length).toBeGreaterThan(20);
  expect(slashablePairs(signed)).toEqual([]);
}

describe("SIGKILL under signing load", () => {
  test("sqlite: every returned signature is recorded; none conflict", async () => {
    const file = dir.file(
      "crash-sqlite.yaml",
      `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keysDir}"]}}\nantislashing: {backend: sqlite, path: "${dir.path}/crash.sqlite"}\n`,
    );
    await crashRounds(file, {});
  });

  test("postgres: every returned signature is recorded; none conflict", async () => {
    const postgres = await startPostgres();
    try {
      const file = dir.file(
        "crash-postgres.yaml",
        `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keysDir}"]}}\nantislashing: {backend: postgres, pool_size: 4}\n`,
      );
      await crashRounds(file, { SIGNER_ANTISLASHING__URL: postgres.url });
    } finally {
      await postgres.stop();
    }
  });
});
