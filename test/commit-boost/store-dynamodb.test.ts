import { afterAll, beforeAll, expect, test } from "bun:test";
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { ProxyStore } from "../../src/commit-boost/proxy-store";
import { openDynamoProxyStore } from "../../src/commit-boost/store/dynamodb";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { proxyRecord, proxyStoreConformanceSuite } from "./store-conformance";

let dynamo: RunningDynamo;
let tables = 0;
const opened: ProxyStore[] = [];

beforeAll(async () => {
  dynamo = await startDynamo();
});

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  await dynamo?.stop();
});

proxyStoreConformanceSuite("dynamodb", async () => {
  tables += 1;
  const table = `cb-proxies-${tables}`;
  // signer_state's table layout: the proxies share it with the stateful signer's items.
  await dynamo.createStateTable(table);
  return async () => {
    const store = await openDynamoProxyStore(dynamo.client(), table);
    opened.push(store);
    return store;
  };
});

test("an item that lost its sealed secret reads as an empty one; the module's listing still works", async () => {
  await dynamo.createStateTable("cb-proxies-lost");
  const store = await openDynamoProxyStore(dynamo.client(), "cb-proxies-lost");
  opened.push(store);
  const lost = proxyRecord(1);
  await store.put(lost);
  await store.put(proxyRecord(2));
  await dynamo.client().send(
    new UpdateItemCommand({
      TableName: "cb-proxies-lost",
      Key: { pk: { S: "cb_proxy" }, sk: { S: lost.proxy } },
      UpdateExpression: "REMOVE sealed",
    }),
  );
  expect(await store.get(lost.proxy)).toEqual({ ...lost, sealed: "" });
  expect((await store.listByModule("alpha")).map((r) => r.proxy)).toEqual([
    lost.proxy,
    proxyRecord(2).proxy,
  ]);
});
