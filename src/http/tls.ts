import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { TLSOptions } from "bun";
import { type ConfigProblem, problem } from "../config/problems";
import type { Config } from "../config/schema";

export type TlsConfig = NonNullable<Config["server"]["tls"]>;

/** The signing listener's TLS material, read and checked; `options` go to Bun.serve as they are. */
export interface ServerTls {
  readonly options: TLSOptions;
  /** Subject of the listener's certificate, for the start-up log. */
  readonly subject: string;
  readonly notAfter: Date;
  /** Clients must present a certificate signed by a CA of `client_ca_file`. */
  readonly mutual: boolean;
}

export type TlsLoadResult = { ok: true; tls: ServerTls } | { ok: false; problems: ConfigProblem[] };

const OPTION = "server.tls";
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
const PRIVATE_KEY_LABEL = /^(?:(?:RSA|EC|ENCRYPTED) )?PRIVATE KEY$/;

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
  if (clientCaText !== undefined) certificates(clientCaText, "client_ca_file", config, report);
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
      },
      subject: leaf.subject.replaceAll("\n", ", "),
      notAfter: new Date(leaf.validTo),
      mutual,
    },
  };
}

/** Every certificate of a PEM file, or none after reporting why. */
function certificates(
  text: string,
  option: "cert_file" | "client_ca_file",
  config: TlsConfig,
  report: Report,
): X509Certificate[] {
  const path = config[option];
  const blocks = pemBlocks(text);
  const certs = blocks.filter((block) => block.label === "CERTIFICATE");
  if (certs.length === 0) {
    const swapped =
      option === "cert_file" && blocks.some((block) => PRIVATE_KEY_LABEL.test(block.label));
    report(
      option,
      `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)${swapped ? "; it holds a private key: are cert_file and key_file swapped?" : ""}`,
    );
    return [];
  }
  const parsed: X509Certificate[] = [];
  for (const [i, block] of certs.entries()) {
    try {
      parsed.push(new X509Certificate(block.text));
    } catch {
      report(option, `certificate ${i + 1} in ${path} is not a valid X.509 certificate`);
      return [];
    }
  }
  return parsed;
}

function privateKey(
  text: string,
  passphrase: string | undefined,
  config: TlsConfig,
  report: Report,
): KeyObject | undefined {
  const path = config.key_file;
  const blocks = pemBlocks(text);
  const keys = blocks.filter((block) => PRIVATE_KEY_LABEL.test(block.label));
  if (keys.length > 1) {
    report("key_file", `${path} holds ${keys.length} private keys; it must hold only cert_file's`);
    return undefined;
  }
  if (keys.length === 0) {
    const swapped = blocks.some((block) => block.label === "CERTIFICATE");
    report(
      "key_file",
      `${path} holds no PEM private key (-----BEGIN PRIVATE KEY-----)${swapped ? "; it holds a certificate: are cert_file and key_file swapped?" : ""}`,
    );
    return undefined;
  }
  try {
    return createPrivateKey(passphrase === undefined ? text : { key: text, passphrase });
  } catch (error) {
    // Only the library's error code is used: it is enough to explain, and quotes nothing.
    const code = (error as { code?: unknown }).code;
    if (code === "ERR_MISSING_PASSPHRASE")
      report("key_file", `${path} is encrypted: set ${OPTION}.key_password_file`);
    else if (passphrase !== undefined && code === "ERR_OSSL_BAD_DECRYPT")
      report(
        "key_password_file",
        `the password in ${config.key_password_file} does not decrypt ${path}`,
      );
    else
      report("key_file", `${path} is not a private key sigil can read (PEM: PKCS#8, PKCS#1, SEC1)`);
    return undefined;
  }
}

function pemBlocks(text: string): { label: string; text: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((match) => ({
    label: match[1] ?? "",
    text: match[0],
  }));
}

function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES") return "permission denied";
  if (code === "EISDIR") return "is a directory";
  return code ?? "unreadable";
}
