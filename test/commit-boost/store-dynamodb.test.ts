import { afterAll, beforeAll } from "bun:test";
import type { ProxyStore } from "../../src/commit-boost/proxy-store";
import { openDynamoProxyStore } from "../../src/commit-boost/store/dynamodb";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { proxyStoreConformanceSuite } from "./store-conformance";

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
