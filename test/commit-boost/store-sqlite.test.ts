import { afterAll } from "bun:test";
import { join } from "node:path";
import { openSqliteProxyStore } from "../../src/commit-boost/store/sqlite";
import { TempDir } from "../support/cli";
import { proxyStoreConformanceSuite } from "./store-conformance";

const dir = new TempDir();
let n = 0;

afterAll(() => dir.remove());

proxyStoreConformanceSuite("sqlite", async () => {
  const path = join(dir.path, `proxies-${n++}.sqlite`);
  return () => openSqliteProxyStore(path);
});
