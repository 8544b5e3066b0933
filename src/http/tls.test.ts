import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPrivateKey } from "node:crypto";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { TempDir } from "../../test/support/cli";
import { registerTestSecret } from "../../test/support/log-capture";
import { createTestCa, type TestCa, type TlsIdentity } from "../../test/support/tls";
import { loadServerTls, type TlsConfig } from "./tls";
import { LISTENER_TLS_POLICY } from "./tls-policy";

const PASSWORD = registerTestSecret("correct horse battery staple 42", "TLS key password");
const dir = new TempDir();
const privately = (path: string) => {
  chmodSync(path, 0o600);
  return path;
};
let ca: TestCa;
let server: TlsIdentity;
let certFile: string;
let keyFile: string;

beforeAll(async () => {
  ca = await createTestCa();
  server = await ca.server();
  certFile = dir.file("server.pem", server.cert);
  keyFile = privately(dir.file("server.key", server.key));
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
    expect(loaded.tls.options).toEqual({
      cert: server.cert,
      key: server.key,
      ...LISTENER_TLS_POLICY,
    });
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

describe("the listener's minimum (Mozilla intermediate)", () => {
  test("ECDHE suites only, server order, TLS 1.2 and up, no SHA-1 handshake signatures", () => {
    expect(LISTENER_TLS_POLICY.ciphers.split(":").every((s) => s.startsWith("ECDHE-"))).toBe(true);
    expect(LISTENER_TLS_POLICY.ciphers).not.toMatch(/CBC|-SHA(?:$|:)/);
    expect(LISTENER_TLS_POLICY.secureOptions).toBe(0x0040_0000);
    expect(LISTENER_TLS_POLICY.minVersion).toBe(0x0303);
    expect(LISTENER_TLS_POLICY.sigalgs).not.toMatch(/SHA1|MD5/i);
  });

  test("a certificate with an RSA-1024 key is refused, in cert_file and client_ca_file", async () => {
    const weak = await ca.server({ key: "rsa-1024" });
    const cert = dir.file("weak.pem", weak.cert);
    const key = privately(dir.file("weak.key", weak.key));
    expect(problemsOf({ cert_file: cert, key_file: key, client_ca_file: cert })).toEqual([
      `server.tls.cert_file: certificate 1 in ${cert} has an RSA key of 1024 bits (at least 2048)`,
      `server.tls.client_ca_file: certificate 1 in ${cert} has an RSA key of 1024 bits (at least 2048)`,
    ]);
    const strong = await ca.server({ key: "rsa-2048" });
    const loaded = loadServerTls({
      cert_file: dir.file("rsa.pem", strong.cert),
      key_file: privately(dir.file("rsa.key", strong.key)),
    });
    expect(loaded.ok).toBe(true);
  });

  test("a certificate signed with SHA-1 is refused in cert_file", async () => {
    const sha1 = await ca.server({ signatureHash: "SHA-1" });
    const cert = dir.file("sha1.pem", sha1.cert);
    const key = privately(dir.file("sha1.key", sha1.key));
    expect(problemsOf({ cert_file: cert, key_file: key })).toEqual([
      `server.tls.cert_file: certificate 1 in ${cert} is signed with ecdsa-with-SHA1 (SHA-256 or stronger)`,
    ]);
  });

  test("a key file open to group or others is a warning, not a problem", () => {
    const loose = dir.file("loose.key", server.key);
    chmodSync(loose, 0o644);
    const loaded = loadServerTls({ cert_file: certFile, key_file: loose });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    expect(loaded.tls.warnings).toEqual([
      `server.tls.key_file: ${loose} is readable or writable by group or others (mode 0644): run chmod 600 ${loose}`,
    ]);
    const tight = loadServerTls({ cert_file: certFile, key_file: keyFile });
    expect(tight.ok && tight.tls.warnings).toEqual([]);
  });
});
