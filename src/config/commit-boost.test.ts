import { describe, expect, test } from "bun:test";
import { commitBoostWarnings } from "./commit-boost";
import { loadConfig } from "./load";
import type { Config } from "./schema";
import { validateConfig } from "./validate";

const SIGNING_ID = `0x${"6a".repeat(32)}`;

function config(edit: (c: Config) => void): Config {
  const loaded = loadConfig({ argv: [], env: {} });
  if (!loaded.ok) throw new Error("defaults do not load");
  const c = structuredClone(loaded.config);
  c.commit_boost.enabled = true;
  c.commit_boost.modules = [{ id: "alpha", jwt_secret: "a".repeat(20), signing_id: SIGNING_ID }];
  c.commit_boost.proxy_store = {
    backend: "sqlite",
    path: "/tmp/p.sqlite",
    pool_size: 2,
    force_ipv4: false,
  };
  edit(c);
  return c;
}

const problemsOf = (c: Config, env: Record<string, string> = {}) =>
  validateConfig(c, env)
    .filter((p) => p.where.startsWith("commit_boost"))
    .map((p) => `${p.where}: ${p.message}`);

describe("commit_boost config check", () => {
  test("a complete section passes; a disabled one is not checked", () => {
    expect(problemsOf(config(() => {}))).toEqual([]);
    expect(
      problemsOf(
        config((c) => {
          c.commit_boost.enabled = false;
          c.commit_boost.modules = [];
          delete c.commit_boost.proxy_store;
        }),
      ),
    ).toEqual([]);
  });

  test("each mistake is named by its option", () => {
    const cases: [(c: Config) => void, string][] = [
      [(c) => (c.commit_boost.modules = []), "commit_boost.modules: no module"],
      [
        (c) =>
          c.commit_boost.modules.push({
            id: "alpha",
            jwt_secret: "b".repeat(20),
            signing_id: SIGNING_ID,
          }),
        "commit_boost.modules[1].id: alpha is listed twice",
      ],
      [
        (c) => ((c.commit_boost.modules[0] as { jwt_secret: string }).jwt_secret = "short"),
        "at least 16",
      ],
      [
        (c) => ((c.commit_boost.modules[0] as { jwt_secret: string }).jwt_secret = "env:MISSING"),
        "MISSING is not set",
      ],
      [
        (c) => ((c.commit_boost.modules[0] as { pubkeys?: string[] }).pubkeys = ["0x1234"]),
        "commit_boost.modules[0].pubkeys[0]: invalid public key",
      ],
      [
        (c) => delete c.commit_boost.proxy_store,
        "commit_boost.proxy_store: required without signer_state",
      ],
      [
        (c) => (c.commit_boost.listen_port = c.server.listen_port),
        "commit_boost.listen_port: is server.listen_port too",
      ],
      [(c) => (c.commit_boost.host_allowlist = ["bad host!"]), "commit_boost.host_allowlist[0]"],
      [
        (c) =>
          (c.commit_boost.proxy_store = {
            backend: "postgres",
            url: "mysql://x",
            pool_size: 2,
            force_ipv4: false,
          }),
        "commit_boost.proxy_store.url",
      ],
      [
        (c) =>
          (c.commit_boost.proxy_store = { backend: "dynamodb", pool_size: 2, force_ipv4: false }),
        "commit_boost.proxy_store.table: required",
      ],
    ];
    for (const [edit, expected] of cases) {
      const found = problemsOf(config(edit));
      expect(found.some((p) => p.includes(expected))).toBe(true);
    }
  });

  test("a secret from the environment counts when set", () => {
    const c = config(
      (c) => ((c.commit_boost.modules[0] as { jwt_secret: string }).jwt_secret = "env:CB_JWT"),
    );
    expect(problemsOf(c, { CB_JWT: "j".repeat(16) })).toEqual([]);
  });

  test("with signer_state, its database and master key are the defaults", () => {
    const c = config((c) => {
      delete c.commit_boost.proxy_store;
      c.signer_state = {
        backend: "sqlite",
        path: "/tmp/s.sqlite",
        pool_size: 4,
        force_ipv4: false,
      };
    });
    expect(problemsOf(c)).toEqual([]);
    c.signer_state = { backend: "dynamodb", table: "sigil-state", pool_size: 4, force_ipv4: false };
    expect(problemsOf(c)).toEqual([]);
  });

  test("the chain id: from the network, else commit_boost.chain_id", () => {
    expect(problemsOf(config((c) => (c.network = "hoodi")))).toEqual([]);
    const devnet = config((c) => (c.network_config = { genesis_fork_version: "0x10000038" }));
    expect(problemsOf(devnet).join("\n")).toContain("commit_boost.chain_id: required");
    devnet.commit_boost.chain_id = 3151908;
    expect(problemsOf(devnet)).toEqual([]);
  });
});

describe("commit_boost warnings", () => {
  test("a non-loopback listener without TLS is warned about", () => {
    expect(commitBoostWarnings(config(() => {}))).toEqual([]);
    const open = config((c) => (c.commit_boost.listen_address = "0.0.0.0"));
    expect(commitBoostWarnings(open).join("")).toContain("without commit_boost.tls");
    open.commit_boost.tls = { cert_file: "/c.pem", key_file: "/k.pem" };
    expect(commitBoostWarnings(open)).toEqual([]);
  });
});
