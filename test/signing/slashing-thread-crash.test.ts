import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import {
  openThreadedSqliteStore,
  spawnSlashingThread,
} from "../../src/antislashing/backends/sqlite/thread-store";
import { collectInterchange } from "../../src/antislashing/interchange";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { SigilError } from "../../src/errors";
import { TempDir } from "../support/cli";
import { errorOf } from "../support/errors";
import { testLogger } from "../support/log-capture";
import { hexToBytes } from "../support/oracle";
import { turns } from "../support/settle";
import { interopSigningService } from "../support/signing-service";
import { attestationRequest, GVR } from "../support/slashing";
import { holdWriteLock } from "../support/sqlite-write-lock";

/**
 * The signing service over the signer's sqlite store on the slashing thread, and that thread
 * stopped while requests are in flight: every answer is a signature whose record is in the
 * database, or 503 slashing_db_unavailable (a record may exist for it: safe, nothing was sent);
 * every later request is 503. Signatures are checked with noble.
 *
 * Which requests get which answer does not rest on timing: the first ones are signed before
 * anything goes wrong, and the rest are sent while a connection of the test holds SQLite's write
 * lock, so the thread cannot commit (let alone sync) any of them before it is stopped.
 */
const dir = new TempDir();
afterAll(() => dir.remove());

describe("the slashing thread stops while signing", () => {
  test("answers are a recorded signature or 503, never a signature without its record", async () => {
    const path = join(dir.path, "signing.sqlite");
    let worker: Worker | undefined;
    const store = await openThreadedSqliteStore(path, {
      create: true,
      // A check waits for the test's write lock rather than fail: still pending at the stop, which
      // comes within milliseconds (20 s of margin; much longer waits made the stop itself slow).
      busyTimeoutMs: 20_000,
      spawn: () => {
        worker = spawnSlashingThread();
        return worker;
      },
    });
    const { pubkey: PUBKEY, sign } = interopSigningService(
      store,
      createBlstBackend(),
      testLogger("info"),
    );
    try {
      // The database is bound to the chain (as serve's start does) and answers, before the stop.
      await store.bindGenesisValidatorsRoot(hexToBytes(GVR));
      // One validator's votes for successive epochs: none conflicts with another.
      const requests = Array.from({ length: 40 }, (_, i) =>
        attestationRequest(2 * i, 2 * i + 1, i),
      );
      const answer = (request: (typeof requests)[number]) =>
        sign(request).then(
          (signature) => ({ signature }),
          (error: unknown) => ({ error }),
        );
      // The first ones, one after the other, while the thread runs: signed and recorded.
      const SIGNED_BEFORE = 4;
      const settled: Awaited<ReturnType<typeof answer>>[] = [];
      for (const request of requests.slice(0, SIGNED_BEFORE)) settled.push(await answer(request));
      // The rest in flight while no commit can be made, and the thread stopped under them.
      const lock = holdWriteLock(path);
      let recorded: Set<bigint>;
      try {
        const inFlight = requests.slice(SIGNED_BEFORE).map(answer);
        await turns(2);
        await worker?.terminate();
        settled.push(...(await Promise.all(inFlight)));
        const later = await errorOf(sign(attestationRequest(200, 201, 99)));
        expect(later.code).toBe("slashing_db_unavailable");
        await store.close();

        // Read while the lock still bars any commit: what the thread committed before the stop.
        const reader = await openSqliteStore(path, { create: false, access: "read" });
        try {
          const exported = await collectInterchange(await reader.exportInterchange([PUBKEY]));
          recorded = new Set(
            exported.validators.flatMap((v) => v.attestations.map((a) => a.targetEpoch)),
          );
        } finally {
          await reader.close();
        }
      } finally {
        lock.release();
      }
      // The invariant, whatever the timing: a signature is returned only with its record.
      const noble = createNobleBackend();
      const signed: number[] = [];
      settled.forEach((answer, i) => {
        const request = requests[i] as (typeof requests)[number];
        if ("signature" in answer) {
          // Returned: its record is in the database, and the signature is the message's.
          expect(recorded.has(BigInt(request.message.target))).toBe(true);
          const root = hexToBytes(request.message.signingRoot);
          expect(noble.verify(hexToBytes(PUBKEY), root, answer.signature)).toBe(true);
          signed.push(i);
        } else {
          expect(answer.error).toBeInstanceOf(SigilError);
          expect((answer.error as SigilError).code).toBe("slashing_db_unavailable");
        }
      });
      // And here, certainly: those signed before the lock, and no other; none of the others was
      // recorded either, since no commit could be made.
      expect(signed).toEqual([...Array(SIGNED_BEFORE).keys()]);
      expect(recorded).toEqual(
        new Set(requests.slice(0, SIGNED_BEFORE).map((r) => BigInt(r.message.target))),
      );
    } finally {
      await store.close();
    }
  });
});
