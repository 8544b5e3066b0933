// signer_state in DynamoDB against an in-process dynalite: one server for this file, a fresh
// table per store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";
import { newToken } from "../../src/auth/tokens";
import { MAX_SEAL_BODY_BYTES, StateSchemaError } from "../../src/state/codec";
import { openDynamoState } from "../../src/state/dynamodb";
import type { SignerStateStore } from "../../src/state/store";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { signerStateConformanceSuite, tokenRecord } from "./conformance";

let dynamo: RunningDynamo;
let tables = 0;
const opened: SignerStateStore[] = [];

beforeAll(async () => {
  dynamo = await startDynamo();
});
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  await dynamo?.stop();
});

async function freshTable(): Promise<string> {
  tables += 1;
  const name = `state-${tables}`;
  await dynamo.createStateTable(name);
  return name;
}

async function openOn(table: string): Promise<SignerStateStore> {
  const store = await openDynamoState({ table, client: dynamo.client() });
  opened.push(store);
  return store;
}

signerStateConformanceSuite(
  "dynamodb",
  async () => {
    const table = await freshTable();
    // Each store its own client, as separate signer processes have.
    return () => openDynamoState({ table, client: dynamo.client() });
  },
  { shared: true },
);

describe("dynamodb signer_state specifics", () => {
  test("a missing table is a clear open error naming the layout to create", async () => {
    const error = await openDynamoState({ table: "no-such-table", client: dynamo.client() }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StateSchemaError);
    const message = error instanceof Error ? error.message : "";
    expect(message).toContain('"no-such-table" does not exist');
    expect(message).toContain('partition key "pk" (type S) and sort key "sk" (type S)');
  });

  test("a table with another key layout is refused", async () => {
    await dynamo.createSlashingTable("slashing-layout");
    await expect(
      openDynamoState({ table: "slashing-layout", client: dynamo.client() }),
    ).rejects.toThrow(/partition key is "pubkey", not "pk".*sort key is "\(none\)", not "sk"/);
  });

  test("an empty table name is refused", async () => {
    await expect(openDynamoState({ table: "", client: dynamo.client() })).rejects.toThrow(
      /signer_state\.table/,
    );
  });

  test("item layout: policy, token and accessor items; the hash, never the token", async () => {
    const table = await freshTable();
    const store = await openOn(table);
    const issued = newToken();
    await store.createPolicy({ name: "signers", rules: [{ effect: "allow" }] });
    await store.createToken(tokenRecord("x", { accessor: issued.accessor, hash: issued.hash }));
    const client = dynamo.client();
    const { Items = [] } = await client.send(new ScanCommand({ TableName: table }));
    const keys = Items.map((item) => `${item.pk?.S}/${item.sk?.S}`).sort();
    expect(keys).toEqual([`accessor/${issued.accessor}`, "policy/signers", `token/${issued.hash}`]);
    const dump = JSON.stringify(Items);
    expect(dump).not.toContain(issued.token);
    // Consuming removes both the token and its accessor item.
    await store.consumeToken(issued.hash);
    const after = await client.send(new ScanCommand({ TableName: table }));
    expect((after.Items ?? []).map((item) => item.pk?.S)).toEqual(["policy"]);
  });

  test("item layout: the seal record is one item seal/seal, body as given, version a number", async () => {
    const table = await freshTable();
    const store = await openOn(table);
    await store.createPolicy({ name: "p", rules: [] });
    const body = `"${"x".repeat(MAX_SEAL_BODY_BYTES - 2)}"`;
    expect(await store.putSeal(body, undefined)).toBe(true);
    expect(await store.putSeal(body, 1)).toBe(true);
    const client = dynamo.client();
    const { Item } = await client.send(
      new GetItemCommand({
        TableName: table,
        Key: { pk: { S: "seal" }, sk: { S: "seal" } },
        ConsistentRead: true,
      }),
    );
    expect(Item?.body?.S === body).toBe(true);
    expect(Item?.version).toEqual({ N: "2" });
    expect(Number(Item?.updated_at?.N)).toBeGreaterThan(0);
    const { Items = [] } = await client.send(new ScanCommand({ TableName: table }));
    expect(Items.map((item) => `${item.pk?.S}/${item.sk?.S}`).sort()).toEqual([
      "policy/p",
      "seal/seal",
    ]);
    expect(await store.listPolicies()).toStrictEqual([{ name: "p", rules: [] }]);
    expect(await store.listTokens()).toEqual([]);
  });

  test("an accessor item left without its token (a crash between writes) is harmless", async () => {
    const table = await freshTable();
    const store = await openOn(table);
    const client = dynamo.client();
    const record = tokenRecord("orphan");
    await store.createToken(record);
    // Simulate a crash after the token was deleted but before its accessor item was.
    await client.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { pk: { S: "token" }, sk: { S: record.hash } },
      }),
    );
    expect(await store.revokeToken(record.accessor)).toBe(false);
    expect(await store.listTokens()).toEqual([]);
    // An accessor item pointing at another token's hash does not let a revoke remove that token.
    const other = tokenRecord("other");
    await store.createToken(other);
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: "accessor" }, sk: { S: "acc-forged" }, hash: { S: other.hash } },
      }),
    );
    expect(await store.revokeToken("acc-forged")).toBe(false);
    expect(await store.findToken(other.hash)).toStrictEqual(other);
  });

  test("policies and tokens beyond one Query page are all listed", async () => {
    const table = await freshTable();
    const store = await openOn(table);
    const bigRules = Array.from({ length: 400 }, () => ({
      effect: "allow" as const,
      keys: [`0x${"ab".repeat(48)}`],
    }));
    const names = Array.from({ length: 40 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    for (const name of names) await store.createPolicy({ name, rules: bigRules });
    const listed = await store.listPolicies();
    expect(listed.map((p) => p.name)).toEqual(names);
    expect(listed.every((p) => p.rules.length === 400)).toBe(true);
  });
});
