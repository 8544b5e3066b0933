// A Web3Signer `eth2 export` file, as Web3Signer writes it (Jackson's pretty printer, numbers as
// strings, `signing_root` left out when Web3Signer has none), imports with `sigil slashing import`
// and protects what it records.
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { hexToBytes } from "../../src/antislashing/encoding";
import { exported } from "../antislashing/support";
import { runSigilAsync, TempDir } from "../support/cli";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const GVR = `0x${"04".repeat(32)}`;
const BLOCK_ROOT = `0x${"0a".repeat(32)}`;
const VOTE_ROOT = `0x${"0b".repeat(32)}`;
const [KEY_A = "", KEY_B = ""] = INTEROP_KEYS;

const WEB3SIGNER_EXPORT = `{
  "metadata" : {
    "interchange_format_version" : "5",
    "genesis_validators_root" : "${GVR}"
  },
  "data" : [ {
    "pubkey" : "${KEY_A}",
    "signed_blocks" : [ {
      "slot" : "81952",
      "signing_root" : "${BLOCK_ROOT}"
    }, {
      "slot" : "81953"
    } ],
    "signed_attestations" : [ {
      "source_epoch" : "2290",
      "target_epoch" : "3007",
      "signing_root" : "${VOTE_ROOT}"
    }, {
      "source_epoch" : "3007",
      "target_epoch" : "3008"
    } ]
  }, {
    "pubkey" : "${KEY_B}",
    "signed_blocks" : [ ],
    "signed_attestations" : [ ]
  } ]
}`;

test("a Web3Signer eth2 export imports as is and refuses what it records", async () => {
  const path = join(dir.path, "w3s.sqlite");
  const config = dir.file(
    "w3s.yaml",
    `network_config: {genesis_validators_root: "${GVR}"}\nantislashing: {backend: sqlite, path: "${path}"}\n`,
  );
  const file = dir.file("w3s-export.json", WEB3SIGNER_EXPORT);
  const created = await runSigilAsync(["slashing", "init", "-c", config]);
  expect(created.code, created.stderr).toBe(0);
  const result = await runSigilAsync(["slashing", "import", "-c", config, "--file", file]);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toContain("imported 2 validators (2 blocks, 2 attestations)");

  const store = await openSqliteStore(path, { create: false });
  try {
    expect((await exported(store)).get(KEY_A)).toEqual({
      blocks: [`81952@${BLOCK_ROOT}`, "81953@-"],
      attestations: [`2290->3007@${VOTE_ROOT}`, "3007->3008@-"],
    });
    const gvr = hexToBytes(GVR);
    const other = new Uint8Array(32).fill(0xee);
    const block = (slot: bigint, root: Uint8Array) =>
      store.checkAndInsertBlock(gvr, { pubkey: KEY_A, slot, signingRoot: root });
    const vote = (source: bigint, target: bigint, root: Uint8Array) =>
      store.checkAndInsertAttestation(gvr, {
        pubkey: KEY_A,
        sourceEpoch: source,
        targetEpoch: target,
        signingRoot: root,
      });
    expect(await block(81952n, hexToBytes(BLOCK_ROOT))).toEqual({ outcome: "same_data" });
    expect(await block(81953n, other)).toMatchObject({ reason: "double_block_proposal" });
    expect(await block(81954n, other)).toEqual({ outcome: "new" });
    expect(await vote(2290n, 3007n, hexToBytes(VOTE_ROOT))).toEqual({ outcome: "same_data" });
    expect(await vote(3007n, 3008n, other)).toMatchObject({ reason: "double_vote" });
    expect(await vote(2289n, 3010n, other)).toMatchObject({ reason: "surrounding_vote" });
    expect(await vote(3008n, 3009n, other)).toEqual({ outcome: "new" });
  } finally {
    await store.close();
  }
}, 60_000);
