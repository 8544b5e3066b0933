// The key rule of the key routes, per route (list, import, delete) of both key APIs (the Key
// Manager API and cloud_kv's own): a key a token may not see, it may not delete or import over
// either. Runtime policies and tokens through the Auth API of a stateful signer; cloud_kv on a
// DynamoDB-protocol server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { bootstrapStateful, managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { itemStatus, setProcessEnv } from "../support/key-sources";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "key-policy";
const TABLE = "policy-keys";
const keysDir = join(dir.path, "keys");
let dynamo: RunningDynamo;
let signer: InProcessSigner;
let management = "";
let restoreEnv = () => {};

beforeAll(async () => {
  mkdirSync(keysDir);
  dynamo = await startDynamo();
  await dynamo.createSlashingTable(TABLE);
  restoreEnv = setProcessEnv(dynamo.processEnv);
  signer = await startInProcessSigner(dir, "policy", {
    yaml: [
      "key_sources:",
      `  filesystem: {paths: ["${keysDir}"]}`,
      "  key_manager_api: {enabled: true}",
      `  cloud_kv: {table: ${TABLE}, key_refresh_interval_minutes: 0, writable: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ],
  });
  ({ management } = await bootstrapStateful(signer.url, signer.logs));
}, 120_000);

afterAll(async () => {
  await signer?.stop();
  await dynamo?.stop();
  restoreEnv();
  dir.remove();
});

const call = (token: string, method: string, path: string, body?: unknown) =>
  managementCall(signer.url, token, method, path, body);

let epoch = 10;
async function signs(pubkey: string): Promise<number> {
  epoch += 2;
  const answer = await call(
    management,
    "POST",
    `/api/v1/eth2/sign/${pubkey}`,
    attestationRequest(epoch, epoch + 1, epoch).body,
  );
  return answer.status;
}

/** A token bound to one new policy with these rules. */
async function tokenFor(name: string, rules: unknown[]): Promise<string> {
  const policy = await call(management, "POST", "/api/v1/signer/auth/policies", { name, rules });
  expect(policy.status).toBe(201);
  const token = await call(management, "POST", "/api/v1/signer/auth/tokens", {
    policies: [name],
    ttl_seconds: 3600,
  });
  expect(token.status).toBe(201);
  return String(token.body.token);
}

interface KeyApi {
  readonly name: string;
  readonly path: string;
  readonly scopes: { list: string; import: string; delete: string };
  listed(body: Record<string, unknown>): string[];
  /** Whether the API's source holds the key. */
  holds(pubkey: string): Promise<boolean>;
}

const apis: KeyApi[] = [
  {
    name: "Key Manager API",
    path: "/eth/v1/keystores",
    scopes: { list: "list_keys", import: "import_keystores", delete: "delete_keys" },
    listed: (body) =>
      (body.data as { validating_pubkey: string }[]).map((k) => k.validating_pubkey),
    holds: async (pubkey) => existsSync(join(keysDir, `${pubkey}.yaml`)),
  },
  {
    name: "cloud_kv",
    path: "/api/v1/signer/keys",
    scopes: { list: "signer_keys_list", import: "signer_keys_write", delete: "signer_keys_delete" },
    listed: (body) => (body.data as { pubkey: string }[]).map((k) => k.pubkey),
    holds: async (pubkey) => (await itemStatus(dynamo, TABLE, pubkey)) !== undefined,
  },
];

/** A key no source holds, denied like `hidden`. */
const GHOST = `0x${"cd".repeat(48)}`;
let nextIndex = 700;
const newKeys = (n: number) =>
  Promise.all(Array.from({ length: n }, () => interopKeystore(nextIndex++, PASSWORD)));
const body = (keys: TestKeystore[]) => ({
  keystores: keys.map((k) => k.keystore),
  passwords: keys.map(() => PASSWORD),
});

describe.each(apis)("the key rule on every key route: $name", (keyApi) => {
  const { list, import: importScope, delete: deleteScope } = keyApi.scopes;
  const all = [list, importScope, deleteScope];
  let visible: TestKeystore;
  let hidden: TestKeystore;
  let denying = "";

  beforeAll(async () => {
    [visible, hidden] = (await newKeys(2)) as [TestKeystore, TestKeystore];
    const imported = await call(management, "POST", keyApi.path, body([visible, hidden]));
    expect(imported.body.data).toEqual([{ status: "imported" }, { status: "imported" }]);
    denying = await tokenFor(`deny-one-${list}`, [
      { effect: "allow", scopes: all },
      { effect: "deny", keys: [hidden.pubkey, GHOST] },
    ]);
  });

  test("list: a key the token may not see is not listed", async () => {
    const answer = await call(denying, "GET", keyApi.path);
    expect(answer.status).toBe(200);
    expect(keyApi.listed(answer.body)).toContain(visible.pubkey);
    expect(keyApi.listed(answer.body)).not.toContain(hidden.pubkey);
  });

  test("delete: a key the token may not see is refused, untouched, and its history not returned", async () => {
    expect(await signs(hidden.pubkey)).toBe(200);
    const unknown = `0x${"ab".repeat(48)}`;
    const answer = await call(denying, "DELETE", keyApi.path, {
      pubkeys: [hidden.pubkey, GHOST, unknown],
    });
    expect(answer.status).toBe(200);
    // A key it may not see gets the same answer whether it exists or not; one it may see and
    // that does not exist is not_found.
    const refused = `not allowed: scope ${deleteScope}: denied by policy "deny-one-${list}" rule 2`;
    expect(answer.body.data).toEqual([
      { status: "error", message: refused },
      { status: "error", message: refused },
      { status: "not_found" },
    ]);
    const history = JSON.parse(answer.body.slashing_protection) as { data: { pubkey: string }[] };
    expect(history.data.map((v) => v.pubkey)).not.toContain(hidden.pubkey);
    expect(await signs(hidden.pubkey)).toBe(200);
    expect(await keyApi.holds(hidden.pubkey)).toBe(true);
  });

  test("import: a key the token may not see cannot be imported over (error, never duplicate) nor imported new", async () => {
    const over = await call(denying, "POST", keyApi.path, body([hidden]));
    expect(over.status).toBe(200);
    expect(over.body.data[0].status).toBe("error");
    expect(over.body.data[0].message).toStartWith("not allowed: ");
    const [fresh] = await newKeys(1);
    if (!fresh) throw new Error("no key");
    const denyingFresh = await tokenFor(`deny-fresh-${list}`, [
      { effect: "allow", scopes: all },
      { effect: "deny", keys: [fresh.pubkey] },
    ]);
    // A keystore without its pubkey field: the key is known only once decrypted.
    const anonymous = JSON.stringify({ ...JSON.parse(fresh.keystore), pubkey: undefined });
    for (const keystore of [fresh.keystore, anonymous]) {
      const answer = await call(denyingFresh, "POST", keyApi.path, {
        keystores: [keystore],
        passwords: [PASSWORD],
      });
      expect(answer.body.data[0].status).toBe("error");
      expect(answer.body.data[0].message).toStartWith("not allowed: ");
    }
    expect(await keyApi.holds(fresh.pubkey)).toBe(false);
    expect(await signs(fresh.pubkey)).toBe(404);
  });

  test("a key the token may not list it may not delete, even with the delete scope for every key", async () => {
    const [key] = await newKeys(1);
    if (!key) throw new Error("no key");
    await call(management, "POST", keyApi.path, body([key]));
    const unlisted = await tokenFor(`unlisted-${list}`, [
      { effect: "allow", scopes: all },
      { effect: "deny", scopes: [list], keys: [key.pubkey] },
    ]);
    const deleted = await call(unlisted, "DELETE", keyApi.path, { pubkeys: [key.pubkey] });
    expect(deleted.body.data[0].status).toBe("error");
    expect(deleted.body.data[0].message).toContain(`scope ${list}`);
    const imported = await call(unlisted, "POST", keyApi.path, body([key]));
    expect(imported.body.data[0].status).toBe("error");
    expect(await signs(key.pubkey)).toBe(200);
  });

  test("a grant for some keys reaches every route and acts on those keys only", async () => {
    const [mine, theirs] = await newKeys(2);
    if (!mine || !theirs) throw new Error("no keys");
    await call(management, "POST", keyApi.path, body([mine, theirs]));
    const restricted = await tokenFor(`only-mine-${list}`, [
      { effect: "allow", scopes: all, keys: [mine.pubkey] },
    ]);
    const listed = await call(restricted, "GET", keyApi.path);
    expect(listed.status).toBe(200);
    expect(keyApi.listed(listed.body)).toEqual([mine.pubkey]);
    const deleted = await call(restricted, "DELETE", keyApi.path, {
      pubkeys: [theirs.pubkey, mine.pubkey],
    });
    expect(deleted.body.data.map((d: { status: string }) => d.status)).toEqual([
      "error",
      "deleted",
    ]);
    expect(await signs(theirs.pubkey)).toBe(200);
    expect(await signs(mine.pubkey)).toBe(404);
    const reimported = await call(restricted, "POST", keyApi.path, body([mine, theirs]));
    expect(reimported.body.data.map((d: { status: string }) => d.status)).toEqual([
      "imported",
      "error",
    ]);
  });

  test("a token with no grant for a route's scope is 403 on it", async () => {
    const signOnly = await tokenFor(`sign-only-${list}`, [{ effect: "allow", scopes: ["sign"] }]);
    expect((await call(signOnly, "GET", keyApi.path)).status).toBe(403);
    expect((await call(signOnly, "POST", keyApi.path, body([visible]))).status).toBe(403);
    expect(
      (await call(signOnly, "DELETE", keyApi.path, { pubkeys: [visible.pubkey] })).status,
    ).toBe(403);
    expect(await signs(visible.pubkey)).toBe(200);
  });
});
