import { describe, expect, test } from "bun:test";
import { loadConfig } from "./load";
import { formatProblems } from "./problems";
import { REDACTED, redactConfig } from "./redact";
import { type Config, ConfigSchema } from "./schema";

const KEY_A = `0x${"a".repeat(96)}`;
const LEGACY_TOKEN = "legacy-clear-text-token-01";
const STATIC_SECRET = "static-clear-text-secret-02";
const PG_PASSWORD = "hunter2-pg-pass";
const STATE_PASSWORD = "state-pass-77";

function sampleConfig(): Config {
  const result = loadConfig({ argv: [], env: {} });
  if (!result.ok) throw new Error(formatProblems(result.problems));
  const config = structuredClone(result.config);
  config.server.listen_port = 9100;
  config.server.cors_allowed_origins = ["https://app.example"];
  config.canary_keys = [KEY_A];
  config.antislashing.backend = "postgres";
  config.antislashing.url = `postgres://alice:${PG_PASSWORD}@db.example:5432/slashing?sslmode=disable`;
  config.auth_policies = {
    vc: { token: LEGACY_TOKEN, allowed_keys: [KEY_A], allowed_scopes: ["sign"] },
    mon: { token: "env:SIGNER_MON_TOKEN", allowed_scopes: ["public_keys"] },
  };
  config.static_auth = {
    policies: [{ name: "all", rules: [{ effect: "allow", keys: [KEY_A] }] }],
    tokens: [
      { secret: STATIC_SECRET, policies: ["all"], token_bound_cidrs: ["10.0.0.0/8"] },
      { secret: "env:STATIC_TOKEN", policies: ["all"] },
    ],
  };
  config.signer_state = {
    backend: "postgres",
    url: `postgresql://bob:${STATE_PASSWORD}@state.example/signer`,
    pool_size: 4,
    force_ipv4: false,
  };
  return config;
}

function redacted(config: Config): Config {
  return redactConfig(ConfigSchema, config) as Config;
}

describe("redactConfig", () => {
  test("auth_policies tokens are redacted; env: references are kept", () => {
    const out = redacted(sampleConfig());
    expect(out.auth_policies?.vc?.token).toBe(REDACTED);
    expect(out.auth_policies?.mon?.token).toBe("env:SIGNER_MON_TOKEN");
  });

  test("static_auth token secrets are redacted; env: references are kept", () => {
    const out = redacted(sampleConfig());
    expect(out.static_auth?.tokens?.[0]?.secret).toBe(REDACTED);
    expect(out.static_auth?.tokens?.[1]?.secret).toBe("env:STATIC_TOKEN");
  });

  test("a postgres URL loses its password but keeps user, host, path and query", () => {
    const out = redacted(sampleConfig());
    const url = out.antislashing.url ?? "";
    expect(url).not.toContain(PG_PASSWORD);
    const parsed = new URL(url);
    expect(parsed.protocol).toBe("postgres:");
    expect(parsed.username).toBe("alice");
    expect(parsed.hostname).toBe("db.example");
    expect(parsed.port).toBe("5432");
    expect(parsed.pathname).toBe("/slashing");
    expect(parsed.searchParams.get("sslmode")).toBe("disable");
    expect(parsed.password).not.toBe("");

    const state = out.signer_state?.url ?? "";
    expect(state).not.toContain(STATE_PASSWORD);
    expect(new URL(state).username).toBe("bob");
    expect(new URL(state).hostname).toBe("state.example");
  });

  test("a postgres URL without a password is unchanged", () => {
    const config = sampleConfig();
    config.antislashing.url = "postgres://alice@db.example/slashing";
    expect(redacted(config).antislashing.url).toBe("postgres://alice@db.example/slashing");
  });

  test("no secret survives anywhere in the output", () => {
    const json = JSON.stringify(redacted(sampleConfig()));
    for (const secret of [LEGACY_TOKEN, STATIC_SECRET, PG_PASSWORD, STATE_PASSWORD]) {
      expect(json).not.toContain(secret);
    }
  });

  test("non-secret values are untouched", () => {
    const config = sampleConfig();
    const out = redacted(config);
    expect(out.server).toEqual(config.server);
    expect(out.key_sources).toEqual(config.key_sources);
    expect(out.logging).toEqual(config.logging);
    expect(out.canary_keys).toEqual([KEY_A]);
    expect(out.antislashing.backend).toBe("postgres");
    expect(out.antislashing.pool_size).toBe(config.antislashing.pool_size);
    expect(out.auth_policies?.vc?.allowed_keys).toEqual([KEY_A]);
    expect(out.auth_policies?.vc?.allowed_scopes).toEqual(["sign"]);
    expect(out.static_auth?.policies).toEqual(config.static_auth?.policies ?? []);
    expect(out.static_auth?.tokens?.[0]?.policies).toEqual(["all"]);
    expect(out.static_auth?.tokens?.[0]?.token_bound_cidrs).toEqual(["10.0.0.0/8"]);
    expect(out.signer_state?.backend).toBe("postgres");
  });

  test("the defaults come out equal", () => {
    const result = loadConfig({ argv: [], env: {} });
    if (!result.ok) throw new Error(formatProblems(result.problems));
    expect(redactConfig(ConfigSchema, result.config)).toEqual(result.config);
  });

  test("the input is not mutated", () => {
    const config = sampleConfig();
    const before = structuredClone(config);
    const out = redacted(config);
    expect(config).toEqual(before);
    expect(out).not.toBe(config);
    expect(out.auth_policies).not.toBe(config.auth_policies);
    expect(config.auth_policies?.vc?.token).toBe(LEGACY_TOKEN);
    expect(config.static_auth?.tokens?.[0]?.secret).toBe(STATIC_SECRET);
    expect(config.antislashing.url).toContain(PG_PASSWORD);
  });
});
