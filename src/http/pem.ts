import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";

/**
 * PEM certificates and private keys as the TLS library will read them, checked early so callers
 * (the server's start-up, the operator CLI's flags) can say which file is wrong and why. Results
 * carry reasons, never file content: a key's bytes must not reach a message.
 */

export type PemCertificates =
  | { ok: true; certificates: X509Certificate[] }
  | { ok: false; reason: "none"; holdsPrivateKey: boolean }
  | { ok: false; reason: "invalid"; index: number };

export type PemPrivateKey =
  | { ok: true; key: KeyObject }
  | { ok: false; reason: "none"; holdsCertificate: boolean }
  | { ok: false; reason: "several"; count: number }
  | { ok: false; reason: "encrypted" | "wrong_password" | "unreadable" };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
const PRIVATE_KEY_LABEL = /^(?:(?:RSA|EC|ENCRYPTED) )?PRIVATE KEY$/;

/** Every `CERTIFICATE` block, each parsed as X.509; at least one. */
export function pemCertificates(text: string): PemCertificates {
  const blocks = pemBlocks(text);
  const certs = blocks.filter((block) => block.label === "CERTIFICATE");
  if (certs.length === 0) {
    const holdsPrivateKey = blocks.some((block) => PRIVATE_KEY_LABEL.test(block.label));
    return { ok: false, reason: "none", holdsPrivateKey };
  }
  const certificates: X509Certificate[] = [];
  for (const [index, block] of certs.entries()) {
    try {
      certificates.push(new X509Certificate(block.text));
    } catch {
      return { ok: false, reason: "invalid", index };
    }
  }
  return { ok: true, certificates };
}

/** The one private key of a PEM text (PKCS#8, PKCS#1 or SEC1, possibly encrypted). */
export function pemPrivateKey(text: string, passphrase?: string): PemPrivateKey {
  const blocks = pemBlocks(text);
  const count = blocks.filter((block) => PRIVATE_KEY_LABEL.test(block.label)).length;
  if (count === 0) {
    const holdsCertificate = blocks.some((block) => block.label === "CERTIFICATE");
    return { ok: false, reason: "none", holdsCertificate };
  }
  if (count > 1) return { ok: false, reason: "several", count };
  try {
    return {
      ok: true,
      key: createPrivateKey(passphrase === undefined ? text : { key: text, passphrase }),
    };
  } catch (error) {
    // Only the library's error code is used: it is enough to explain, and quotes nothing.
    const code = (error as { code?: unknown }).code;
    if (code === "ERR_MISSING_PASSPHRASE") return { ok: false, reason: "encrypted" };
    if (passphrase !== undefined && code === "ERR_OSSL_BAD_DECRYPT")
      return { ok: false, reason: "wrong_password" };
    return { ok: false, reason: "unreadable" };
  }
}

function pemBlocks(text: string): { label: string; text: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((match) => ({ label: match[1] ?? "", text: match[0] }));
}
