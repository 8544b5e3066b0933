// Throwaway certificate authorities for TLS and mTLS tests, made in the test with @peculiar/x509
// and WebCrypto (ECDSA P-256, unless a test asks for an RSA key or a SHA-1 signature): no openssl
// binary (the CI machine has none), nothing on disk until a test writes it. Every private key is
// registered for the whole-run secret scan.
import * as x509 from "@peculiar/x509";
import { registerTestSecret } from "./log-capture";

x509.cryptoProvider.set(crypto);

const EC_KEY = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNING = { name: "ECDSA", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;

/** A certificate and its private key, both PEM (the key unencrypted PKCS#8). */
export interface TlsIdentity {
  readonly cert: string;
  readonly key: string;
}

export interface LeafOptions {
  /** Subject common name; also the DNS name of a server certificate. */
  readonly commonName?: string;
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  /** Valid until yesterday. */
  readonly expired?: boolean;
  /** Valid from tomorrow. */
  readonly notYetValid?: boolean;
  /** The leaf's own key: EC P-256 unless told (RSA for static-RSA suites and weak keys). */
  readonly key?: "ec" | "rsa-2048" | "rsa-1024";
  /** The hash of the CA's signature on the leaf: SHA-256 unless told. */
  readonly signatureHash?: "SHA-256" | "SHA-1";
}

export interface TestCa {
  /** The CA certificate, PEM: what a client (or the server, for mTLS) trusts. */
  readonly cert: string;
  /** A server certificate for localhost and 127.0.0.1 unless told otherwise. */
  server(options?: LeafOptions): Promise<TlsIdentity>;
  /** A client certificate (extended key usage clientAuth) for mutual TLS. */
  client(options?: LeafOptions): Promise<TlsIdentity>;
}

let serial = 1;
const nextSerial = () => (serial++).toString(16).padStart(2, "0");

async function generateKeys(kind: LeafOptions["key"] = "ec"): Promise<CryptoKeyPair> {
  const algorithm =
    kind === "ec"
      ? EC_KEY
      : {
          name: "RSASSA-PKCS1-v1_5",
          modulusLength: kind === "rsa-1024" ? 1024 : 2048,
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: "SHA-256",
        };
  return (await crypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey, label: string): Promise<string> {
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", key));
  registerTestSecret(der, `${label} (DER)`);
  const pem = x509.PemConverter.encode(der.buffer, "PRIVATE KEY");
  // Each line of the body too: a leak of part of the file is still a leak.
  for (const line of pem.split(/\r?\n/)) {
    if (line.length >= 16 && !line.startsWith("-----"))
      registerTestSecret(line, `${label} (PEM line)`);
  }
  return registerTestSecret(pem, label);
}

/** Valid from yesterday (clock skew) for a year, a year until yesterday, or from tomorrow. */
function validity(options: Pick<LeafOptions, "expired" | "notYetValid"> = {}) {
  const now = Date.now();
  if (options.expired)
    return { notBefore: new Date(now - 365 * DAY_MS), notAfter: new Date(now - DAY_MS) };
  if (options.notYetValid)
    return { notBefore: new Date(now + DAY_MS), notAfter: new Date(now + 365 * DAY_MS) };
  return { notBefore: new Date(now - DAY_MS), notAfter: new Date(now + 365 * DAY_MS) };
}

export async function createTestCa(name = "sigil throwaway test CA"): Promise<TestCa> {
  const caKeys = await generateKeys();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: nextSerial(),
    name: `CN=${name}`,
    ...validity(),
    signingAlgorithm: SIGNING,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  const leaf = async (
    usage: x509.ExtendedKeyUsage,
    options: LeafOptions,
    fallbackName: string,
  ): Promise<TlsIdentity> => {
    const keys = await generateKeys(options.key);
    const commonName = options.commonName ?? fallbackName;
    const names: x509.JsonGeneralName[] = [
      ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
      ...(options.ips ?? []).map((value) => ({ type: "ip" as const, value })),
    ];
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: nextSerial(),
      subject: `CN=${commonName}`,
      issuer: caCert.subject,
      ...validity(options),
      signingAlgorithm: { ...SIGNING, hash: options.signatureHash ?? SIGNING.hash },
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([usage]),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return {
      cert: cert.toString("pem"),
      key: await privateKeyPem(keys.privateKey, `TLS private key of ${commonName}`),
    };
  };

  return {
    cert: caCert.toString("pem"),
    server: (options = {}) =>
      leaf(
        x509.ExtendedKeyUsage.serverAuth,
        { dnsNames: ["localhost"], ips: ["127.0.0.1"], ...options },
        "localhost",
      ),
    client: (options = {}) => leaf(x509.ExtendedKeyUsage.clientAuth, options, "sigil operator"),
  };
}
