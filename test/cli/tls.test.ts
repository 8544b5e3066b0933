// `sigil serve` with server.tls and mutual TLS, as a real process, and the operator CLI's TLS
// flags against it: certificates from a throwaway CA made here (no openssl binary needed).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createNobleBackend } from "../../src/bls/noble";
import { ageKeys } from "../support/ceremony";
import {
  type CliResult,
  initializedDatabase,
  type RunningSigil,
  runSigil,
  startSigil,
  TempDir,
} from "../support/cli";
import { registerTestSecret } from "../support/log-capture";
import { hexToBytes } from "../support/oracle";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";
import { createTestCa, type TestCa, type TlsIdentity } from "../support/tls";

const dir = new TempDir();
let ca: TestCa;
let files: { ca: string; cert: string; key: string; clientCert: string; clientKey: string };
let client: TlsIdentity;
let stranger: { cert: string; key: string };

beforeAll(async () => {
  ca = await createTestCa();
  const server = await ca.server();
  client = await ca.client();
  const other = await (await createTestCa("another CA")).client();
  files = {
    ca: dir.file("ca.pem", ca.cert),
    cert: dir.file("server.pem", server.cert),
    key: dir.file("server.key", server.key),
    clientCert: dir.file("client.pem", client.cert),
    clientKey: dir.file("client.key", client.key),
  };
  stranger = { cert: dir.file("other.pem", other.cert), key: dir.file("other.key", other.key) };
});
afterAll(() => dir.remove());

/** A one-line failure with this exit code, whose line matches `pattern`. */
function expectOneLine(result: CliResult, code: number, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe("");
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

describe("operator CLI against a signer that requires client certificates", () => {
  let sigil: RunningSigil;
  let target: string[];
  let withClientCert: string[];

  beforeAll(async () => {
    const config = dir.file(
      "mtls.yaml",
      [
        "server:",
        "  listen_address: 127.0.0.1",
        "  listen_port: 0",
        `  tls: {cert_file: "${files.cert}", key_file: "${files.key}", client_ca_file: "${files.ca}"}`,
        "bls: {workers: 0}",
        `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
        `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
      ].join("\n"),
    );
    sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
    target = ["--signer-url", sigil.url];
    withClientCert = [
      ...target,
      "--ca-cert",
      files.ca,
      "--client-cert",
      files.clientCert,
      "--client-key",
      files.clientKey,
    ];
  });
  afterAll(async () => {
    expect(await sigil.stop()).toBe(0);
  });

  test("serve listens on https and says so", () => {
    expect(sigil.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(sigil.stderrText()).toContain("client_certificates=required");
  });

  test("with --ca-cert and a client certificate: the whole ceremony, then a signature", async () => {
    const status = runSigil(["operator", "status", "--json", ...withClientCert]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: "uninitialized" });

    const setup = sigil.stderrText().match(/setup_token=(sgl_[A-Za-z0-9_-]+)/)?.[1] ?? "";
    const [age] = await ageKeys(1);
    const init = runSigil(
      [
        "operator",
        "init",
        "--setup-token",
        "env:SETUP",
        "--share-wrap",
        `age:${age?.recipient}`,
        "--threshold",
        "1",
        "--json",
        ...withClientCert,
      ],
      { SETUP: setup },
    );
    expect(init.code, init.stderr).toBe(0);
    const registration = registerTestSecret(
      (JSON.parse(init.stdout) as { operators: { registration_token: string }[] }).operators[0]
        ?.registration_token ?? "",
      "registration token",
    );
    const registered = runSigil(
      ["operator", "register", "--registration-token", "env:REG", "--json", ...withClientCert],
      { REG: registration },
    );
    expect(registered.code, registered.stderr).toBe(0);
    const asOperator = {
      CRED: registerTestSecret(
        (JSON.parse(registered.stdout) as { credential: string }).credential,
        "operator credential",
      ),
    };
    const identity = dir.file("operator.age", `${age?.identity}\n`);
    const operatorFlags = ["--credential", "env:CRED", "--identity", identity, ...withClientCert];
    const unsealed = runSigil(["operator", "unseal", ...operatorFlags], asOperator);
    expect(unsealed.code, unsealed.stderr).toBe(0);
    const root = runSigil(
      ["operator", "generate-root-token", "--json", ...operatorFlags],
      asOperator,
    );
    expect(root.code, root.stderr).toBe(0);
    const asManager = {
      MGMT: registerTestSecret((JSON.parse(root.stdout) as { token: string }).token, "root token"),
    };
    const managed = [...withClientCert, "--token", "env:MGMT"];
    const rules = JSON.stringify([{ effect: "allow", scopes: ["sign"], keys: [INTEROP_KEYS[0]] }]);
    const policy = runSigil(
      ["operator", "auth", "policy", "create", "--name", "vc", "--rules", rules, ...managed],
      asManager,
    );
    expect(policy.code, policy.stderr).toBe(0);
    const token = runSigil(
      [
        "operator",
        "auth",
        "token",
        "create",
        "--policies",
        "vc",
        "--ttl-seconds",
        "3600",
        "--json",
        ...managed,
      ],
      asManager,
    );
    expect(token.code, token.stderr).toBe(0);
    const bearer = registerTestSecret(
      (JSON.parse(token.stdout) as { token: string }).token,
      "client token",
    );

    // A validator client's request: the client certificate and the bearer token.
    const request = attestationRequest(1, 2, 7);
    const response = await fetch(`${sigil.url}/api/v1/eth2/sign/${INTEROP_KEYS[0]}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        authorization: `Bearer ${bearer}`,
      },
      body: JSON.stringify(request.body),
      tls: { ca: ca.cert, cert: client.cert, key: client.key },
    });
    expect(response.status).toBe(200);
    const { signature } = (await response.json()) as { signature: string };
    const verified = createNobleBackend().verify(
      hexToBytes(INTEROP_KEYS[0] ?? ""),
      hexToBytes(request.message.signingRoot),
      hexToBytes(signature),
    );
    expect(verified).toBe(true);
  });

  test("without --ca-cert: one line saying the certificate is not trusted, exit 1", () => {
    const result = runSigil([
      "operator",
      "status",
      ...target,
      "--client-cert",
      files.clientCert,
      "--client-key",
      files.clientKey,
    ]);
    expectOneLine(
      result,
      1,
      /^sigil: cannot reach the signer at https:\/\/127\.0\.0\.1:\d+: .*pass --ca-cert/,
    );
  });

  test("without a client certificate: one line pointing at --client-cert, exit 1", () => {
    const result = runSigil(["operator", "status", ...target, "--ca-cert", files.ca]);
    expectOneLine(result, 1, /^sigil: cannot reach the signer at .*--client-cert and --client-key/);
  });

  test("a client certificate from another CA: one line, exit 1", () => {
    const result = runSigil([
      "operator",
      "status",
      ...target,
      "--ca-cert",
      files.ca,
      "--client-cert",
      stranger.cert,
      "--client-key",
      stranger.key,
    ]);
    expectOneLine(result, 1, /^sigil: cannot reach the signer at .*client_ca_file/);
  });

  test("flag files that are not what they claim: exit 2 naming the flag, before connecting", () => {
    const mismatched = runSigil([
      "operator",
      "status",
      ...target,
      "--ca-cert",
      files.ca,
      "--client-cert",
      files.clientCert,
      "--client-key",
      stranger.key,
    ]);
    expectOneLine(mismatched, 2, /^sigil: --client-key: \S+ is not the key of --client-cert/);
    const notCa = runSigil(["operator", "status", ...target, "--ca-cert", files.clientKey]);
    expectOneLine(notCa, 2, /^sigil: --ca-cert: \S+ holds no PEM certificate$/);
  });
});

describe("serve refuses a bad server.tls: exit 2 naming the option, nothing created", () => {
  function serveWith(name: string, tls: string): CliResult {
    const config = dir.file(
      `${name}.yaml`,
      [
        `server: {listen_address: 127.0.0.1, listen_port: 0, tls: ${tls}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`,
      ].join("\n"),
    );
    const result = runSigil(["serve", "-c", config]);
    expect(result.code, result.stderr).toBe(2);
    expect(existsSync(join(dir.path, `${name}.sqlite`))).toBe(false);
    return result;
  }

  test("a missing certificate file", () => {
    const missing = join(dir.path, "missing.pem");
    const result = serveWith("missing", `{cert_file: "${missing}", key_file: "${files.key}"}`);
    expect(result.stderr).toContain(`server.tls.cert_file: cannot read ${missing}: no such file`);
  });

  test("garbage instead of a PEM certificate", () => {
    const garbage = dir.file("garbage.pem", "certainly not a certificate\n");
    const result = serveWith("garbage", `{cert_file: "${garbage}", key_file: "${files.key}"}`);
    expect(result.stderr).toContain(`server.tls.cert_file: ${garbage} holds no PEM certificate`);
  });

  test("a key that is not the certificate's; the key itself is never printed", () => {
    const result = serveWith(
      "mismatch",
      `{cert_file: "${files.cert}", key_file: "${files.clientKey}"}`,
    );
    expect(result.stderr).toContain(
      `server.tls.key_file: ${files.clientKey} is not the key of the certificate in ${files.cert}`,
    );
    for (const line of client.key.split("\n").slice(1, -2))
      expect(result.stderr).not.toContain(line);
  });

  test("config check reads the TLS files as serve does", () => {
    const config = (name: string, tls: string) =>
      dir.file(`check-${name}.yaml`, `server: {listen_address: 127.0.0.1, tls: ${tls}}\n`);
    const good = runSigil(
      [
        "config",
        "check",
        "-c",
        config("good", `{cert_file: "${files.cert}", key_file: "${files.key}"}`),
      ],
      { SIGNER_ANTISLASHING__PATH: initializedDatabase(dir) },
    );
    expect(good.code, good.stderr).toBe(0);
    const mismatch = runSigil([
      "config",
      "check",
      "-c",
      config("mismatch", `{cert_file: "${files.cert}", key_file: "${files.clientKey}"}`),
    ]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain(
      `server.tls.key_file: ${files.clientKey} is not the key of the certificate in ${files.cert}`,
    );
  });

  test("config check warns about a key file open to others (serve logs it); chmod 600 silences it", () => {
    const key = dir.file("loose.key", readFileSync(files.key, "utf8"));
    chmodSync(key, 0o640);
    const config = dir.file(
      "check-loose.yaml",
      `server: {listen_address: 127.0.0.1, tls: {cert_file: "${files.cert}", key_file: "${key}"}}\n`,
    );
    const database = { SIGNER_ANTISLASHING__PATH: initializedDatabase(dir) };
    const loose = runSigil(["config", "check", "-c", config], database);
    expect(loose.code, loose.stderr).toBe(0);
    expect(loose.stderr).toBe(
      `sigil: warning: server.tls.key_file: ${key} is readable or writable by group or others (mode 0640): run chmod 600 ${key}\n`,
    );
    chmodSync(key, 0o600);
    const tight = runSigil(["config", "check", "-c", config], database);
    expect(tight.code).toBe(0);
    expect(tight.stderr).toBe("");
  });

  test("a server certificate with an RSA-1024 key is refused", async () => {
    const weak = await ca.server({ key: "rsa-1024" });
    const cert = dir.file("weak.pem", weak.cert);
    const result = serveWith(
      "weak",
      `{cert_file: "${cert}", key_file: "${dir.file("weak.key", weak.key)}"}`,
    );
    expect(result.stderr).toContain(
      `server.tls.cert_file: certificate 1 in ${cert} has an RSA key of 1024 bits (at least 2048)`,
    );
  });
});
