// Commit-Boost on a stateful signer: proxies live in signer_state's database, sealed under the
// seal's master key: none is made or opened before the quorum unseals; and a
// key deleted through the Key Manager API takes its proxies with it.

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { bootstrapStateful, managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { cbCall, MODULES } from "../support/commit-boost";
import { interopKeystore } from "../support/keystores";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
const statePath = join(dir.path, "state.sqlite");
let signer: InProcessSigner;
let cb = "";
let management = "";

beforeAll(async () => {
  mkdirSync(join(dir.path, "keys"));
  // A filesystem key loaded at start-up, while the signer is still sealed.
  copyFileSync(resolve("examples/keys/interop-0.yaml"), join(dir.path, "keys", "interop-0.yaml"));
  const modules = Object.values(MODULES)
    .map((m) => `{id: ${m.id}, jwt_secret: ${m.secret}, signing_id: "${m.signingId}"}`)
    .join(", ");
  signer = await startInProcessSigner(dir, "cb-stateful", {
    yaml: [
      "network: hoodi",
      `key_sources: {filesystem: {paths: ["${join(dir.path, "keys")}"]}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${statePath}"}`,
      "bls: {workers: 0}",
      `commit_boost: {enabled: true, listen_address: 127.0.0.1, listen_port: 0, modules: [${modules}]}`,
    ],
  });
  cb = signer.signer.commitBoostUrl ?? "";
}, 60_000);

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

test("sealed: no proxy is generated; unsealed: proxies are made, stored sealed, and go with their key", async () => {
  const early = await cbCall(cb, "/signer/v1/generate_proxy_key", {
    pubkey: INTEROP_KEYS[0],
    scheme: "bls",
  });
  expect(early.status).toBe(503);
  expect(JSON.parse(early.text).code).toBe("sealed");

  const { pubkey, keystore } = await interopKeystore(1, "keystore-password");
  const { management: token } = await bootstrapStateful(signer.url, signer.logs);
  management = token;
  const imported = await managementCall(signer.url, management, "POST", "/eth/v1/keystores", {
    keystores: [keystore],
    passwords: ["keystore-password"],
  });
  expect(imported.status).toBe(200);
  expect(imported.body.data).toEqual([{ status: "imported" }]);

  const generated = await cbCall(cb, "/signer/v1/generate_proxy_key", { pubkey, scheme: "ecdsa" });
  expect(generated.status).toBe(200);
  const address = (generated.json() as { message: { proxy: string } }).message.proxy;

  // Stored in signer_state's file, and not in clear: the row holds only the sealed secret.
  const db = new Database(statePath, { readonly: true });
  const rows = db.query("SELECT proxy, consensus, sealed FROM sigil_cb_proxies").all() as {
    proxy: string;
    consensus: string;
    sealed: string;
  }[];
  db.close();
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ proxy: address, consensus: pubkey });
  expect(Buffer.from(rows[0]?.sealed ?? "", "base64")).toHaveLength(61);

  const signed = await cbCall(cb, "/signer/v1/request_signature/proxy-ecdsa", {
    proxy: address,
    object_root: `0x${"11".repeat(32)}`,
    nonce: 1,
  });
  expect(signed.status).toBe(200);

  // The Key Manager API deletes the key: its proxies leave the store with it.
  const deleted = await managementCall(signer.url, management, "DELETE", "/eth/v1/keystores", {
    pubkeys: [pubkey],
  });
  expect(deleted.status).toBe(200);
  expect((deleted.body.data as { status: string }[])[0]?.status).toBe("deleted");
  expect((await cbCall(cb, "/signer/v1/get_pubkeys")).text).not.toContain(address);
  const after = new Database(statePath, { readonly: true });
  expect(after.query("SELECT count(*) AS n FROM sigil_cb_proxies").get()).toEqual({ n: 0 });
  after.close();
  const gone = await cbCall(cb, "/signer/v1/request_signature/proxy-ecdsa", {
    proxy: address,
    object_root: `0x${"11".repeat(32)}`,
    nonce: 2,
  });
  expect(gone.status).toBe(404);
}, 60_000);
