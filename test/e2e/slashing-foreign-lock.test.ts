import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type RunningSigil, startSigil } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest, INTEROP_KEYS, postSign } from "../support/slashing";
import { type HeldWriteLock, holdWriteLock } from "../support/sqlite-write-lock";
import { exportRecords } from "./records";
import { signerFiles } from "./signer-files";

/**
 * Another process (an operator's `sqlite3` shell, a backup tool) holds SQLite's write lock on the
 * signer's slashing database: here a connection of the test doing `BEGIN IMMEDIATE`. The slashing
 * thread's check then waits inside SQLite for the busy timeout (5 s in `serve`). What an operator
 * needs: a SIGTERM meanwhile stops the signer well within `TimeoutStopSec=45s` (docs/deploy.md),
 * the waiting request is refused without a signature, nothing signed loses its record, and the
 * exit status is 0; a lock held past the busy timeout refuses the check with 503
 * `slashing_db_unavailable`, and signing resumes once the lock is released.
 *
 * Nothing here rests on timing for correctness: while the test holds the lock no commit can be
 * made, so the request in flight cannot have been recorded, let alone signed. The bounds on time
 * only catch a hang (a stop that would outlast systemd's budget).
 */
const PUBKEY = INTEROP_KEYS[0] ?? "";
/** The documented stop budget is 45 s (TimeoutStopSec) for 25 s of grace; a stop past this is a hang. */
const STOP_BOUND_MS = 20_000;
/** serve's busy timeout is 5 s: the refusal comes after it, and not long after on a loaded machine. */
const BUSY_TIMEOUT_MS = 5_000;
const REFUSAL_BOUND_MS = 15_000;

const { dir, config } = signerFiles();

/** A signing request's answer: its signature, or its error code. */
interface Answer {
  readonly status: number;
  readonly code?: string;
  readonly signature?: string;
}

async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  if (response.status === 200) {
    const signature = (JSON.parse(text) as { signature?: string }).signature ?? text.trim();
    return { status: 200, signature };
  }
  return { status: response.status, code: (JSON.parse(text) as { code?: string }).code };
}

function targets(exported: Awaited<ReturnType<typeof exportRecords>>): number[] {
  const validator = exported.data.find((v) => v.pubkey === PUBKEY);
  return (validator?.signed_attestations ?? []).map((a) => Number(a.target_epoch));
}

async function signedFirst(url: string) {
  const first = attestationRequest(0, 1, 1);
  const response = await answer(await postSign(url, PUBKEY, first.body));
  expect(response.status).toBe(200);
  expect(
    verifiesAgainstOracle({ pubkey: PUBKEY, ...first.message }, response.signature ?? ""),
  ).toBe(true);
  return first;
}

interface Locked {
  readonly sigil: RunningSigil;
  /** The vote signed before the lock was taken. */
  readonly first: ReturnType<typeof attestationRequest>;
  /** Releases the lock (once). */
  release(): void;
  /** The targets of the validator's recorded votes, read by `sigil slashing export`. */
  recordedTargets(): Promise<number[]>;
}

/**
 * A signer on a database of its own that has signed one vote, then the test's connection holding
 * the database's write lock. The signer is killed and the lock released on every path.
 */
async function underForeignLock(name: string, run: (locked: Locked) => Promise<void>) {
  const path = join(dir.path, `${name}.sqlite`);
  const file = config(name, `antislashing: {backend: sqlite, path: "${path}"}`);
  const sigil = await startSigil(["serve", "-c", file, "--init-slashing-protection"]);
  let lock: HeldWriteLock | undefined;
  try {
    const first = await signedFirst(sigil.url);
    lock = holdWriteLock(path);
    await run({
      sigil,
      first,
      release() {
        lock?.release();
        lock = undefined;
      },
      recordedTargets: async () => targets(await exportRecords(dir.path, file, {})),
    });
  } finally {
    lock?.release();
    sigil.process.kill("SIGKILL");
  }
}

describe("another process holds the sqlite slashing database's write lock", () => {
  test("SIGTERM while checks wait: prompt stop, 503, exit 0, no record lost", async () => {
    await underForeignLock("stop", async ({ sigil, first, release, recordedTargets }) => {
      // Requests arriving one after another while the first waits inside SQLite: each reaches the
      // thread on its own (a batch of its own, if nothing groups them after the wait).
      const inFlight: Promise<Answer>[] = [];
      for (let i = 1; i <= 6; i++) {
        inFlight.push(
          postSign(sigil.url, PUBKEY, attestationRequest(i, i + 1, i + 1).body).then(answer),
        );
        await Bun.sleep(150);
      }
      const started = performance.now();
      const code = await sigil.stop("SIGTERM");
      const stopMs = performance.now() - started;
      const replies = await Promise.all(inFlight);
      console.log(
        `foreign lock, SIGTERM: exit ${code} after ${Math.round(stopMs)} ms; requests ${replies.map((r) => `${r.status} ${r.code ?? ""}`).join(", ")}`,
      );
      expect(code).toBe(0);
      expect(stopMs).toBeLessThan(STOP_BOUND_MS);
      for (const reply of replies) {
        expect(reply.status).toBe(503);
        expect(reply.code).toBe("slashing_db_unavailable");
      }
      release();
      // The signed vote kept its record; the refused ones (never committed under the lock) have none.
      expect(await recordedTargets()).toEqual([first.message.target]);
    });
  });

  test("a second SIGTERM while a check waits: exit 1 at once, nothing signed", async () => {
    await underForeignLock("second", async ({ sigil, first, release, recordedTargets }) => {
      const inFlight = postSign(sigil.url, PUBKEY, attestationRequest(1, 2, 2).body).then(
        answer,
        (): Answer => ({ status: 0 }),
      );
      await Bun.sleep(500);
      const started = performance.now();
      sigil.process.kill("SIGTERM");
      await Bun.sleep(200);
      const code = await sigil.stop("SIGTERM");
      const stopMs = performance.now() - started;
      const reply = await inFlight;
      console.log(
        `foreign lock, second SIGTERM: exit ${code} after ${Math.round(stopMs)} ms; request ${reply.status} ${reply.code ?? ""}`,
      );
      expect(code).toBe(1);
      // "At once": well before the busy timeout the check was waiting out.
      expect(stopMs).toBeLessThan(BUSY_TIMEOUT_MS);
      // The connection is cut (no answer) or the check refused: never a signature.
      expect(reply.status).not.toBe(200);
      release();
      expect(await recordedTargets()).toEqual([first.message.target]);
    });
  });

  test("a lock held past the busy timeout: 503, then signing resumes when it is released", async () => {
    await underForeignLock("resume", async ({ sigil, first, release, recordedTargets }) => {
      const started = performance.now();
      const reply = await answer(
        await postSign(sigil.url, PUBKEY, attestationRequest(1, 2, 2).body),
      );
      const refusalMs = performance.now() - started;
      console.log(
        `foreign lock past busy timeout: ${reply.status} ${reply.code ?? ""} after ${Math.round(refusalMs)} ms`,
      );
      expect(reply.status).toBe(503);
      expect(reply.code).toBe("slashing_db_unavailable");
      expect(refusalMs).toBeGreaterThan(BUSY_TIMEOUT_MS - 500);
      expect(refusalMs).toBeLessThan(REFUSAL_BOUND_MS);
      release();
      // The same vote, asked again once the lock is gone, is signed: the refusal left no trace.
      const again = attestationRequest(1, 2, 2);
      const resumed = await answer(await postSign(sigil.url, PUBKEY, again.body));
      expect(resumed.status).toBe(200);
      expect(
        verifiesAgainstOracle({ pubkey: PUBKEY, ...again.message }, resumed.signature ?? ""),
      ).toBe(true);
      expect((await fetch(`${sigil.url}/healthcheck`)).status).toBe(200);
      expect(await sigil.stop("SIGTERM")).toBe(0);
      expect(await recordedTargets()).toEqual([first.message.target, again.message.target]);
    });
  });
});
