import { pemCertificates, pemPrivateKey } from "../../http/pem";
import { EXIT_USAGE, fail } from "../exit";
import { readFlagFile } from "./flags";

/** PEM texts for fetch's `tls` option: the CA(s) to trust, and a client certificate and key. */
export interface TlsFiles {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface TlsFlagPaths {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

/**
 * Reads and checks the TLS flags' files, or exits 2 naming the flag: fetch reports a bad file
 * only as a failed connection ("FailedToOpenSocket"), which sends an operator looking at the URL.
 */
export function readTlsFlags(paths: TlsFlagPaths): TlsFiles {
  const ca = paths.ca === undefined ? undefined : certificateFlag("ca-cert", paths.ca);
  const cert = paths.cert === undefined ? undefined : certificateFlag("client-cert", paths.cert);
  const key = paths.key === undefined ? undefined : readFlagFile("client-key", paths.key);
  if (key !== undefined && cert !== undefined) checkClientKey(key, cert, paths);
  return {
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
  };
}

function certificateFlag(flag: "ca-cert" | "client-cert", path: string): string {
  const text = readFlagFile(flag, path);
  const parsed = pemCertificates(text);
  if (parsed.ok) return text;
  if (parsed.reason === "invalid")
    fail(`--${flag}: certificate ${parsed.index + 1} in ${path} is not valid X.509`, EXIT_USAGE);
  const swapped = flag === "client-cert" && parsed.holdsPrivateKey;
  fail(
    `--${flag}: ${path} holds no PEM certificate${swapped ? " (it holds a private key: --client-cert and --client-key swapped?)" : ""}`,
    EXIT_USAGE,
  );
}

function checkClientKey(key: string, cert: string, paths: TlsFlagPaths): void {
  const parsed = pemPrivateKey(key);
  const path = paths.key;
  if (!parsed.ok) {
    const reason: Record<typeof parsed.reason, string> = {
      none: "holds no PEM private key",
      several: "holds more than one private key",
      encrypted: "is encrypted; give the operator CLI an unencrypted key file",
      wrong_password: "is encrypted",
      unreadable: "is not a private key sigil can read (PEM: PKCS#8, PKCS#1, SEC1)",
    };
    fail(`--client-key: ${path} ${reason[parsed.reason]}`, EXIT_USAGE);
  }
  const leaf = pemCertificates(cert);
  if (leaf.ok && leaf.certificates[0] && !leaf.certificates[0].checkPrivateKey(parsed.key))
    fail(`--client-key: ${path} is not the key of --client-cert ${paths.cert}`, EXIT_USAGE);
}

const UNTRUSTED_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
]);

export interface TlsContext {
  readonly https: boolean;
  readonly hostname: string;
  readonly tls: TlsFiles | undefined;
}

/** What to do about a failed connection when TLS is the likely cause; undefined otherwise. */
export function tlsFailureHint(code: string, context: TlsContext): string | undefined {
  if (!context.https)
    return code === "ECONNRESET"
      ? "the connection was closed: if the signer serves https (server.tls), use an https:// --signer-url"
      : undefined;
  if (UNTRUSTED_CODES.has(code))
    return context.tls?.ca === undefined
      ? "the signer's certificate is not trusted: pass --ca-cert with the CA that signed it"
      : "the signer's certificate is not signed by a CA in --ca-cert";
  if (code === "CERT_HAS_EXPIRED") return "the signer's certificate has expired";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return `the signer's certificate does not name ${context.hostname}: use a --signer-url host that it names`;
  if (code === "EPROTO" || code === "ECONNRESET")
    return context.tls?.cert === undefined
      ? "the signer may require a client certificate: pass --client-cert and --client-key"
      : "the signer may not accept this client certificate: is it signed by a CA in the signer's server.tls.client_ca_file?";
  return undefined;
}
