// DynamoDB's copy of the database-wide watermarks (backends/dynamodb/watermarks.ts): a signer
// re-reads the item once its copy is older than the refresh time, so a bound another instance set
// is applied from then on; and a malformed item stops the check instead of reading as no bound.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { openDynamoStore, WATERMARKS_KEY } from "../../src/antislashing/backends/dynamodb/store";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { block, GVR_A, pubkey, root } from "./support";

let dynamo: RunningDynamo;
beforeAll(async () => {
  dynamo = await startDynamo();
});
afterAll(async () => {
  await dynamo?.stop();
});

test("a bound set by another instance applies once the copy is older than the refresh time", async () => {
  await dynamo.createSlashingTable("copy");
  const REFRESH_MS = 100;
  const signer = await openDynamoStore({
    table: "copy",
    client: dynamo.client(),
    watermarkRefreshMs: REFRESH_MS,
  });
  const repair = await openDynamoStore({ table: "copy", client: dynamo.client() });
  try {
    const V = pubkey(1);
    expect(await signer.checkAndInsertBlock(GVR_A, block(V, 10, root(10)))).toEqual({
      outcome: "new",
    });
    await repair.changeWatermarks({ kind: "set_high", high: { epoch: 1n, slot: 32n } });
    // Whatever a check within REFRESH_MS decides, one after it reads the item again.
    await Bun.sleep(REFRESH_MS * 2);
    expect(await signer.checkAndInsertBlock(GVR_A, block(V, 40, root(40)))).toMatchObject({
      outcome: "refused",
      reason: "block_slot_at_or_above_high_watermark",
    });
    expect(await signer.databaseWatermarks()).toEqual({ high: { epoch: 1n, slot: 32n } });
  } finally {
    await signer.close();
    await repair.close();
  }
});

test("a malformed watermarks item stops the check (503), it never reads as no bound", async () => {
  await dynamo.createSlashingTable("malformed");
  const client = dynamo.client();
  await client.send(
    new PutItemCommand({
      TableName: "malformed",
      Item: { pubkey: { S: WATERMARKS_KEY }, high_epoch: { N: "5" }, version: { N: "1" } },
    }),
  );
  const store = await openDynamoStore({ table: "malformed", client: dynamo.client() });
  try {
    await expect(store.checkAndInsertBlock(GVR_A, block(pubkey(2), 1, root(1)))).rejects.toThrow(
      "only one of high_epoch and high_slot",
    );
  } finally {
    await store.close();
  }
});
