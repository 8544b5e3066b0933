import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { startSigner } from "../../src/app/signer";
import { loadConfig } from "../../src/config/load";
import { createLogger, parseLogFilter } from "../../src/observability/log";
import { runSigil, TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { captureSink } from "../support/log-capture";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

/**
 * Every path that handles a secret, run at trace level: static tokens (clear and env:),
 * raw keys and keystore passwords, Key Manager imports, wrong tokens, wrong passwords, config
 * errors. No secret may appear anywhere in what sigil writes.
 */
test("no test secret ever appears in the logs, answers, metrics or CLI output", async () => {
  const token = "static-secret-token-0123456789";
  const envToken = "env-secret-token-0123456789ab";
  const kmPassword = "key-manager-password-never-logged";
  const rawKey =
    readFileSync("examples/keys/interop-0.yaml", "utf8").match(/0x[0-9a-f]{64}/)?.[0] ?? "missing";
  const keystorePassword = readFileSync("examples/keys/interop-2.password", "utf8").trim();
  const importSecret = interopSecret(40);
  const importPubkey = SecretKey.fromBytes(importSecret).toPublicKey().toBytes();
  const kdf = { ...defaultPbkdfModule(), params: { ...defaultPbkdfModule().params, c: 1024 } };
  const keystore = JSON.stringify(
    await create(kmPassword, importSecret, importPubkey, "m/12381/3600/40/0/0", "", kdf),
  );
  const secrets = [
    token,
    envToken,
    kmPassword,
    rawKey,
    keystorePassword,
    Buffer.from(importSecret).toString("hex"),
  ];

  const keysDir = join(dir.path, "keys");
  Bun.spawnSync(["cp", "-r", resolve("examples/keys"), keysDir]);
  const file = dir.file(
    "secrets.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "metrics: {listen_address: 127.0.0.1, listen_port: 0}",
      `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "s.sqlite")}"}`,
      "static_auth:",
      "  policies: [{name: all, rules: [{effect: allow}]}]",
      `  tokens: [{secret: ${token}, policies: [all]}, {secret: "env:ENV_TOKEN", policies: [all]}]`,
      "logging: {level: trace}",
    ].join("\n"),
  );
  const output: string[] = [];
  const env = { ENV_TOKEN: envToken };
  const loaded = loadConfig({ argv: ["-c", file], env });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const filter = parseLogFilter("trace");
  if (!filter.ok) throw new Error(filter.error);
  const logger = createLogger({
    filter: filter.filter,
    format: "json",
    color: false,
    sink: captureSink(output),
  });
  const signer = await startSigner(loaded.config, logger, env, { initSlashingProtection: true });
  const call = async (path: string, init: RequestInit) => {
    const response = await fetch(`${signer.http.url}${path}`, init);
    output.push(await response.text());
  };
  const json = (authorization: string, method: string, body: unknown) => ({
    method,
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  try {
    await call(
      `/api/v1/eth2/sign/${INTEROP_KEYS[0]}`,
      json(`Bearer ${token}`, "POST", attestationRequest(1, 2, 3).body),
    );
    await call(
      `/api/v1/eth2/sign/${INTEROP_KEYS[0]}`,
      json(`Basic ${btoa(`u:${envToken}`)}`, "POST", attestationRequest(1, 2, 4).body),
    );
    await call(`/api/v1/eth2/sign/${INTEROP_KEYS[0]}`, json(token, "POST", {})); // token without a scheme
    await call(`/api/v1/eth2/sign/${INTEROP_KEYS[0]}`, json(`Bearer ${token}x`, "POST", {})); // wrong token
    await call(
      "/eth/v1/keystores",
      json(`Bearer ${token}`, "POST", { keystores: [keystore], passwords: [kmPassword] }),
    );
    await call(
      "/eth/v1/keystores",
      json(`Bearer ${token}`, "POST", { keystores: [keystore], passwords: [`${kmPassword}!`] }),
    );
    await call(
      "/eth/v1/keystores",
      json(`Bearer ${token}`, "POST", { keystores: [`{"bad": "${kmPassword}"`], passwords: ["x"] }),
    );
    // Metrics are scraped after every path above ran: labels must not carry a secret either.
    const metrics = await fetch(`${signer.metricsUrl}/metrics`);
    const exposition = await metrics.text();
    expect(exposition).toContain("signer_"); // really the exposition, not an error page
    output.push(exposition);
  } finally {
    await signer.stop();
  }
  // The CLI: config print and a config error with a secret in it.
  output.push(runSigil(["config", "print", "-c", file], env).stdout);
  const bad = dir.file(
    "bad.yaml",
    `static_auth:\n  policies: []\n  tokens: [{secret: ${token}, policies: [missing]}]\n`,
  );
  const failed = runSigil(["config", "check", "-c", bad], env);
  output.push(failed.stdout, failed.stderr);

  const everything = output.join("\n");
  expect(everything).toContain("keystore imported"); // the scenario really ran
  for (const secret of secrets) expect(everything).not.toContain(secret);
});
