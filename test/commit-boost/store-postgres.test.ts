import { afterAll, beforeAll } from "bun:test";
import type { ProxyStore } from "../../src/commit-boost/proxy-store";
import { openPostgresProxyStore } from "../../src/commit-boost/store/postgres";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { proxyStoreConformanceSuite } from "./store-conformance";

let server: PostgresServer;
const opened: ProxyStore[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  await server?.stop();
});

proxyStoreConformanceSuite("postgres", async () => {
  const url = await server.createSchema();
  return async () => {
    const store = await openPostgresProxyStore({ url, poolSize: 2, forceIpv4: false });
    opened.push(store);
    return store;
  };
});
