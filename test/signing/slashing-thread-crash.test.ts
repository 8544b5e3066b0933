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

/**
 * The signing service over the signer's sqlite store on the slashing thread, and that thread
 * stopped while requests are in flight: every answer is a signature whose record is in the
 * database, or 503 slashing_db_unavailable (a record may exist for it: safe, nothing was sent);
 * every later request is 503. Signatures are checked with noble.
 */
const dir = new TempDir();
afterAll(() => dir.remove());

describe("the slashing thread stops while signing", () => {
  test("answers are a recorded signature or 503, never a signature without its record", async () => {
    const path = join(dir.path, "signing.sqlite");
    let worker: Worker | undefined;
    const store = await openThreadedSqliteStore(path, {
      create: true,
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
      const answers = requests.map((request) =>
        sign(request).then(
          (signature) => ({ signature }),
          (error: unknown) => ({ error }),
        ),
      );
      await turns(2);
      await worker?.terminate();
      const settled = await Promise.all(answers);
      const later = await errorOf(sign(attestationRequest(200, 201, 99)));
      expect(later.code).toBe("slashing_db_unavailable");
      await store.close();

      const reader = await openSqliteStore(path, { create: false, access: "read" });
      let recorded: Set<bigint>;
      try {
        const exported = await collectInterchange(await reader.exportInterchange([PUBKEY]));
        recorded = new Set(
          exported.validators.flatMap((v) => v.attestations.map((a) => a.targetEpoch)),
        );
      } finally {
        await reader.close();
      }
      const noble = createNobleBackend();
      let refused = 0;
      settled.forEach((answer, i) => {
        const request = requests[i] as (typeof requests)[number];
        if ("signature" in answer) {
          // Returned: its record is in the database, and the signature is the message's.
          expect(recorded.has(BigInt(request.message.target))).toBe(true);
          const root = hexToBytes(request.message.signingRoot);
          expect(noble.verify(hexToBytes(PUBKEY), root, answer.signature)).toBe(true);
        } else {
          expect(answer.error).toBeInstanceOf(SigilError);
          expect((answer.error as SigilError).code).toBe("slashing_db_unavailable");
          refused++;
        }
      });
      // Stopped two turns in, the thread cannot have decided and synced all forty.
      expect(refused).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});
