// The history a Key Manager import brings is held to what the caller may do (issue 37): records
// of keys the token may not import refuse the whole request (403), records of keys the request
// has no keystore for refuse it too (400), and records beyond antislashing.max_future_epochs are
// refused as a signing request for them would be. Through the real signer, real HTTP, static_auth.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { TempDir } from "../support/cli";
import { KEYSTORES_PATH } from "../support/keymanager";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, blockRequest, GVR, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
const [K0 = "", , K2 = ""] = INTEROP_KEYS;
const PASSWORD = "import-scope-password";
const U64_MAX = ((1n << 64n) - 1n).toString();
const T_K2 = "k2-only-token-0123456789abcdef";
const T_VC = "vc-all-keys-token-0123456789ab";

let s: InProcessSigner;
let keystore2: TestKeystore;

beforeAll(async () => {
  keystore2 = await interopKeystore(2, PASSWORD);
  const managed = join(dir.path, "managed");
  mkdirSync(managed);
  s = await startInProcessSigner(dir, "import-scope", {
    yaml: [
      // The interop keys 0..3 are loaded (read-only) from examples/keys.
      `key_sources: {filesystem: {paths: ["${managed}", "${resolve("examples/keys")}"]}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "import-scope.sqlite")}"}`,
      "static_auth:",
      "  policies:",
      `    - {name: k2, rules: [{effect: allow, scopes: [import_keystores, list_keys, sign], keys: ["${K2}"]}]}`,
      "    - {name: vc, rules: [{effect: allow, scopes: [sign]}]}",
      "  tokens:",
      `    - {secret: ${T_K2}, policies: [k2]}`,
      `    - {secret: ${T_VC}, policies: [vc]}`,
    ],
  });
});
afterAll(async () => {
  await s?.stop();
  dir.remove();
});

type Records = {
  pubkey: string;
  signed_blocks?: { slot: string }[];
  signed_attestations?: { source_epoch: string; target_epoch: string }[];
};
const interchange = (...data: Records[]) =>
  JSON.stringify({
    metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
    data: data.map((v) => ({ signed_blocks: [], signed_attestations: [], ...v })),
  });
/** The attack of the issue: every later attestation surrounded, every later block below. */
const duties = (pubkey: string): Records => ({
  pubkey,
  signed_blocks: [{ slot: U64_MAX }],
  signed_attestations: [{ source_epoch: "0", target_epoch: U64_MAX }],
});

async function post(token: string, body: unknown) {
  const response = await fetch(`${s.url}${KEYSTORES_PATH}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json",
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      code?: string;
      message?: string;
      data?: { status: string; message?: string }[];
    },
  };
}

let salt = 1;
async function sign(pubkey: string, body: unknown) {
  const response = await fetch(`${s.url}/api/v1/eth2/sign/${pubkey}`, {
    method: "POST",
    headers: { authorization: `Bearer ${T_VC}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return response.status;
}
const signsAttestation = (pubkey: string, source: number, target: number) =>
  sign(pubkey, attestationRequest(source, target, salt++).body);
const signsBlock = (pubkey: string, slot: number) => sign(pubkey, blockRequest(slot, salt++).body);

describe("Key Manager import: the history is scoped to the caller", () => {
  test("the attack: zero keystores and key 0's history from a key-2 token is 403; key 0 still signs", async () => {
    const refused = await post(T_K2, {
      keystores: [],
      passwords: [],
      slashing_protection: interchange(duties(K0)),
    });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("forbidden");
    expect(refused.body.message).toStartWith(
      `slashing_protection refused, nothing was imported: it holds records of key ${K0}, which this token may not import (`,
    );
    expect(await signsAttestation(K0, 10, 11)).toBe(200);
    expect(await signsAttestation(K0, 11, 12)).toBe(200);
    expect(await signsBlock(K0, 5)).toBe(200);
    expect(await signsBlock(K0, 6)).toBe(200);
  });

  test("key 0's records beside key 2's keystore and history: the whole request is refused", async () => {
    const refused = await post(T_K2, {
      keystores: [keystore2.keystore],
      passwords: [PASSWORD],
      slashing_protection: interchange(
        { pubkey: K2, signed_attestations: [{ source_epoch: "370020", target_epoch: "370021" }] },
        duties(K0),
      ),
    });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain(K0);
    expect(refused.body.message).not.toContain(K2);
    // Nothing of it was imported: key 2's record would refuse this double vote.
    expect(await signsAttestation(K2, 20, 21)).toBe(200);
    expect(await signsAttestation(K0, 12, 13)).toBe(200);
  });

  test("a key the token may import but the request has no keystore for: 400, naming it", async () => {
    const refused = await post(T_K2, {
      keystores: [],
      passwords: [],
      slashing_protection: interchange({
        pubkey: K2,
        signed_attestations: [{ source_epoch: "370030", target_epoch: "370031" }],
      }),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("invalid_request");
    expect(refused.body.message).toContain(`records of key ${K2}, for which this request has no`);
    expect(await signsAttestation(K2, 30, 31)).toBe(200);
  });

  test("far-future records of the request's own key are refused like a signing request", async () => {
    const refused = await post(T_K2, {
      keystores: [keystore2.keystore],
      passwords: [PASSWORD],
      slashing_protection: interchange(duties(K2)),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(
      new RegExp(
        `^slashing_protection refused, nothing was imported: validator ${K2}: block slot ${U64_MAX} \\(epoch \\d+\\) is more than 2 epochs after the current epoch \\d+ \\(antislashing.max_future_epochs\\), as a signing request for it would be$`,
      ),
    );
    expect(await signsAttestation(K2, 40, 41)).toBe(200);
    expect(await signsBlock(K2, 40 * 32)).toBe(200);
  });

  test("a loaded key's keystore (duplicate) brings its history in; entries without records are skipped", async () => {
    const imported = await post(T_K2, {
      keystores: [keystore2.keystore],
      passwords: [PASSWORD],
      slashing_protection: interchange(
        { pubkey: K2, signed_attestations: [{ source_epoch: "370050", target_epoch: "370051" }] },
        // Another key's entry with no record changes nothing: not a reason to refuse.
        { pubkey: K0 },
      ),
    });
    expect(imported.status).toBe(200);
    expect(imported.body.data).toEqual([{ status: "duplicate" }]);
    expect(await signsAttestation(K2, 50, 51)).toBe(412); // double vote with the imported record
    expect(await signsAttestation(K2, 49, 52)).toBe(412); // surrounds it
    expect(await signsAttestation(K2, 51, 52)).toBe(200);
  });
});
