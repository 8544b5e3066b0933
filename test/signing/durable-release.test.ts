import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import type { LocalBlsBackend } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { TempDir } from "../support/cli";
import { errorOf } from "../support/errors";
import { heldWalSync } from "../support/held-wal-sync";
import { interopSecret } from "../support/interop";
import { testLogger } from "../support/log-capture";
import { bytesToHex, hexToBytes } from "../support/oracle";
import { settledFlags, turns } from "../support/settle";
import { interopSigningService } from "../support/signing-service";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/**
 * The signing service over the real sqlite store: a signature is computed while its record's WAL
 * sync runs, and leaves only once that sync has succeeded. The sync is held or failed at the IO
 * edge (the store's `syncWal`); everything else is real, and signatures are checked with noble.
 */

const dir = new TempDir();
let counter = 0;
afterAll(() => dir.remove());

const PUBKEY = INTEROP_KEYS[0] as string;

async function serviceOverSqlite() {
  const path = join(dir.path, `release-${++counter}.sqlite`);
  const { calls, syncWal } = heldWalSync(path);
  const store = await openSqliteStore(path, { create: true, syncWal });
  const blst = createBlstBackend();
  const signatures: Uint8Array[] = [];
  // The real backend, with every signature it computes kept aside for the test.
  const bls: LocalBlsBackend = {
    ...blst,
    sign(key, message) {
      const signature = blst.sign(key, message);
      signatures.push(signature);
      return signature;
    },
  };
  // The fixture's key is the interop key the requests name.
  expect(bytesToHex(blst.importSecretKey(interopSecret(0)).publicKey)).toBe(PUBKEY);
  const logs: string[] = [];
  const logger = testLogger("info", logs);
  const { sign } = interopSigningService(store, bls, logger, { maxConcurrent: 8, maxQueued: 8 });
  return { calls, store, signatures, logs, sign };
}

const verifies = (signature: Uint8Array, signingRootHex: string) =>
  createNobleBackend().verify(hexToBytes(PUBKEY), hexToBytes(signingRootHex), signature);

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await turns(1);
  expect(condition()).toBe(true);
}

describe("signatures leave only once their record is on disk", () => {
  test("the signature is computed while the sync is held, and returned only after it", async () => {
    const { calls, store, signatures, sign } = await serviceOverSqlite();
    try {
      const request = attestationRequest(1, 2, 1);
      const answer = sign(request);
      const flags = settledFlags([answer]);
      await waitFor(() => calls.length === 1 && signatures.length === 1);
      await turns();
      expect(flags).toEqual(["pending"]); // computed, held back
      calls[0]?.release();
      const signature = await answer;
      expect(signature).toEqual(signatures[0] as Uint8Array);
      expect(verifies(signature, request.message.signingRoot)).toBe(true);
    } finally {
      await store.close();
    }
  });

  test("a failed sync drops the computed signature and answers slashing_db_unavailable", async () => {
    const { calls, store, signatures, logs, sign } = await serviceOverSqlite();
    try {
      const answer = sign(attestationRequest(1, 2, 1));
      await waitFor(() => calls.length === 1 && signatures.length === 1);
      calls[0]?.release(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
      expect((await errorOf(answer)).code).toBe("slashing_db_unavailable");
      expect(logs.join("\n")).toContain("slashing protection database unavailable");
      // The disk is not trusted again: the next request is refused before anything is signed.
      const next = await errorOf(sign(attestationRequest(3, 4, 2)));
      expect(next.code).toBe("slashing_db_unavailable");
      expect(signatures).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  test("a refusal is answered only after the sync, and nothing is signed for it", async () => {
    const { calls, store, signatures, sign } = await serviceOverSqlite();
    try {
      const first = sign(attestationRequest(1, 2, 1));
      await waitFor(() => calls.length === 1);
      // Same target, another root: a double vote, decided on a record not yet on disk.
      const conflicting = sign(attestationRequest(1, 2, 2));
      const flags = settledFlags([first, conflicting]);
      await turns();
      expect(flags).toEqual(["pending", "pending"]);
      calls[0]?.release();
      await first;
      await waitFor(() => calls.length === 2);
      expect(flags[1]).toBe("pending");
      calls[1]?.release();
      const error = await errorOf(conflicting);
      expect(error.code).toBe("slashing_protection");
      expect(error.reason).toBe("double_vote");
      expect(signatures).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
