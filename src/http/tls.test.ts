import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPrivateKey } from "node:crypto";
import { join } from "node:path";
import { TempDir } from "../../test/support/cli";
import { registerTestSecret } from "../../test/support/log-capture";
import { createTestCa, type TestCa, type TlsIdentity } from "../../test/support/tls";
import { loadServerTls, type TlsConfig } from "./tls";

const PASSWORD = registerTestSecret("correct horse battery staple 42", "TLS key password");
const dir = new TempDir();
let ca: TestCa;
let server: TlsIdentity;
let certFile: string;
let keyFile: string;

beforeAll(async () => {
  ca = await createTestCa();
  server = await ca.server();
  certFile = dir.file("server.pem", server.cert);
  keyFile = dir.file("server.key", server.key);
});
afterAll(() => dir.remove());

/** The problems of a configuration, as `where: message` lines. */
function problemsOf(config: TlsConfig): string[] {
  const loaded = loadServerTls(config);
  if (loaded.ok) throw new Error("expected problems, the TLS material loaded");
  return loaded.problems.map((p) => `${p.where}: ${p.message}`);
}

function encryptedKey(): string {
  return String(
    createPrivateKey(server.key).export({
      format: "pem",
      type: "pkcs8",
      cipher: "aes-256-cbc",
      passphrase: PASSWORD,
    }),
  );
}

describe("loadServerTls", () => {
  test("a matching pair loads as is; no client certificate is requested", () => {
    const loaded = loadServerTls({ cert_file: certFile, key_file: keyFile });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    expect(loaded.tls.options).toEqual({ cert: server.cert, key: server.key });
    expect(loaded.tls.mutual).toBe(false);
    expect(loaded.tls.subject).toBe("CN=localhost");
    expect(loaded.tls.notAfter.getTime()).toBeGreaterThan(Date.now());
  });

  test("client_ca_file requests and requires a client certificate from those CAs", () => {
    const other = dir.file("two-cas.pem", `${ca.cert}\n${server.cert}`);
    const loaded = loadServerTls({ cert_file: certFile, key_file: keyFile, client_ca_file: other });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    expect(loaded.tls.mutual).toBe(true);
    expect(loaded.tls.options).toMatchObject({
      ca: `${ca.cert}\n${server.cert}`,
      requestCert: true,
      rejectUnauthorized: true,
    });
  });

  test("a chain file (leaf, then the CA) is accepted and served whole", () => {
    const chain = dir.file("chain.pem", `${server.cert}${ca.cert}`);
    const loaded = loadServerTls({ cert_file: chain, key_file: keyFile });
    expect(loaded.ok && loaded.tls.options.cert).toBe(`${server.cert}${ca.cert}`);
  });

  test("unreadable files are named with their option", () => {
    const missing = join(dir.path, "missing.pem");
    expect(problemsOf({ cert_file: missing, key_file: dir.path })).toEqual([
      `server.tls.cert_file: cannot read ${missing}: no such file`,
      `server.tls.key_file: cannot read ${dir.path}: is a directory`,
    ]);
  });

  test("garbage instead of PEM", () => {
    const garbage = dir.file("garbage.pem", "this is not a certificate\n");
    expect(problemsOf({ cert_file: garbage, key_file: garbage })).toEqual([
      `server.tls.cert_file: ${garbage} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      `server.tls.key_file: ${garbage} holds no PEM private key (-----BEGIN PRIVATE KEY-----)`,
    ]);
  });

  test("PEM armour around bytes that are no certificate or key", () => {
    const body = "QUJD".repeat(20);
    const cert = dir.file(
      "bad-cert.pem",
      `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
    );
    const key = dir.file(
      "bad-key.pem",
      `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`,
    );
    expect(problemsOf({ cert_file: cert, key_file: key })).toEqual([
      `server.tls.cert_file: certificate 1 in ${cert} is not a valid X.509 certificate`,
      `server.tls.key_file: ${key} is not a private key sigil can read (PEM: PKCS#8, PKCS#1, SEC1)`,
    ]);
  });

  test("swapped certificate and key files", () => {
    expect(problemsOf({ cert_file: keyFile, key_file: certFile })).toEqual([
      `server.tls.cert_file: ${keyFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----); it holds a private key: are cert_file and key_file swapped?`,
      `server.tls.key_file: ${certFile} holds no PEM private key (-----BEGIN PRIVATE KEY-----); it holds a certificate: are cert_file and key_file swapped?`,
    ]);
  });

  test("a key that is not the certificate's", async () => {
    const other = await ca.server();
    const otherKey = dir.file("other.key", other.key);
    expect(problemsOf({ cert_file: certFile, key_file: otherKey })).toEqual([
      `server.tls.key_file: ${otherKey} is not the key of the certificate in ${certFile} (server.tls.cert_file)`,
    ]);
  });

  test("an encrypted key: needs key_password_file, with the right password", async () => {
    const encrypted = dir.file("encrypted.key", encryptedKey());
    expect(problemsOf({ cert_file: certFile, key_file: encrypted })).toEqual([
      `server.tls.key_file: ${encrypted} is encrypted: set server.tls.key_password_file`,
    ]);
    const wrong = dir.file("wrong.txt", "not the password\n");
    expect(
      problemsOf({ cert_file: certFile, key_file: encrypted, key_password_file: wrong }),
    ).toEqual([
      `server.tls.key_password_file: the password in ${wrong} does not decrypt ${encrypted}`,
    ]);
    const empty = dir.file("empty.txt", "\n");
    expect(
      problemsOf({ cert_file: certFile, key_file: encrypted, key_password_file: empty }),
    ).toEqual([`server.tls.key_password_file: ${empty} is empty`]);

    // The newline `echo` leaves is not part of the password.
    const right = dir.file("password.txt", `${PASSWORD}\n`);
    const loaded = loadServerTls({
      cert_file: certFile,
      key_file: encrypted,
      key_password_file: right,
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    expect(loaded.tls.options.passphrase).toBe(PASSWORD);
    // And Bun's TLS takes the encrypted key with that password.
    const https = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: loaded.tls.options,
      fetch: () => new Response("served"),
    });
    try {
      const response = await fetch(`https://localhost:${https.port}/`, { tls: { ca: ca.cert } });
      expect(await response.text()).toBe("served");
    } finally {
      await https.stop(true);
    }
  });

  test("a client CA file without a certificate", () => {
    expect(problemsOf({ cert_file: certFile, key_file: keyFile, client_ca_file: keyFile })).toEqual(
      [
        `server.tls.client_ca_file: ${keyFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      ],
    );
  });

  test("two private keys in key_file", () => {
    const two = dir.file("two.key", `${server.key}${server.key}`);
    expect(problemsOf({ cert_file: certFile, key_file: two })).toEqual([
      `server.tls.key_file: ${two} holds 2 private keys; it must hold only cert_file's`,
    ]);
  });
});
