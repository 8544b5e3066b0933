// The auth failure limiter under a burst: 400 concurrent requests with a wrong secret from one
// address get exactly jwt_auth_fail_limit (3) 401s, every other one 429, none is served; the
// block then holds for a valid token too, and the signer keeps serving its other listener.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TempDir } from "../support/cli";
import { cbCall, MODULES, startCommitBoostSigner } from "../support/commit-boost";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
let signer: InProcessSigner;
let cb = "";

beforeAll(async () => {
  signer = await startCommitBoostSigner(dir, "cb-load");
  cb = signer.signer.commitBoostUrl ?? "";
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

test("a burst of 400 bad tokens: exactly 3 get 401, the rest 429", async () => {
  const body = { pubkey: INTEROP_KEYS[0], object_root: `0x${"01".repeat(32)}`, nonce: 1 };
  const wrong = { id: MODULES.alpha.id, secret: "guessed-secret-0000000000" };
  const answers = await Promise.all(
    Array.from({ length: 400 }, () =>
      cbCall(cb, "/signer/v1/request_signature/bls", body, { module: wrong }),
    ),
  );
  const count = (status: number) => answers.filter((a) => a.status === status).length;
  expect({
    401: count(401),
    429: count(429),
    other: answers.length - count(401) - count(429),
  }).toEqual({
    401: 3,
    429: 397,
    other: 0,
  });
  expect((await cbCall(cb, "/signer/v1/request_signature/bls", body)).status).toBe(429);
  // The signing API is another listener, untouched by the block.
  expect((await fetch(`${signer.url}/upcheck`)).status).toBe(200);
}, 60_000);
