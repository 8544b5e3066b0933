// antislashing.max_future_epochs at its edge, against a real signer: a block or attestation up to
// that many epochs after the wall-clock epoch is signed, one epoch more is refused 412 with its own
// reason and never recorded. The network's genesis time is set so that the wall clock sits in the
// middle of an epoch (3 minutes either side), so the edge cannot move while the test runs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { runSigil, TempDir } from "../support/cli";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, blockRequest, GVR, INTEROP_KEYS, postSign } from "../support/slashing";

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
const KEY = INTEROP_KEYS[0] ?? "";
/** attestationRequest and blockRequest count epochs from here. */
const FIRST_EPOCH = 370_000;
/** The wall-clock epoch the test's network is in: FIRST_EPOCH + 50. */
const NOW_OFFSET = 50;
const EPOCH_SECONDS = 12 * 32;

beforeAll(() => {
  mkdirSync(keysDir);
  copyFileSync("examples/keys/interop-0.yaml", join(keysDir, "interop-0.yaml"));
});
afterAll(() => dir.remove());

/** A genesis time that puts the wall clock half-way through epoch FIRST_EPOCH + NOW_OFFSET. */
function genesisTime(): number {
  const now = Math.floor(Date.now() / 1000);
  return now - (FIRST_EPOCH + NOW_OFFSET) * EPOCH_SECONDS - EPOCH_SECONDS / 2;
}

async function sign(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await postSign(url, KEY, body);
  return { status: response.status, text: await response.text() };
}

function signer(name: string, networkConfig: string, extra: string[] = []) {
  return startInProcessSigner(dir, name, {
    yaml: [
      `network_config: {genesis_validators_root: "${GVR}"${networkConfig}}`,
      `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"${extra.join("")}}`,
    ],
  });
}

describe("antislashing.max_future_epochs", () => {
  test("default 2: the limit is signed, one epoch more is refused and never recorded", async () => {
    const s = await signer("edge", `, genesis_time: ${genesisTime()}`);
    try {
      expect(s.logs.some((l) => l.includes('"future-epoch bound"'))).toBe(true);
      // Attestations: target now + 3 refused; now + 2 signed.
      const beyond = await sign(s.url, attestationRequest(NOW_OFFSET, NOW_OFFSET + 3, 1).body);
      expect(beyond.status).toBe(412);
      const error = JSON.parse(beyond.text) as { code: string; message: string };
      expect(error.code).toBe("slashing_protection");
      expect(error.message).toStartWith("attestation_target_too_far_in_future: ");
      expect(error.message).toContain(`current epoch ${FIRST_EPOCH + NOW_OFFSET}`);
      // Had the refused vote been recorded, it would surround this one: this proves it was not.
      const limit = await sign(s.url, attestationRequest(NOW_OFFSET + 1, NOW_OFFSET + 2, 2).body);
      expect(limit.status, limit.text).toBe(200);

      // Blocks: the last slot of epoch now + 2 signed, the first of now + 3 refused.
      const lastAllowed = (NOW_OFFSET + 3) * 32 - 1;
      const blockBeyond = await sign(s.url, blockRequest(lastAllowed + 1, 1).body);
      expect(blockBeyond.status).toBe(412);
      expect(JSON.parse(blockBeyond.text).message).toStartWith("block_slot_too_far_in_future: ");
      const blockLimit = await sign(s.url, blockRequest(lastAllowed, 1).body);
      expect(blockLimit.status, blockLimit.text).toBe(200);

      // Only the two signed messages are in the database.
      const exported = runSigil(["slashing", "export", "-c", s.configPath, "--file", "-"]);
      expect(exported.code, exported.stderr).toBe(0);
      const data = (
        JSON.parse(exported.stdout) as {
          data: {
            signed_blocks: { slot: string }[];
            signed_attestations: { target_epoch: string }[];
          }[];
        }
      ).data;
      expect(data.flatMap((v) => v.signed_blocks.map((b) => b.slot))).toEqual([
        String(FIRST_EPOCH * 32 + lastAllowed),
      ]);
      expect(data.flatMap((v) => v.signed_attestations.map((a) => a.target_epoch))).toEqual([
        String(FIRST_EPOCH + NOW_OFFSET + 2),
      ]);
      // Refusals by the bound are counted with their reason.
      const metrics = await (await fetch(`${s.signer.metricsUrl}/metrics`)).text();
      expect(metrics).toContain(
        'signer_slashing_refusals_total{operation="ATTESTATION",reason="attestation_target_too_far_in_future"} 1',
      );
    } finally {
      await s.stop();
    }
  });

  test("0: nothing after the current epoch", async () => {
    const s = await signer("zero", `, genesis_time: ${genesisTime()}`, [", max_future_epochs: 0"]);
    try {
      expect(
        (await sign(s.url, attestationRequest(NOW_OFFSET, NOW_OFFSET + 1, 1).body)).status,
      ).toBe(412);
      expect(
        (await sign(s.url, attestationRequest(NOW_OFFSET - 1, NOW_OFFSET, 1).body)).status,
      ).toBe(200);
    } finally {
      await s.stop();
    }
  });

  test("off, with a start-up line saying so, when network_config gives no genesis time", async () => {
    const s = await signer("off", "");
    try {
      expect(s.logs.some((l) => l.includes("future-epoch bound OFF"))).toBe(true);
      const far = await sign(s.url, attestationRequest(NOW_OFFSET, 100_000, 1).body);
      expect(far.status, far.text).toBe(200);
    } finally {
      await s.stop();
    }
  });
});
