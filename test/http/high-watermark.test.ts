// The high watermark through a real signer on PostgreSQL: another instance on the same database
// (the operator's watermark-repair) sets it while the signer runs; the signer's next check refuses
// at it with 412 and its own reason, GET /api/v1/eth2/highWatermark shows it in Web3Signer's
// shape, and the gauge follows.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import type { SlashingStore } from "../../src/antislashing/store";
import { TempDir } from "../support/cli";
import { scrapeMetrics } from "../support/metrics";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, blockRequest, INTEROP_KEYS, postSign } from "../support/slashing";

const dir = new TempDir();
let server: PostgresServer;
let signer: InProcessSigner;
let repair: SlashingStore;
const KEY = INTEROP_KEYS[0] ?? "";
/** attestationRequest and blockRequest count epochs from here. */
const FIRST_EPOCH = 370_000n;

beforeAll(async () => {
  server = await startPostgres();
  const url = await server.createDatabase();
  signer = await startInProcessSigner(dir, "high-watermark", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: postgres, url: "${url}"}`,
    ],
  });
  repair = await openPostgresStore({ create: false, url, poolSize: 1, forceIpv4: false });
}, 120_000);

afterAll(async () => {
  await repair?.close();
  await signer?.stop();
  await server?.stop();
  dir.remove();
});

const highWatermark = async () => {
  const response = await fetch(`${signer.url}/api/v1/eth2/highWatermark`);
  expect(response.status).toBe(200);
  return response.json();
};

describe("GET /api/v1/eth2/highWatermark and the 412 at the bound", () => {
  test("{} and -1 while there is none", async () => {
    expect(await highWatermark()).toEqual({});
    const metrics = await scrapeMetrics(signer.signer.metricsUrl);
    expect(metrics.get("signer_slashing_high_watermark_epoch")).toBe(-1);
    expect(metrics.get("signer_slashing_high_watermark_slot")).toBe(-1);
  });

  test("set by another instance: the running signer refuses at it, shows it, counts it", async () => {
    const high = { epoch: FIRST_EPOCH + 10n, slot: (FIRST_EPOCH + 10n) * 32n };
    expect((await postSign(signer.url, KEY, attestationRequest(8, 9, 1).body)).status).toBe(200);
    await repair.changeWatermarks({ kind: "set_high", high });

    const refused = await postSign(signer.url, KEY, attestationRequest(9, 10, 1).body);
    expect(refused.status).toBe(412);
    const body = (await refused.json()) as { code: string; message: string };
    expect(body.code).toBe("slashing_protection");
    expect(body.message).toStartWith("attestation_at_or_above_high_watermark: target epoch 370010");
    expect(body.message).toContain("the database's high watermark, epoch 370010");
    const block = await postSign(signer.url, KEY, blockRequest(10 * 32, 1).body);
    expect(block.status).toBe(412);
    expect(((await block.json()) as { message: string }).message).toStartWith(
      "block_slot_at_or_above_high_watermark: slot 11840320",
    );
    expect((await postSign(signer.url, KEY, blockRequest(10 * 32 - 1, 1).body)).status).toBe(200);

    expect(await highWatermark()).toEqual({ epoch: "370010", slot: "11840320" });
    const metrics = await scrapeMetrics(signer.signer.metricsUrl);
    expect(metrics.get("signer_slashing_high_watermark_epoch")).toBe(370010);
    expect(metrics.get("signer_slashing_high_watermark_slot")).toBe(11840320);
    expect(
      metrics.get(
        'signer_slashing_refusals_total{operation="ATTESTATION",reason="attestation_at_or_above_high_watermark"}',
      ),
    ).toBe(1);
  });

  test("removed: {} again, and the signer signs beyond it", async () => {
    await repair.changeWatermarks({ kind: "remove_high" });
    expect(await highWatermark()).toEqual({});
    expect((await postSign(signer.url, KEY, attestationRequest(9, 10, 1).body)).status).toBe(200);
    expect(
      (await scrapeMetrics(signer.signer.metricsUrl)).get("signer_slashing_high_watermark_epoch"),
    ).toBe(-1);
  });
});
