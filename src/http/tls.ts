import type { KeyObject, X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { type ConfigProblem, problem } from "../config/problems";
import type { Config } from "../config/schema";
import { formatMode, isOpenToOthers } from "../keys/file-mode";
import { describeFsError } from "../os/fs-error";
import { pemCertificates, pemPrivateKey } from "./pem";
import { LISTENER_TLS_POLICY, type ListenerTlsOptions, weakKey, weakSignature } from "./tls-policy";

export type TlsConfig = NonNullable<Config["server"]["tls"]>;

/** The signing listener's TLS material, read and checked; `options` go to Bun.serve as they are. */
export interface ServerTls {
  readonly options: ListenerTlsOptions;
  /** Subject of the listener's certificate, for the start-up log. */
  readonly subject: string;
  readonly notAfter: Date;
  /** Clients must present a certificate signed by a CA of `client_ca_file`. */
  readonly mutual: boolean;
  /** What start-up logs and `config check` prints, without refusing to start. */
  readonly warnings: readonly string[];
}

export type TlsLoadResult = { ok: true; tls: ServerTls } | { ok: false; problems: ConfigProblem[] };

const OPTION = "server.tls";

type Report = (option: keyof TlsConfig, message: string) => void;

/**
 * Reads `server.tls`'s files and checks them the way the TLS library would, so that a mistake is
 * a start-up error naming the option and the file rather than a handshake failure later. No
 * message quotes a file's content: the key and its password never leave this function.
 */
export function loadServerTls(config: TlsConfig): TlsLoadResult {
  const problems: ConfigProblem[] = [];
  const report: Report = (option, message) =>
    problems.push(problem(`${OPTION}.${option}`, message));
  const read = (option: keyof TlsConfig): string | undefined => {
    const path = config[option];
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, "utf8");
    } catch (error) {
      report(option, `cannot read ${path}: ${describeFsError(error)}`);
      return undefined;
    }
  };
  const certText = read("cert_file");
  const keyText = read("key_file");
  const passwordText = read("key_password_file");
  const clientCaText = read("client_ca_file");

  const chain = certText === undefined ? [] : certificates(certText, "cert_file", config, report);
  checkStrength(chain, "cert_file", config, report);
  if (clientCaText !== undefined) {
    const cas = certificates(clientCaText, "client_ca_file", config, report);
    checkStrength(cas, "client_ca_file", config, report);
  }
  // One line; the newline an editor or `echo` leaves is not part of the password.
  const passphrase = passwordText?.replace(/[\r\n]+$/, "");
  if (passphrase === "") report("key_password_file", `${config.key_password_file} is empty`);
  const key =
    keyText === undefined || passphrase === ""
      ? undefined
      : privateKey(keyText, passphrase, config, report);
  const leaf = chain[0];
  if (leaf && key && !leaf.checkPrivateKey(key)) {
    report(
      "key_file",
      `${config.key_file} is not the key of the certificate in ${config.cert_file} (${OPTION}.cert_file)`,
    );
  }
  if (problems.length > 0 || !leaf || certText === undefined || keyText === undefined)
    return { ok: false, problems };

  const mutual = clientCaText !== undefined;
  return {
    ok: true,
    tls: {
      options: {
        cert: certText,
        key: keyText,
        ...(passphrase === undefined ? {} : { passphrase }),
        // requestCert alone decides that a certificate is asked for; ca only verifies it.
        ...(mutual ? { ca: clientCaText, requestCert: true, rejectUnauthorized: true } : {}),
        ...LISTENER_TLS_POLICY,
      },
      subject: leaf.subject.replaceAll("\n", ", "),
      notAfter: new Date(leaf.validTo),
      mutual,
      warnings: keyFileWarnings(config.key_file),
    },
  };
}

/**
 * Certificates the listener would present or trust, held to the minimum of Mozilla's intermediate
 * profile (tls-policy.ts): a key that is too small is refused in any of them; a SHA-1 or MD5
 * signature only where a peer verifies it (cert_file's certificates that are not self-signed: a
 * root's signature on itself is never checked, nor the trust anchors of client_ca_file).
 */
function checkStrength(
  certificates: readonly X509Certificate[],
  option: "cert_file" | "client_ca_file",
  config: TlsConfig,
  report: Report,
): void {
  for (const [index, certificate] of certificates.entries()) {
    const which = `certificate ${index + 1} in ${config[option]}`;
    const key = weakKey(certificate);
    if (key) report(option, `${which} has ${key}`);
    const selfSigned = certificate.subject === certificate.issuer;
    const signature =
      option === "cert_file" && !selfSigned ? weakSignature(certificate) : undefined;
    if (signature) report(option, `${which} is signed with ${signature} (SHA-256 or stronger)`);
  }
}

/** The key file open to group or others: a warning, as for key files (keys/file-mode.ts). */
function keyFileWarnings(path: string): string[] {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return []; // It was just read: a file that vanished since is the next start's problem.
  }
  if (!isOpenToOthers(mode)) return [];
  return [
    `server.tls.key_file: ${path} is readable or writable by group or others (mode ${formatMode(mode)}): run chmod 600 ${path}`,
  ];
}

const PEM_CERTIFICATE = "(-----BEGIN CERTIFICATE-----)";
const PEM_KEY = "(-----BEGIN PRIVATE KEY-----)";
const SWAPPED = "are cert_file and key_file swapped?";

/** Every certificate of a PEM file, or none after reporting why. */
function certificates(
  text: string,
  option: "cert_file" | "client_ca_file",
  config: TlsConfig,
  report: Report,
): X509Certificate[] {
  const path = config[option];
  const parsed = pemCertificates(text);
  if (parsed.ok) return parsed.certificates;
  if (parsed.reason === "invalid") {
    report(option, `certificate ${parsed.index + 1} in ${path} is not a valid X.509 certificate`);
  } else {
    const swapped = option === "cert_file" && parsed.holdsPrivateKey;
    report(
      option,
      `${path} holds no PEM certificate ${PEM_CERTIFICATE}${swapped ? `; it holds a private key: ${SWAPPED}` : ""}`,
    );
  }
  return [];
}

function privateKey(
  text: string,
  passphrase: string | undefined,
  config: TlsConfig,
  report: Report,
): KeyObject | undefined {
  const path = config.key_file;
  const parsed = pemPrivateKey(text, passphrase);
  if (parsed.ok) return parsed.key;
  switch (parsed.reason) {
    case "none":
      report(
        "key_file",
        `${path} holds no PEM private key ${PEM_KEY}${parsed.holdsCertificate ? `; it holds a certificate: ${SWAPPED}` : ""}`,
      );
      break;
    case "several":
      report(
        "key_file",
        `${path} holds ${parsed.count} private keys; it must hold only cert_file's`,
      );
      break;
    case "encrypted":
      report("key_file", `${path} is encrypted: set ${OPTION}.key_password_file`);
      break;
    case "wrong_password":
      report(
        "key_password_file",
        `the password in ${config.key_password_file} does not decrypt ${path}`,
      );
      break;
    case "unreadable":
      report("key_file", `${path} is not a private key sigil can read (PEM: PKCS#8, PKCS#1, SEC1)`);
  }
  return undefined;
}
