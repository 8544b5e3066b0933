/**
 * Wrapping an unseal share to an operator's age key (https://age-encryption.org/v1), for
 * operators without a KMS key: the share is encrypted to their X25519 recipient (`age1…`) and
 * only their identity (`AGE-SECRET-KEY-1…`, kept off the server) can unwrap it.
 *
 * age has no associated data, so the wrapped share is not bound to a seal or operator here;
 * the share digest checked on arrival covers that binding.
 *
 * Messages never contain an identity, share bytes or unvalidated input; a valid recipient is
 * public and may appear.
 */
import { Decrypter, Encrypter, type Identity, type Stanza } from "age-encryption";
import { WrapError } from "./types";

/** bech32 data characters (BIP-173); age recipients are lowercase. */
const BECH32_LOWER = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
/** A 32-byte X25519 key is 52 bech32 characters, plus a 6-character checksum. */
const X25519_RECIPIENT = new RegExp(`^age1[${BECH32_LOWER}]{58}$`);
const X25519_IDENTITY_PREFIX = "AGE-SECRET-KEY-1";
const HYBRID_IDENTITY_PREFIX = "AGE-SECRET-KEY-PQ-1";
const PLUGIN_IDENTITY_PREFIX = "AGE-PLUGIN-";
/** Any age secret key, of any type, starts with this; it must never be taken for a recipient. */
const SECRET_KEY_MARKER = "AGE-SECRET-KEY-";
/** The first line of every binary age file. */
const AGE_MAGIC = new TextEncoder().encode("age-encryption.org/v1\n");
const UTF8_BOM = "\uFEFF";

/** Whether `text` holds an age secret key, anywhere: it is then refused without being echoed. */
export function containsAgeSecretKey(text: string): boolean {
  return text.toUpperCase().includes(SECRET_KEY_MARKER);
}

/**
 * Whether `text` is a valid native X25519 age recipient (`age1…`, checksum included).
 * Post-quantum (`age1pq1…`) and tag recipients are not accepted: the character set excludes
 * their `1` separator, and identities files are parsed for X25519 identities only.
 */
export function isAgeRecipient(text: string): boolean {
  if (typeof text !== "string" || !X25519_RECIPIENT.test(text)) return false;
  try {
    // The library checks the bech32 checksum and the key length.
    new Encrypter().addRecipient(text);
    return true;
  } catch {
    return false;
  }
}

/** Encrypts one share to `recipient`; the result is a binary age file. */
export async function wrapWithAge(recipient: string, share: Uint8Array): Promise<Uint8Array> {
  if (typeof recipient === "string" && containsAgeSecretKey(recipient)) {
    throw new WrapError(
      "an age secret key was given where a recipient belongs; give its public age1… recipient",
    );
  }
  if (!isAgeRecipient(recipient)) {
    throw new WrapError("the recipient is not a valid age X25519 recipient (age1…)");
  }
  if (!(share instanceof Uint8Array) || share.length === 0) {
    throw new WrapError("there is no share to wrap");
  }
  const encrypter = new Encrypter();
  encrypter.addRecipient(recipient);
  try {
    return await encrypter.encrypt(share);
  } catch {
    throw new WrapError(`could not encrypt the share to age recipient ${recipient}`);
  }
}

/** What an unwrap failure message can name: where the identities came from, whom it was for. */
export interface AgeUnwrapHint {
  /** The recipient the share was wrapped for, from the seal's wrap spec. */
  readonly recipient?: string;
  /** The identity file the identities were read from. */
  readonly identityPath?: string;
}

/**
 * Decrypts a wrapped share with any of `identities`. Failures are told apart: not an age file,
 * no identity matches (the usual mistake: the wrong file), or a matching identity but a
 * corrupted file.
 */
export async function unwrapWithAge(
  identities: readonly string[],
  wrapped: Uint8Array,
  hint: AgeUnwrapHint = {},
): Promise<Uint8Array> {
  const source = hint.identityPath === undefined ? "given" : `in ${hint.identityPath}`;
  if (!Array.isArray(identities) || identities.length === 0) {
    throw new WrapError(`no age identity ${source} to unwrap the share with`);
  }
  if (!(wrapped instanceof Uint8Array) || !startsWith(wrapped, AGE_MAGIC)) {
    throw new WrapError("the wrapped share is not an age-encrypted file");
  }
  const decrypter = new Decrypter();
  // Identities are tried in order, so a probe first learns the header parsed, and a probe
  // last learns that none of the real identities matched; the library's messages are not API.
  const reached = { header: false, noMatch: false };
  decrypter.addIdentity(probe(() => (reached.header = true)));
  for (const [i, identity] of identities.entries()) {
    try {
      decrypter.addIdentity(identity);
    } catch {
      throw new WrapError(`age identity ${i + 1} ${source} is not a valid age identity`);
    }
  }
  decrypter.addIdentity(probe(() => (reached.noMatch = true)));
  try {
    return await decrypter.decrypt(wrapped);
  } catch {
    if (!reached.header) throw new WrapError("the wrapped share is a malformed age file");
    if (reached.noMatch) {
      const noun = identities.length === 1 ? "identity" : "identities";
      const target = hint.recipient === undefined ? "" : `: it was wrapped for ${hint.recipient}`;
      throw new WrapError(`the age ${noun} ${source} cannot decrypt this share${target}`);
    }
    throw new WrapError("the wrapped share is corrupted: its age authentication failed");
  }
}

/**
 * Parses an age identity file (what `age-keygen` writes): `AGE-SECRET-KEY-1…` lines, `#`
 * comments and blank lines. Only X25519 identities are accepted, since shares are wrapped to
 * X25519 recipients; other lines are refused by number, never echoed.
 */
export function parseAgeIdentityFile(text: string, path: string): string[] {
  const identities: string[] = [];
  const lines = text.replace(UTF8_BOM, "").split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const where = `line ${i + 1} of ${path}`;
    if (line.startsWith(HYBRID_IDENTITY_PREFIX)) {
      throw new WrapError(
        `${where} is a post-quantum age identity; unseal shares are wrapped to X25519 keys (AGE-SECRET-KEY-1…)`,
      );
    }
    if (line.startsWith(PLUGIN_IDENTITY_PREFIX)) {
      throw new WrapError(`${where} is an age plugin identity, which sigil does not support`);
    }
    if (line.toLowerCase().startsWith("age1")) {
      throw new WrapError(
        `${where} is an age recipient (a public key), not an identity; the identity file holds the AGE-SECRET-KEY-1… line`,
      );
    }
    if (!line.startsWith(X25519_IDENTITY_PREFIX)) {
      throw new WrapError(
        `${where} is not an age identity (expected AGE-SECRET-KEY-1…, a # comment or a blank line)`,
      );
    }
    if (!isValidIdentity(line)) {
      throw new WrapError(
        `${where} looks like an age identity but is damaged (bad checksum or length)`,
      );
    }
    identities.push(line);
  }
  if (identities.length === 0) {
    throw new WrapError(`${path} holds no age identity (AGE-SECRET-KEY-1… line)`);
  }
  return identities;
}

function isValidIdentity(line: string): boolean {
  try {
    // The library checks the bech32 checksum and the key length on construction.
    new Decrypter().addIdentity(line);
    return true;
  } catch {
    return false;
  }
}

/** An identity that never matches and only records that it was asked. */
function probe(onCall: () => void): Identity {
  return {
    unwrapFileKey(_stanzas: Stanza[]): null {
      onCall();
      return null;
    },
  };
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, i) => bytes[i] === byte);
}
