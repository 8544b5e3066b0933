// A DynamoDB that goes away must make every call fail, never look like "nothing recorded".
// Its own dynalite, since the test stops it.
import { expect, test } from "bun:test";
import { openDynamoStore } from "../../src/antislashing/backends/dynamodb/store";
import { dynamoClient, startDynamo } from "../support/dynamodb";

const GVR = new Uint8Array(32).fill(0x4b);
const PUBKEY = `0x${"a1".repeat(48)}`;
const ROOT = new Uint8Array(32).fill(7);

test("with dynalite stopped, checks, import, export and ping reject", async () => {
  const dynamo = await startDynamo();
  try {
    await dynamo.createSlashingTable("slashing");
    // Clients that stop() does not destroy: the failure must come from the missing server. One
    // store has a pooled connection and its genesis root cached, the other has neither.
    const warm = await openDynamoStore({
      table: "slashing",
      client: dynamoClient(dynamo.endpoint),
    });
    const cold = await openDynamoStore({
      table: "slashing",
      client: dynamoClient(dynamo.endpoint),
    });
    expect(
      await warm.checkAndInsertBlock(GVR, { pubkey: PUBKEY, slot: 1n, signingRoot: ROOT }),
    ).toEqual({ outcome: "new" });

    await dynamo.stop();

    for (const store of [warm, cold]) {
      await expect(
        store.checkAndInsertBlock(GVR, { pubkey: PUBKEY, slot: 2n, signingRoot: ROOT }),
      ).rejects.toThrow();
      await expect(
        store.checkAndInsertAttestation(GVR, {
          pubkey: PUBKEY,
          sourceEpoch: 1n,
          targetEpoch: 2n,
          signingRoot: ROOT,
        }),
      ).rejects.toThrow();
      await expect(store.ping()).rejects.toThrow();
      await expect(
        store.importInterchange({
          metadata: {
            interchange_format_version: "5",
            genesis_validators_root: `0x${"4b".repeat(32)}`,
          },
          async *validators() {
            yield { pubkey: PUBKEY, blocks: [{ slot: 5n }], attestations: [] };
          },
        }),
      ).rejects.toThrow();
    }
    await expect(cold.exportInterchange()).rejects.toThrow();
    await warm.close();
    await cold.close();
  } finally {
    await dynamo.stop();
  }
}, 30_000);

test("a table that cannot be described makes open reject", async () => {
  const dynamo = await startDynamo();
  const client = dynamoClient(dynamo.endpoint);
  await dynamo.stop();
  await expect(openDynamoStore({ table: "slashing", client })).rejects.toThrow();
}, 30_000);
