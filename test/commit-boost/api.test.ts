// The Commit-Boost signer API on its own listener of a real signer (sqlite proxy store, hoodi):
// every signature is checked by an independent verifier over roots @chainsafe/ssz computes (blst
// for BLS, noble's public-key recovery for ECDSA), and refused tokens count toward the block.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { addressOfPublicKey } from "../../src/commit-boost/ecdsa";
import { fromHex, toHex } from "../../src/wire/hex";
import { TempDir } from "../support/cli";
import {
  cbCall,
  MODULES,
  oracleDelegationRoot,
  oracleRequestRoot,
  RawJson,
  startCommitBoostSigner,
} from "../support/commit-boost";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const HOODI_GENESIS_FORK = "0x10000910";
const HOODI_CHAIN_ID = 560048n;
const [KEY0 = "", KEY1 = ""] = INTEROP_KEYS;
const ROOT = `0x${"5c".repeat(32)}`;

const dir = new TempDir();
let signer: InProcessSigner;
let cb = "";

beforeAll(async () => {
  signer = await startCommitBoostSigner(dir, "cb", {
    extra: ", jwt_auth_fail_limit: 5",
    // KEY1 is a canary: its delegation below is counted and logged like any canary signature.
    yaml: [`canary_keys: ["${KEY1}"]`],
  });
  cb = signer.signer.commitBoostUrl ?? "";
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

const blsVerifies = (root: Uint8Array, pubkey: string, signature: string) =>
  verify(root, PublicKey.fromHex(pubkey), Signature.fromHex(signature), true, true);

function ecdsaSigner(root: Uint8Array, signature: string): string {
  const bytes = fromHex(signature);
  expect(bytes.length).toBe(65);
  expect([27, 28]).toContain(bytes[64] ?? 0);
  const point = secp256k1.Signature.fromBytes(bytes.subarray(0, 64), "compact")
    .addRecoveryBit((bytes[64] ?? 27) - 27)
    .recoverPublicKey(root)
    .toBytes(false);
  expect(secp256k1.verify(bytes.subarray(0, 64), root, point, { prehash: false })).toBe(true);
  return toHex(addressOfPublicKey(point));
}

describe("Commit-Boost signer API", () => {
  test("the listener is separate from the signing API", () => {
    expect(cb).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(cb).not.toBe(signer.url);
  });

  test("get_pubkeys lists the consensus keys with no proxies yet", async () => {
    const response = await cbCall(cb, "/signer/v1/get_pubkeys");
    expect(response.status).toBe(200);
    const { keys } = response.json() as {
      keys: { consensus: string; proxy_bls: string[]; proxy_ecdsa: string[] }[];
    };
    expect(keys.map((k) => k.consensus).sort()).toEqual([...INTEROP_KEYS].sort());
    expect(keys.every((k) => k.proxy_bls.length === 0 && k.proxy_ecdsa.length === 0)).toBe(true);
  });

  test("request_signature/bls: the v0.10 response, signed over the module's signing info", async () => {
    const nonce = 18446744073709551615n; // u64::MAX survives the round trip exactly
    // Sent as text: JSON.stringify cannot write a u64 beyond 2^53 exactly.
    const text = `{"pubkey":"${KEY0}","object_root":"${ROOT}","nonce":${nonce}}`;
    const response = await cbCall(cb, "/signer/v1/request_signature/bls", new RawJson(text));
    expect(response.status).toBe(200);
    expect(response.text).toContain(`"nonce":${nonce},`);
    const answer = JSON.parse(response.text);
    expect(Object.keys(answer)).toEqual([
      "pubkey",
      "object_root",
      "module_signing_id",
      "nonce",
      "chain_id",
      "signature",
    ]);
    expect(answer).toMatchObject({
      pubkey: KEY0,
      object_root: ROOT,
      module_signing_id: MODULES.alpha.signingId,
      chain_id: `0x${HOODI_CHAIN_ID.toString(16)}`,
    });
    const { signingRoot } = oracleRequestRoot(
      {
        objectRoot: fromHex(ROOT),
        signingId: fromHex(MODULES.alpha.signingId),
        nonce,
        chainId: HOODI_CHAIN_ID,
      },
      HOODI_GENESIS_FORK,
    );
    expect(blsVerifies(signingRoot, KEY0, answer.signature)).toBe(true);
  });

  test("a BLS proxy: delegation and signature verify with blst", async () => {
    const generated = await cbCall(cb, "/signer/v1/generate_proxy_key", {
      pubkey: KEY1,
      scheme: "bls",
    });
    expect(generated.status).toBe(200);
    const delegation = generated.json() as {
      message: { delegator: string; proxy: string };
      signature: string;
    };
    expect(delegation.message.delegator).toBe(KEY1);
    expect(delegation.message.proxy).toMatch(/^0x[0-9a-f]{96}$/);
    const delegationRoot = oracleDelegationRoot(
      fromHex(KEY1),
      fromHex(delegation.message.proxy),
      HOODI_GENESIS_FORK,
    );
    expect(blsVerifies(delegationRoot, KEY1, delegation.signature)).toBe(true);

    const signed = await cbCall(cb, "/signer/v1/request_signature/proxy-bls", {
      proxy: delegation.message.proxy,
      object_root: ROOT,
      nonce: 7,
    });
    expect(signed.status).toBe(200);
    const answer = signed.json() as { pubkey: string; signature: string; nonce: number };
    expect(answer.pubkey).toBe(delegation.message.proxy);
    expect(answer.nonce).toBe(7);
    const { signingRoot } = oracleRequestRoot(
      {
        objectRoot: fromHex(ROOT),
        signingId: fromHex(MODULES.alpha.signingId),
        nonce: 7n,
        chainId: HOODI_CHAIN_ID,
      },
      HOODI_GENESIS_FORK,
    );
    expect(blsVerifies(signingRoot, delegation.message.proxy, answer.signature)).toBe(true);
    expect(blsVerifies(signingRoot, KEY1, answer.signature)).toBe(false);
  });

  test("an ECDSA proxy: delegation verifies with blst, its signature recovers to its address", async () => {
    const generated = await cbCall(cb, "/signer/v1/generate_proxy_key", {
      pubkey: KEY0,
      scheme: "ecdsa",
    });
    expect(generated.status).toBe(200);
    const delegation = generated.json() as {
      message: { delegator: string; proxy: string };
      signature: string;
    };
    const address = delegation.message.proxy;
    expect(address).toMatch(/^0x[0-9a-f]{40}$/);
    const delegationRoot = oracleDelegationRoot(
      fromHex(KEY0),
      fromHex(address),
      HOODI_GENESIS_FORK,
    );
    expect(blsVerifies(delegationRoot, KEY0, delegation.signature)).toBe(true);

    const signed = await cbCall(cb, "/signer/v1/request_signature/proxy-ecdsa", {
      proxy: address.toUpperCase().replace("0X", "0x"),
      object_root: ROOT.slice(2),
      nonce: 0,
    });
    expect(signed.status).toBe(200);
    const answer = signed.json() as { address: string; signature: string; chain_id: string };
    expect(answer.address).toBe(address);
    expect(answer.chain_id).toBe("0x88bb0");
    const { signingRoot } = oracleRequestRoot(
      {
        objectRoot: fromHex(ROOT),
        signingId: fromHex(MODULES.alpha.signingId),
        nonce: 0n,
        chainId: HOODI_CHAIN_ID,
      },
      HOODI_GENESIS_FORK,
    );
    expect(ecdsaSigner(signingRoot, answer.signature)).toBe(address);

    const listed = await cbCall(cb, "/signer/v1/get_pubkeys");
    const keys = (
      listed.json() as { keys: { consensus: string; proxy_ecdsa: string[]; proxy_bls: string[] }[] }
    ).keys;
    expect(keys.find((k) => k.consensus === KEY0)?.proxy_ecdsa).toEqual([address]);
    expect(keys.find((k) => k.consensus === KEY1)?.proxy_bls).toHaveLength(1);
  });

  test("another module sees none of these proxies and cannot sign with them", async () => {
    const listed = await cbCall(cb, "/signer/v1/get_pubkeys", undefined, { module: MODULES.beta });
    const keys = (listed.json() as { keys: { proxy_bls: string[]; proxy_ecdsa: string[] }[] }).keys;
    expect(keys.flatMap((k) => [...k.proxy_bls, ...k.proxy_ecdsa])).toEqual([]);
    const alphaKeys = (await cbCall(cb, "/signer/v1/get_pubkeys")).json() as {
      keys: { proxy_ecdsa: string[] }[];
    };
    const address = alphaKeys.keys.flatMap((k) => k.proxy_ecdsa)[0];
    const refused = await cbCall(
      cb,
      "/signer/v1/request_signature/proxy-ecdsa",
      { proxy: address, object_root: ROOT, nonce: 0 },
      { module: MODULES.beta },
    );
    expect(refused.status).toBe(404);
    expect(JSON.parse(refused.text).code).toBe("unknown_pubkey");
  });

  test("bad requests: 400 with a reason, 404 for an unknown key", async () => {
    const cases: [unknown, number, string][] = [
      [{ pubkey: KEY0, object_root: ROOT }, 400, "nonce"],
      [{ pubkey: KEY0, object_root: ROOT, nonce: -1 }, 400, "nonce"],
      [{ pubkey: KEY0, object_root: ROOT, nonce: "1" }, 400, "nonce"],
      [{ pubkey: KEY0, object_root: "0x12", nonce: 1 }, 400, "object_root"],
      [{ pubkey: `0x${"ab".repeat(48)}`, object_root: ROOT, nonce: 1 }, 404, "unknown"],
    ];
    for (const [body, status, words] of cases) {
      const response = await cbCall(cb, "/signer/v1/request_signature/bls", body);
      expect(response.status).toBe(status);
      expect(JSON.parse(response.text).message).toContain(words);
    }
    const scheme = await cbCall(cb, "/signer/v1/generate_proxy_key", {
      pubkey: KEY0,
      scheme: "rsa",
    });
    expect(scheme.status).toBe(400);
  });

  // Last: it blocks this test's address (jwt_auth_fail_limit 5 for this signer).
  test("wrong payload hash, route, module, expiry: 401 each, and they count toward the block", async () => {
    const body = { pubkey: KEY0, object_root: ROOT, nonce: 1 };
    const path = "/signer/v1/request_signature/bls";
    const refusals = [
      await cbCall(cb, path, body, { hashedBody: JSON.stringify({ ...body, nonce: 2 }) }),
      await cbCall(cb, path, body, { route: "/signer/v1/request_signature/proxy-bls" }),
      await cbCall(cb, path, body, {
        module: { id: MODULES.beta.id, secret: MODULES.alpha.secret },
      }),
      await cbCall(cb, path, body, { exp: Math.floor(Date.now() / 1000) - 3600 }),
    ];
    expect(refusals.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    expect(refusals.every((r) => JSON.parse(r.text).code === "unauthorized")).toBe(true);
    // Before the limit a valid token still works.
    expect((await cbCall(cb, path, body)).status).toBe(200);
    expect((await cbCall(cb, path, body, { module: { id: "nobody", secret: "x" } })).status).toBe(
      401,
    );
    // The fifth failure blocked the address: even a valid token now gets 429.
    const blocked = await cbCall(cb, path, body);
    expect(blocked.status).toBe(429);
    expect(JSON.parse(blocked.text).code).toBe("too_many_requests");
    const metrics = await (await fetch(`${signer.signer.metricsUrl}/metrics`)).text();
    expect(metrics).toContain(
      'signer_commit_boost_auth_failures_total{reason="wrong_payload_hash"} 1',
    );
    expect(metrics).toContain('signer_commit_boost_auth_failures_total{reason="blocked"} 1');
    expect(metrics).toContain("signer_commit_boost_blocked_clients 1");
    expect(metrics).toContain("signer_canary_signing_total 1");
    const canary = signer.logs.filter((l) => l.includes("canary key signed"));
    expect(canary.map((l) => JSON.parse(l).operation)).toEqual(["commit_boost delegation"]);
    const refusedLines = signer.logs.filter((l) => l.includes("commit-boost request refused"));
    expect(refusedLines.map((l) => JSON.parse(l).reason)).toEqual([
      "wrong_payload_hash",
      "wrong_route",
      "bad_signature",
      "expired",
      "unknown_module",
    ]);
    expect(signer.logs.filter((l) => l.includes("commit-boost client blocked"))).toHaveLength(1);
    expect(signer.logs.join("\n")).not.toContain(MODULES.alpha.secret);
  });
});
