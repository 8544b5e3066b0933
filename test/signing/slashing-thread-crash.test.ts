import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { openThreadedSqliteStore } from "../../src/antislashing/backends/sqlite/thread-store";
import { StoreGuard } from "../../src/antislashing/guard";
import { collectInterchange } from "../../src/antislashing/interchange";
import type { Principal } from "../../src/auth/authenticator";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { SigilError } from "../../src/errors";
import { KeyStore } from "../../src/keys/key-store";
import { CanaryMonitor } from "../../src/signing/canary";
import { JobLimiter } from "../../src/signing/limiter";
import { NETWORKS } from "../../src/signing/network";
import { SigningService } from "../../src/signing/service";
import { TempDir } from "../support/cli";
import { errorOf } from "../support/errors";
import { interopSecret } from "../support/interop";
import { testLogger } from "../support/log-capture";
import { hexToBytes } from "../support/oracle";
import { turns } from "../support/settle";
import { attestationRequest, GVR, INTEROP_KEYS } from "../support/slashing";

/**
 * The signing service over the signer's sqlite store on the slashing thread, and that thread
 * stopped while requests are in flight: every answer is a signature whose record is in the
 * database, or 503 slashing_db_unavailable (a record may exist for it: safe, nothing was sent);
 * every later request is 503. Signatures are checked with noble.
 */
const dir = new TempDir();
afterAll(() => dir.remove());

const PUBKEY = INTEROP_KEYS[0] as string;
const OPERATOR_OF_EVERY_KEY = async (): Promise<Principal> => ({
  kind: "unrestricted",
  management: false,
});

describe("the slashing thread stops while signing", () => {
  test("answers are a recorded signature or 503, never a signature without its record", async () => {
    const path = join(dir.path, "signing.sqlite");
    let worker: Worker | undefined;
    const store = await openThreadedSqliteStore(path, {
      create: true,
      spawn: () => {
        worker = new Worker(
          new URL("../../src/antislashing/backends/sqlite/thread-worker.ts", import.meta.url).href,
        );
        return worker;
      },
    });
    const bls = createBlstBackend();
    const keys = new KeyStore();
    keys.add({
      pubkey: PUBKEY,
      key: bls.importSecretKey(interopSecret(0)),
      source: "filesystem",
      readonly: true,
    });
    const logger = testLogger("info");
    const service = new SigningService({
      keys,
      bls,
      limiter: new JobLimiter({ maxConcurrent: 64, maxQueued: 64 }),
      guard: new StoreGuard(store, logger),
      network: NETWORKS.mainnet,
      canaries: new CanaryMonitor([], { increment: () => {} }, logger),
      logger,
    });
    let id = 0;
    const sign = (request: ReturnType<typeof attestationRequest>) =>
      service.handle(OPERATOR_OF_EVERY_KEY, PUBKEY, async () => request.body, {
        requestId: `r${++id}`,
        deadline: new AbortController().signal,
      });
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
