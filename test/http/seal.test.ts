// The seal lifecycle's refusals over real HTTP (in-process signer, real sqlite signer_state, real
// age keys): every bad input is a clear 4xx and leaves the state as it was.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import type { RunningSigner } from "../../src/app/signer";
import {
  ageKeys,
  initAndRegister,
  type RegisteredOperator,
  setupTokenFrom,
  submitShare,
  sys,
  unwrapOwnShare,
} from "../support/ceremony";
import { TempDir } from "../support/cli";
import { scrapeMetrics } from "../support/metrics";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
let logs: string[] = [];
let signer: RunningSigner;
let url = "";

beforeAll(async () => {
  const started = await startInProcessSigner(dir, "seal", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ],
  });
  signer = started.signer;
  logs = started.logs;
  url = started.url;
});
afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

const status = async () => (await sys(url, "GET", "seal-status")).body;
const submitted = async () =>
  ((await status()).progress as { submitted: number }[]).map((p) => p.submitted);
const [K0 = ""] = INTEROP_KEYS;
const sign = (bearer?: string) =>
  fetch(`${url}/api/v1/eth2/sign/${K0}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: JSON.stringify(attestationRequest(10, 11, 12).body),
  });
const randomShare = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(33))).toString("base64");

describe("seal lifecycle refusals (2-of-3, age)", () => {
  let operators: RegisteredOperator[] = [];
  let management = "";
  const op = (i: number) => operators[i] as RegisteredOperator;

  test("uninitialized: signing and health say so and point at init, not unseal; unseal is 409", async () => {
    expect((await status()).state).toBe("uninitialized");
    const refused = await sign();
    expect(refused.status).toBe(503);
    const notInitialized =
      "the signer is not initialized: run sigil operator init with the setup token from its start-up log, then a quorum of operators unseals it (docs/ceremony.md)";
    expect(await refused.json()).toEqual({ code: "sealed", message: notInitialized });
    expect((await fetch(`${url}/upcheck`)).status).toBe(200);
    const health = await fetch(`${url}/healthcheck`);
    expect(health.status).toBe(503);
    const checks = ((await health.json()) as { checks: Record<string, unknown>[] }).checks;
    expect(checks.find((c) => c.id === "seal")).toEqual({
      id: "seal",
      status: "DOWN",
      data: { state: "uninitialized", message: notInitialized },
    });
    const unseal = await sys(url, "POST", "unseal", { share: randomShare() }, "sgo_nobody");
    expect(unseal.status).toBe(409);
    expect(unseal.body.code).toBe("not_initialized");
  });

  test("init refuses a wrong setup token, bad wrapping keys and a bad threshold; nothing changes", async () => {
    const keys = await ageKeys(3);
    const wraps = keys.map((k) => `age:${k.recipient}`);
    const setup = setupTokenFrom(logs);
    const cases: [unknown, number, RegExp][] = [
      [{ setup_token: "sgl_wrong", share_wrap: wraps, threshold: 2 }, 401, /setup token/],
      [{ setup_token: setup, share_wrap: wraps, threshold: 4 }, 400, /threshold/],
      [{ setup_token: setup, share_wrap: wraps, threshold: 0 }, 400, /threshold/],
      [{ setup_token: setup, share_wrap: [wraps[0], wraps[0]], threshold: 1 }, 400, /share_wrap/],
      [{ setup_token: setup, share_wrap: ["gpg:abc"], threshold: 1 }, 400, /share_wrap/],
      [{ setup_token: setup, threshold: 1 }, 400, /share_wrap is required/],
      [{ setup_token: setup, share_wrap: wraps }, 400, /^threshold is required .*of the 3 shares/],
      [{ share_wrap: wraps, threshold: 1 }, 400, /^setup_token: is required \(the setup token/],
      [{ setup_token: setup, share_wrap: wraps, threshold: "2" }, 400, /^threshold: must be/],
      ["init", 400, /^request body must be a JSON object$/],
    ];
    for (const [body, code, message] of cases) {
      const answer = await sys(url, "POST", "init", body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(code);
      expect(String(answer.body.message)).toMatch(message);
    }
    expect((await status()).state).toBe("uninitialized");
    operators = await initAndRegister(url, setup, keys, 2);
    expect(await status()).toMatchObject({ state: "sealed", threshold: 2 });
    // Initialized: the refusal now asks for the quorum's unseal.
    expect(await (await sign()).json()).toEqual({
      code: "sealed",
      message: "the signer is sealed: a quorum of operators must unseal it (sigil operator unseal)",
    });
  });

  test("init twice and setup token replay are 409; registration token replay is 401", async () => {
    const again = await sys(url, "POST", "init", {
      setup_token: setupTokenFrom(logs),
      share_wrap: [`age:${(await ageKeys(1))[0]?.recipient}`],
      threshold: 1,
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("already_initialized");
    const replay = await sys(url, "POST", "register", { registration_token: "sgr_used-or-wrong" });
    expect(replay.status).toBe(401);
    expect((await status()).operators).toHaveLength(3);
  });

  test("wrong share, another operator's share, duplicate share: clear 4xx, progress unchanged", async () => {
    const wrong = await sys(url, "POST", "unseal", { share: randomShare() }, op(0).credential);
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toContain("does not match operator-1's check value");
    const othersShare = await unwrapOwnShare(url, op(1));
    const foreign = await sys(url, "POST", "unseal", { share: othersShare }, op(0).credential);
    expect(foreign.status).toBe(400);
    expect(foreign.body.message).toContain("belongs to operator-2, not to operator-1");
    expect(await submitted()).toEqual([]);
    // Each wrong share is logged with its operator and counted, never with the share itself.
    const rejections = logs
      .map((line) => JSON.parse(line) as Record<string, string>)
      .filter((record) => record.msg === "unseal: share rejected");
    expect(rejections.map((r) => [r.level, r.operator])).toEqual([
      ["warn", "operator-1"],
      ["warn", "operator-1"],
    ]);
    expect(logs.join("\n")).not.toContain(othersShare);
    const metrics = await scrapeMetrics(signer.metricsUrl);
    expect(metrics.get('signer_seal_share_rejections_total{operation="unseal"}')).toBe(2);

    expect((await submitShare(url, "unseal", op(0))).status).toBe(200);
    expect((await status()).state).toBe("partial_unseal");
    const duplicate = await submitShare(url, "unseal", op(0));
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.code).toBe("duplicate_share");
    expect(await submitted()).toEqual([1]);

    const malformed = await sys(url, "POST", "unseal", { share: "not base64!" }, op(0).credential);
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toBe("share: must be the base64 of the unwrapped share");
    const short = await sys(url, "POST", "unseal", { share: "AAAA" }, op(0).credential);
    expect(short.body.message).toBe("share: must be 33 bytes once base64-decoded");
    const missing = await sys(url, "POST", "unseal", {}, op(0).credential);
    expect(missing.body.message).toStartWith("share: is required");
    const anonymous = await sys(url, "POST", "unseal", { share: randomShare() });
    expect(anonymous.status).toBe(401);
    const stranger = await sys(url, "POST", "unseal", { share: randomShare() }, "sgo_stranger");
    expect(stranger.status).toBe(401);
    expect(await submitted()).toEqual([1]);
  });

  test("the threshold unseals; unseal when unsealed is 409; generate-root needs its own quorum", async () => {
    expect((await submitShare(url, "unseal", op(2))).body).toMatchObject({
      complete: true,
      state: "unsealed",
    });
    const again = await submitShare(url, "unseal", op(1));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("already_unsealed");
    // Unsealed but no token: stateful auth now decides, not the seal.
    expect((await sign()).status).toBe(401);
    const first = await submitShare(url, "generate-root", op(1));
    expect(first.body).toMatchObject({ complete: false });
    expect(first.body.token).toBeUndefined();
    const second = await submitShare(url, "generate-root", op(0));
    expect(second.body.complete).toBe(true);
    management = String(second.body.token);
    expect(management).toStartWith("sgl_");
  });

  test("seal: signing and management answer 503 sealed; status, health and unseal stay up", async () => {
    const policies = () =>
      fetch(`${url}/api/v1/signer/auth/policies`, {
        headers: { authorization: `Bearer ${management}` },
      });
    expect((await policies()).status).toBe(200);
    expect((await sys(url, "POST", "seal", {}, "sgl_not-management")).status).toBe(401);
    expect((await sys(url, "POST", "seal", {}, management)).status).toBe(200);
    expect((await policies()).status).toBe(503);
    expect((await sign(management)).status).toBe(503);
    expect((await fetch(`${url}/upcheck`)).status).toBe(200);
    const health = (await (await fetch(`${url}/healthcheck`)).json()) as { checks: unknown };
    expect(JSON.stringify(health)).toContain('"seal"');
    const metrics = await (await fetch(`${signer.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^signer_seal_state 0$/m);
    expect((await status()).state).toBe("sealed");
    expect((await submitShare(url, "unseal", op(0))).status).toBe(200);
    expect((await submitShare(url, "unseal", op(1))).body.complete).toBe(true);
    expect((await policies()).status).toBe(200);
    expect(await (await fetch(`${signer.metricsUrl}/metrics`)).text()).toMatch(
      /^signer_seal_state 1$/m,
    );
  });

  test("rotate quorum: must be started by management; old credentials stop working; new ones unseal", async () => {
    const early = await submitShare(url, "rotate-quorum/share", op(0));
    expect(early.status).toBe(409);
    expect(early.body.code).toBe("no_rotation");
    const newKeys = await ageKeys(2);
    const plan = { share_wrap: newKeys.map((k) => `age:${k.recipient}`), threshold: 2 };
    expect((await sys(url, "POST", "rotate-quorum", plan, op(0).credential)).status).toBe(401);
    expect((await sys(url, "POST", "rotate-quorum", plan, management)).status).toBe(202);
    expect((await sys(url, "POST", "rotate-quorum", plan, management)).status).toBe(409);
    expect((await submitShare(url, "rotate-quorum/share", op(2))).body.complete).toBe(false);
    const done = await submitShare(url, "rotate-quorum/share", op(1));
    expect(done.body).toMatchObject({ complete: true, threshold: 2 });
    const registrations = done.body.operators as { registration_token: string }[];
    expect(registrations).toHaveLength(2);
    const oldShare = await sys(url, "GET", "share", undefined, op(0).credential);
    expect(oldShare.status).toBe(401);
    const fresh = await Promise.all(
      registrations.map(async (r, i) => {
        const answer = await sys(url, "POST", "register", {
          registration_token: r.registration_token,
        });
        return {
          operator: String(answer.body.operator),
          credential: String(answer.body.credential),
          key: newKeys[i] as (typeof newKeys)[number],
        };
      }),
    );
    expect((await sys(url, "POST", "seal", {}, management)).status).toBe(200);
    expect((await submitShare(url, "unseal", fresh[0] as RegisteredOperator)).body.complete).toBe(
      false,
    );
    expect((await submitShare(url, "unseal", fresh[1] as RegisteredOperator)).body.complete).toBe(
      true,
    );
  });
});
