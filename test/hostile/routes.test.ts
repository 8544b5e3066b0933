// The hostile-input suite (issue 11, item 1): every route of a real in-process signer (stateful
// auth, Key Manager API over a writable keys directory, sqlite slashing protection) × every hostile
// class of test/hostile/cases.ts. Each request must get a clear 4xx JSON error; after each class
// the signer still answers /upcheck and signs correctly; after the whole run nothing was written.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cpSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { ageKeys, bootstrapStateful, managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { registerTestSecret } from "../support/log-capture";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";
import { buildCases, HOSTILE_CLASSES, type HostileCase, type HostileClass, MIB } from "./cases";
import { Liveness } from "./liveness";
import { keystoreOfUnloadedKey, signerRoutes } from "./routes";
import { describeFailures, Figures, runCases } from "./runner";
import { signerState, slashingRecords, treeDigest } from "./state";

const REQUEST_TIMEOUT_SECONDS = 3;
const BODY_LIMIT = 2 * MIB;
const KEY_MANAGER_BODY_LIMIT = 3 * MIB;
const POLICY = "hostile-base";
const [SIGN_KEY = "", LIVENESS_KEY = ""] = INTEROP_KEYS;

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
const slashingPath = join(dir.path, "slashing.sqlite");
const statePath = join(dir.path, "state.sqlite");
const figures = new Figures();
let signer: InProcessSigner;
let management = "";
let cases: HostileCase[] = [];
let secrets: string[] = [];

/** What the signer had written before the hostile run (after set-up and one liveness check). */
let before: {
  slashing: ReturnType<typeof slashingRecords>;
  state: Record<string, string[]>;
  keys: string;
  sealStatus: unknown;
  keystores: unknown;
};
/** Signs with a key the hostile requests never use; its roots are the only records allowed. */
const liveness = new Liveness(
  () => signer.url,
  LIVENESS_KEY,
  () => management,
);

const api = (method: string, path: string, body?: unknown) =>
  managementCall(signer.url, management, method, path, body);

beforeAll(async () => {
  mkdirSync(keysDir);
  cpSync(resolve("examples/keys"), keysDir, { recursive: true });
  signer = await startInProcessSigner(dir, "hostile", {
    server: `server: {listen_address: 127.0.0.1, listen_port: 0, request_timeout_seconds: ${REQUEST_TIMEOUT_SECONDS}, max_request_body_bytes: ${BODY_LIMIT}}`,
    yaml: [
      "key_sources:",
      `  filesystem: {paths: ["${keysDir}"]}`,
      `  key_manager_api: {enabled: true, request_timeout_seconds: ${REQUEST_TIMEOUT_SECONDS}, max_request_body_bytes: ${KEY_MANAGER_BODY_LIMIT}}`,
      `antislashing: {backend: sqlite, path: "${slashingPath}"}`,
      `signer_state: {backend: sqlite, path: "${statePath}"}`,
    ],
  });
  const bootstrapped = await bootstrapStateful(signer.url, signer.logs);
  management = bootstrapped.management;
  const policy = await api("POST", "/api/v1/signer/auth/policies", {
    name: POLICY,
    rules: [{ effect: "allow", scopes: ["public_keys"] }],
  });
  expect(policy.status).toBe(201);
  const password = registerTestSecret("hostile-keystore-password-1", "keystore password");
  const wrongPassword = registerTestSecret("hostile-wrong-password-2", "keystore password");
  const [age] = await ageKeys(1);
  const values = {
    signKey: SIGN_KEY,
    unknownKey: `0x${"ab".repeat(48)}`,
    keystore: await keystoreOfUnloadedKey(31, password),
    wrongPassword,
    policy: POLICY,
    ageRecipient: age?.recipient ?? "",
    bodyLimit: BODY_LIMIT,
    keyManagerBodyLimit: KEY_MANAGER_BODY_LIMIT,
  };
  const ctx = {
    management,
    operator: bootstrapped.operator.credential,
    requestTimeoutMs: REQUEST_TIMEOUT_SECONDS * 1000,
  };
  cases = buildCases(signerRoutes(values), ctx);
  secrets = [management, ctx.operator, password, wrongPassword];
  await liveness.check();
  liveness.roots.length = 0;
  before = {
    slashing: slashingRecords(slashingPath),
    state: signerState(statePath),
    keys: treeDigest(keysDir),
    sealStatus: await fetch(`${signer.url}/api/v1/signer/sys/seal-status`).then((r) => r.json()),
    keystores: (await api("GET", "/eth/v1/keystores")).body,
  };
}, 120_000);

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

const casesOf = (hostileClass: HostileClass) =>
  cases.filter((c) => c.hostileClass === hostileClass);

for (const hostileClass of HOSTILE_CLASSES.filter((c) => c !== "slow_loris")) {
  test(`${hostileClass}: every request refused with a 4xx JSON error, and the signer still signs`, async () => {
    const mine = casesOf(hostileClass);
    expect(mine.length).toBeGreaterThan(0);
    const outcomes = await runCases(signer.port, mine, { concurrency: 4, secrets });
    figures.record(hostileClass, outcomes);
    expect(describeFailures(outcomes)).toEqual([]);
    await liveness.check();
  }, 180_000);
}

test("slow_loris: cut by the request timeout (503 request_timeout) or closed; others are served meanwhile", async () => {
  const mine = casesOf("slow_loris");
  expect(mine.length).toBeGreaterThan(0);
  let finished = 0;
  const running = runCases(signer.port, mine, { concurrency: mine.length, secrets }).then(
    (outcomes) => {
      finished = mine.length;
      return outcomes;
    },
  );
  // Causal, not timed: the header-trickling connections are held until Bun's idle timer (request
  // timeout + 5 s), and a normal request is answered while they still are.
  await Bun.sleep(200);
  await liveness.check();
  expect(finished).toBe(0);
  const outcomes = await running;
  figures.record("slow_loris", outcomes);
  expect(describeFailures(outcomes)).toEqual([]);
  await liveness.check();
}, 180_000);

test("nothing was written: slashing records, signer_state, keys directory, seal progress", async () => {
  const after = slashingRecords(slashingPath);
  expect(after.blocks).toEqual(before.slashing.blocks);
  const added = after.attestations.filter((row) => !before.slashing.attestations.includes(row));
  expect(before.slashing.attestations.every((row) => after.attestations.includes(row))).toBe(true);
  // Only the liveness checks' attestations, by the liveness key, with the roots the oracle made.
  expect(added.map((row) => JSON.parse(row).pubkey)).toEqual(added.map(() => LIVENESS_KEY));
  expect(added.map((row) => JSON.parse(row).root).sort()).toEqual([...liveness.roots].sort());
  expect(after.validators).toEqual(before.slashing.validators);
  expect(signerState(statePath)).toEqual(before.state);
  expect(treeDigest(keysDir)).toBe(before.keys);
  const sealStatus = await fetch(`${signer.url}/api/v1/signer/sys/seal-status`).then((r) =>
    r.json(),
  );
  expect(sealStatus).toEqual(before.sealStatus);
  expect((await api("GET", "/eth/v1/keystores")).body).toEqual(before.keystores);
  // Nothing the signer itself considered a failure of its own.
  const errors = signer.logs.filter((line) => JSON.parse(line).level === "error");
  expect(errors).toEqual([]);
  const path = figures.write("hostile-figures.json", {
    routes: new Set(cases.map((c) => c.route)).size,
  });
  console.log(`hostile input: requests tried per class (also in ${path})\n${figures.table()}`);
});
