import type { X509Certificate } from "node:crypto";
import type { TLSOptions } from "bun";

/**
 * What the signing listener's TLS accepts, measured against Mozilla's "intermediate" server
 * profile (server-side-tls configuration 5.0): TLS 1.2 and 1.3 only, and in TLS 1.2 only the six
 * ECDHE suites with AEAD ciphers that profile lists. Its two DHE suites are left out: the
 * runtime's TLS library (BoringSSL) has no server-side DHE, and every client that has DHE has
 * ECDHE. TLS 1.3's suites (AES-GCM, ChaCha20-Poly1305) are not configurable and all qualify.
 * docs/tls.md explains each value to operators.
 */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
] as const;

/**
 * Handshake signatures, ours and a client certificate holder's (TLS 1.2 CertificateVerify): no
 * SHA-1 and no MD5, which Bun's defaults still accept from a client.
 */
export const SIGNATURE_ALGORITHMS = [
  "ECDSA+SHA256",
  "ECDSA+SHA384",
  "ECDSA+SHA512",
  "ed25519",
  "RSA-PSS+SHA256",
  "RSA-PSS+SHA384",
  "RSA-PSS+SHA512",
  "RSA+SHA256",
  "RSA+SHA384",
  "RSA+SHA512",
] as const;

/**
 * OpenSSL's SSL_OP_CIPHER_SERVER_PREFERENCE: the server's order above decides, not the client's.
 * Mozilla's intermediate profile lets the client choose since every suite in it is sound; sigil
 * prefers its own order so that the suite is the same whatever order a client lists them in.
 */
const SSL_OP_CIPHER_SERVER_PREFERENCE = 0x0040_0000;
/** TLS1_2_VERSION: TLS 1.0 and 1.1 are refused (also Bun's default; stated so it stays). */
const TLS1_2_VERSION = 0x0303;

/**
 * The options Bun.serve takes beyond its published types (Bun 1.4.5 reads `minVersion` as a
 * protocol number and `sigalgs` as an OpenSSL list; test/http/tls.test.ts checks they apply).
 */
export type ListenerTlsOptions = TLSOptions & { minVersion: number; sigalgs: string };

export const LISTENER_TLS_POLICY = {
  ciphers: TLS12_CIPHERS.join(":"),
  sigalgs: SIGNATURE_ALGORITHMS.join(":"),
  secureOptions: SSL_OP_CIPHER_SERVER_PREFERENCE,
  minVersion: TLS1_2_VERSION,
} as const;

/** Mozilla intermediate: RSA keys of 2048 bits or more; EC keys on P-256 or larger curves. */
export const MIN_RSA_BITS = 2048;
const STRONG_CURVES = new Set(["prime256v1", "secp384r1", "secp521r1"]);
const WEAK_SIGNATURE = /(?:sha1|md5|md2)(?:with|$)|with-?sha1$/i;

/**
 * Why a certificate's key is too weak for the listener (our own certificate, or a CA that signs
 * client certificates), or undefined when it is strong enough.
 */
export function weakKey(certificate: X509Certificate): string | undefined {
  const key = certificate.publicKey;
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "rsa":
    case "rsa-pss": {
      const bits = details.modulusLength ?? 0;
      return bits < MIN_RSA_BITS
        ? `an RSA key of ${bits} bits (at least ${MIN_RSA_BITS})`
        : undefined;
    }
    case "ec":
      return STRONG_CURVES.has(details.namedCurve ?? "")
        ? undefined
        : `an EC key on ${details.namedCurve ?? "an unnamed curve"} (P-256, P-384 or P-521)`;
    case "ed25519":
    case "ed448":
      return undefined;
    default:
      return `a ${key.asymmetricKeyType ?? "unknown"} key (RSA, EC or Ed25519)`;
  }
}

/** The certificate's signature algorithm when it hashes with SHA-1 or MD5, else undefined. */
export function weakSignature(certificate: X509Certificate): string | undefined {
  // Bun's X509Certificate has it (Node 23+ too); older typings do not declare it.
  const algorithm = (certificate as X509Certificate & { signatureAlgorithm?: string })
    .signatureAlgorithm;
  return algorithm !== undefined && WEAK_SIGNATURE.test(algorithm) ? algorithm : undefined;
}
