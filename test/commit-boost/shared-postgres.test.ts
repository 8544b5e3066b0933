// Two sigil instances on one PostgreSQL database: a proxy generated on one signs on the other,
// and both list it; each signature is verified independently (blst, noble). Both sign in a
// BLS worker pool, as deployed. They share no seal secret: each opens the proxies with the
// consensus key both load (proxy-seal.ts), and a row moved to another key opens on neither.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { addressOfPublicKey } from "../../src/commit-boost/ecdsa";
import type { ProxyRecord, ProxyStore } from "../../src/commit-boost/proxy-store";
import { openPostgresProxyStore } from "../../src/commit-boost/store/postgres";
import { fromHex, toHex } from "../../src/wire/hex";
import { TempDir } from "../support/cli";
import {
  cbCall,
  MODULES,
  oracleRequestRoot,
  startCommitBoostSigner,
} from "../support/commit-boost";
import { type PostgresServer, startPostgres } from "../support/postgres";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const KEY = INTEROP_KEYS[3] ?? "";
/** Loaded by both instances too. */
const OTHER_KEY = INTEROP_KEYS[2] ?? "";
const ROOT = `0x${"a7".repeat(32)}`;
const dir = new TempDir();
let server: PostgresServer | undefined;
let store: ProxyStore | undefined;
const signers: InProcessSigner[] = [];

beforeAll(async () => {
  server = await startPostgres();
  const url = await server.createSchema();
  store = await openPostgresProxyStore({ url, poolSize: 1, forceIpv4: false });
  for (const name of ["a", "b"]) {
    signers.push(
      await startCommitBoostSigner(dir, `cb-${name}`, {
        store: `{backend: postgres, url: "${url}", pool_size: 2}`,
        // As deployed: BLS signing (consensus and proxy keys alike) in worker threads.
        workers: 2,
      }),
    );
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(signers.map((s) => s.stop().catch(() => {})));
  await store?.close().catch(() => {});
  await server?.stop();
  dir.remove();
});

const urlOf = (i: number) => signers[i]?.signer.commitBoostUrl ?? "";

function requestRoot(nonce: bigint) {
  return oracleRequestRoot(
    {
      objectRoot: fromHex(ROOT),
      signingId: fromHex(MODULES.alpha.signingId),
      nonce,
      chainId: 560048n,
    },
    "0x10000910",
  ).signingRoot;
}

test("a BLS and an ECDSA proxy generated on instance A sign on instance B", async () => {
  const bls = await cbCall(urlOf(0), "/signer/v1/generate_proxy_key", {
    pubkey: KEY,
    scheme: "bls",
  });
  const ecdsa = await cbCall(urlOf(0), "/signer/v1/generate_proxy_key", {
    pubkey: KEY,
    scheme: "ecdsa",
  });
  expect([bls.status, ecdsa.status]).toEqual([200, 200]);
  const blsProxy = (bls.json() as { message: { proxy: string } }).message.proxy;
  const address = (ecdsa.json() as { message: { proxy: string } }).message.proxy;

  const listed = await cbCall(urlOf(1), "/signer/v1/get_pubkeys");
  const entry = (
    listed.json() as { keys: { consensus: string; proxy_bls: string[]; proxy_ecdsa: string[] }[] }
  ).keys.find((k) => k.consensus === KEY);
  expect(entry).toEqual({ consensus: KEY, proxy_bls: [blsProxy], proxy_ecdsa: [address] });

  const blsSigned = await cbCall(urlOf(1), "/signer/v1/request_signature/proxy-bls", {
    proxy: blsProxy,
    object_root: ROOT,
    nonce: 3,
  });
  expect(blsSigned.status).toBe(200);
  const blsSignature = (blsSigned.json() as { signature: string }).signature;
  expect(
    verify(
      requestRoot(3n),
      PublicKey.fromHex(blsProxy),
      Signature.fromHex(blsSignature),
      true,
      true,
    ),
  ).toBe(true);

  const ecdsaSigned = await cbCall(urlOf(1), "/signer/v1/request_signature/proxy-ecdsa", {
    proxy: address,
    object_root: ROOT,
    nonce: 4,
  });
  expect(ecdsaSigned.status).toBe(200);
  const bytes = fromHex((ecdsaSigned.json() as { signature: string }).signature);
  const point = secp256k1.Signature.fromBytes(bytes.subarray(0, 64), "compact")
    .addRecoveryBit((bytes[64] ?? 27) - 27)
    .recoverPublicKey(requestRoot(4n))
    .toBytes(false);
  expect(toHex(addressOfPublicKey(point))).toBe(address);

  // The same request on A gives the same signature: RFC 6979 and BLS are deterministic.
  const again = await cbCall(urlOf(0), "/signer/v1/request_signature/proxy-ecdsa", {
    proxy: address,
    object_root: ROOT,
    nonce: 4,
  });
  expect((again.json() as { signature: string }).signature).toBe(toHex(bytes));
}, 60_000);

test("a row moved to another consensus key opens on neither instance", async () => {
  const generated = await cbCall(urlOf(0), "/signer/v1/generate_proxy_key", {
    pubkey: KEY,
    scheme: "ecdsa",
  });
  const address = (generated.json() as { message: { proxy: string } }).message.proxy;
  const signOn = async (i: number) =>
    (
      await cbCall(urlOf(i), "/signer/v1/request_signature/proxy-ecdsa", {
        proxy: address,
        object_root: ROOT,
        nonce: 9,
      })
    ).status;
  expect([await signOn(0), await signOn(1)]).toEqual([200, 200]);
  if (!store) throw new Error("no store");
  const record = (await store.get(address)) as ProxyRecord;
  // Sealed with the consensus key (format 2), no secret from the configuration.
  expect(Buffer.from(record.sealed, "base64")[0]).toBe(2);
  const rows = (await store.listByModule(MODULES.alpha.id)).filter((r) => r.consensus === KEY);
  let holder = KEY;
  const move = async (consensus: string) => {
    await store?.deleteByConsensus(holder);
    for (const row of rows) await store?.put({ ...row, consensus });
    holder = consensus;
  };
  await move(OTHER_KEY);
  // Both had it open; the moved row is opened anew with OTHER_KEY, and does not open.
  expect([await signOn(0), await signOn(1)]).toEqual([500, 500]);
  await move(KEY);
  expect([await signOn(0), await signOn(1)]).toEqual([200, 200]);
}, 60_000);
