/**
 * The keystore cache (`key_sources.filesystem.cache`): the secrets of the filesystem keystores,
 * sealed under one key derived from all their passwords, so that a restart needs one KDF run
 * instead of one per keystore. See docs/keys.md, "Keystore cache", for the threat model.
 *
 * Keys. master = scrypt(manifest, salt), where the manifest is every distinct (EIP-2335
 * normalised) password of the configured keystores, sorted and length-prefixed, and the salt is
 * random per cache file. The scrypt cost is the standard keystore cost (n=2^18, r=8, p=1) or,
 * when a keystore uses a costlier scrypt, that keystore's: guessing passwords against the cache
 * is never cheaper than guessing them against the keystores. HKDF-SHA256 splits the master into
 * three keys:
 *   - check: HMAC over the file header; proves the current passwords are the ones it was made with;
 *   - id:    entry id = HMAC(keystore file SHA-256 ‖ password), so an entry only matches the exact
 *            keystore bytes *and* the password of the descriptor asking (a descriptor naming the
 *            right keystore with a wrong password still fails, as without a cache);
 *   - seal:  AES-256-GCM of the 32-byte secret, random 96-bit nonce, AAD = domain ‖ keystore
 *            file SHA-256 ‖ id ‖ pubkey.
 *
 * Invalidation. Another set of passwords gives another master: the check fails and every
 * keystore is decrypted again (full rebuild under a fresh salt). A changed, added or removed
 * keystore under unchanged passwords only changes its own entry: it is decrypted with the real KDF
 * and sealed under the same master, and entries no configured keystore used are dropped. The file
 * is rewritten (atomically, mode 0600) whenever its contents would change.
 *
 * While the signer runs (`keepOpen`), the Key Manager API's imports and deletes update the file:
 * an imported keystore whose password the master was made with (and whose KDF is no costlier than
 * the cache's) is sealed at once; a deleted key's entries are dropped. A keystore under a new
 * password cannot be added without every other password (the master would change): the next
 * start-up rebuilds the cache, as it would have anyway. Keeping the open cache's keys in memory
 * exposes nothing more than the secrets the signer already holds.
 *
 * Nothing in the file is trusted before it authenticates, and nothing about it is fatal: a
 * missing, corrupted, foreign or stale cache is logged and rebuilt; an entry that does not open is
 * decrypted again. A file at the path that is not a keystore cache (say, a mistyped path pointing
 * at the slashing database) is never overwritten: the cache is then off for this start.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from "node:crypto";
import type { Logger } from "../observability/log";
import { isJsonObject } from "../wire/json";
import {
  type KeystoreKdfCost,
  MAX_SCRYPT_MEMORY_BYTES,
  MAX_SCRYPT_N,
  MAX_SCRYPT_P,
  MAX_SCRYPT_R,
  scryptMemory,
} from "./keystore";
import { readCacheFile, writeFileAtomic } from "./persist";

export const CACHE_FORMAT = "sigil-keystore-cache";
export const CACHE_VERSION = 1;
/** About 300 bytes per key: room for far more keys than one signer holds. */
export const MAX_CACHE_BYTES = 256 * 1024 * 1024;
/** The EIP-2335 standard scrypt cost: the cache's KDF is never cheaper. */
export const CACHE_KDF_FLOOR: ScryptCost = { n: 2 ** 18, r: 8, p: 1 };

/** Every cache file starts with these bytes; anything else at the path is not ours to replace. */
const MARKER = `{"format":"${CACHE_FORMAT}"`;
const DOMAIN = `${CACHE_FORMAT}/${CACHE_VERSION}`;
const SALT_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_BYTES = 32;
const HASH_BYTES = 32;
const PUBKEY = /^0x[0-9a-f]{96}$/;

export interface ScryptCost {
  n: number;
  r: number;
  p: number;
}

/** One configured keystore, as the cache sees it. */
export interface CacheKeystore {
  /** SHA-256 of the keystore file's bytes. */
  keystoreHash: Uint8Array;
  /** The password as the KDF consumes it (normalizePassword). The caller wipes it afterwards. */
  password: Uint8Array;
  kdf: KeystoreKdfCost;
}

/** How the cache started: read and valid, or (re)built because it was missing or unusable. */
export type CacheState = "valid" | "new" | "rebuilt";

interface Entry {
  id: Buffer;
  pubkey: string;
  nonce: Buffer;
  sealed: Buffer;
}

interface CacheFile {
  kdf: ScryptCost & { salt: Buffer };
  check: Buffer;
  entries: Map<string, Entry>;
}

interface Keys {
  check: Buffer;
  id: Buffer;
  seal: Buffer;
  /** In memory only: tags the passwords of the master, to tell whether a new keystore fits. */
  password: Buffer;
}

export interface OpenCacheOptions {
  path: string;
  keystores: readonly CacheKeystore[];
  logger: Logger;
}

/** An unusable cache file; `reason` names the problem, never a secret. */
class CacheFileError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

const work = (c: ScryptCost) => c.n * c.r * c.p;
const memory = (c: ScryptCost) => scryptMemory(c.n, c.r, c.p);

/** True when `a` costs an attacker at least as much time and memory per guess as `b`. */
function atLeast(a: ScryptCost, b: ScryptCost): boolean {
  return work(a) >= work(b) && memory(a) >= memory(b);
}

/**
 * The cache's KDF: the floor, or the scrypt keystore with the most work per guess (n·r·p, then
 * memory) when that is more. PBKDF2 keystores do not raise it: scrypt at 256 MiB per guess is far
 * harder to attack in parallel than PBKDF2-SHA256 at the standard c=2^18 (docs/keys.md).
 */
export function cacheKdfCost(keystores: readonly CacheKeystore[]): ScryptCost {
  let chosen = CACHE_KDF_FLOOR;
  for (const { kdf } of keystores) {
    if (kdf.fn !== "scrypt") continue;
    const cost = { n: kdf.n, r: kdf.r, p: kdf.p };
    const more = work(cost) - work(chosen) || memory(cost) - memory(chosen);
    if (more > 0) chosen = cost;
  }
  return chosen;
}

/**
 * The distinct passwords, sorted and length-prefixed: the secret the master key comes from.
 * Distinct, so that adding a keystore under a password already in use keeps the master (and
 * every other entry) valid. Only buffers hold passwords here, and each is wiped.
 */
function manifest(keystores: readonly CacheKeystore[]): Buffer {
  const sorted = keystores.map(({ password }) => Buffer.from(password)).sort(Buffer.compare);
  const distinct = sorted.filter(
    (password, i) => i === 0 || !password.equals(sorted[i - 1] ?? password),
  );
  const parts: Buffer[] = [Buffer.from(`${DOMAIN} passwords\0`), u32(distinct.length)];
  for (const password of distinct) parts.push(u32(password.length), password);
  const result = Buffer.concat(parts);
  for (const password of sorted) password.fill(0);
  return result;
}

function u32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
}

function deriveMaster(secret: Buffer, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  const maxmem = memory(cost) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, 32, { N: cost.n, r: cost.r, p: cost.p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

function splitKeys(master: Buffer): Keys {
  const sub = (purpose: string) =>
    Buffer.from(hkdfSync("sha256", master, Buffer.alloc(0), `${DOMAIN} ${purpose}`, 32));
  return { check: sub("check"), id: sub("id"), seal: sub("seal"), password: sub("password") };
}

function passwordTag(keys: Keys, password: Uint8Array): string {
  return createHmac("sha256", keys.password).update(password).digest("hex");
}

/** The header as the check MAC covers it, rebuilt from parsed values (never from file text). */
function headerBytes(kdf: CacheFile["kdf"]): Buffer {
  const { n, r, p, salt } = kdf;
  return Buffer.from(
    JSON.stringify({
      format: CACHE_FORMAT,
      version: CACHE_VERSION,
      n,
      r,
      p,
      salt: salt.toString("hex"),
    }),
  );
}

function checkValue(keys: Keys, kdf: CacheFile["kdf"]): Buffer {
  return createHmac("sha256", keys.check).update(headerBytes(kdf)).digest();
}

function entryId(keys: Keys, keystore: CacheKeystore): Buffer {
  return createHmac("sha256", keys.id)
    .update(keystore.keystoreHash)
    .update(keystore.password)
    .digest();
}

function aad(keystore: CacheKeystore, id: Buffer, pubkey: string): Buffer {
  return Buffer.concat([
    Buffer.from(`${DOMAIN} entry\0`),
    keystore.keystoreHash,
    id,
    Buffer.from(pubkey.slice(2), "hex"),
  ]);
}

// --- File format ----------------------------------------------------------------------------

type Json = Record<string, unknown>;

function hexField(parent: Json, key: string, bytes: number, where: string): Buffer {
  const value = parent[key];
  if (typeof value !== "string" || value.length !== bytes * 2 || !/^[0-9a-f]*$/.test(value)) {
    throw new CacheFileError(`${where}.${key} is not ${bytes} bytes of lower-case hex`);
  }
  return Buffer.from(value, "hex");
}

function intField(parent: Json, key: string, max: number): number {
  const value = parent[key];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new CacheFileError(`kdf.${key} is not an integer from 1 to ${max}`);
  }
  return value;
}

/** Parses and validates the whole file; throws CacheFileError. Nothing here is secret. */
function parseCacheFile(text: string): CacheFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CacheFileError("not valid JSON (truncated or corrupted)");
  }
  if (!isJsonObject(json)) throw new CacheFileError("not a JSON object");
  if (json.format !== CACHE_FORMAT) throw new CacheFileError("not a keystore cache");
  if (json.version !== CACHE_VERSION) {
    throw new CacheFileError(
      `version ${String(json.version)} is unsupported (expected ${CACHE_VERSION})`,
    );
  }
  const kdf = json.kdf;
  if (!isJsonObject(kdf) || kdf.function !== "scrypt")
    throw new CacheFileError("kdf is not scrypt");
  const n = intField(kdf, "n", MAX_SCRYPT_N);
  const r = intField(kdf, "r", MAX_SCRYPT_R);
  const p = intField(kdf, "p", MAX_SCRYPT_P);
  // The same limits as a keystore's scrypt: a hostile cache costs no more than a hostile keystore.
  if ((n & (n - 1)) !== 0 || n < 2) throw new CacheFileError("kdf.n is not a power of two");
  if (memory({ n, r, p }) > MAX_SCRYPT_MEMORY_BYTES) {
    throw new CacheFileError("kdf needs more than 1 GiB");
  }
  const salt = hexField(kdf, "salt", SALT_BYTES, "kdf");
  const check = hexField(json, "check", HASH_BYTES, "cache");
  if (!Array.isArray(json.entries)) throw new CacheFileError("entries is not a list");
  const entries = new Map<string, Entry>();
  for (const [i, value] of json.entries.entries()) {
    const where = `entries[${i}]`;
    if (!isJsonObject(value)) throw new CacheFileError(`${where} is not an object`);
    const id = hexField(value, "id", HASH_BYTES, where);
    const pubkey = value.pubkey;
    if (typeof pubkey !== "string" || !PUBKEY.test(pubkey)) {
      throw new CacheFileError(`${where}.pubkey is not 0x and 48 bytes of lower-case hex`);
    }
    const nonce = hexField(value, "nonce", NONCE_BYTES, where);
    const sealed = hexField(value, "sealed", SECRET_BYTES + TAG_BYTES, where);
    const key = id.toString("hex");
    if (entries.has(key)) throw new CacheFileError(`${where} repeats an entry id`);
    entries.set(key, { id, pubkey, nonce, sealed });
  }
  return { kdf: { n, r, p, salt }, check, entries };
}

/** One entry per line, the marker first: readable with `jq`, recognisable before parsing. */
function serialize(kdf: CacheFile["kdf"], check: Buffer, entries: Iterable<Entry>): string {
  const header = JSON.stringify({
    format: CACHE_FORMAT,
    version: CACHE_VERSION,
    kdf: { function: "scrypt", n: kdf.n, r: kdf.r, p: kdf.p, salt: kdf.salt.toString("hex") },
    check: check.toString("hex"),
  });
  const lines = [...entries]
    .sort((a, b) => Buffer.compare(a.id, b.id))
    .map((e) =>
      JSON.stringify({
        id: e.id.toString("hex"),
        pubkey: e.pubkey,
        nonce: e.nonce.toString("hex"),
        sealed: e.sealed.toString("hex"),
      }),
    );
  return `${header.slice(0, -1)},"entries":[\n${lines.join(",\n")}\n]}\n`;
}

type Existing =
  | { kind: "missing" }
  | { kind: "foreign"; reason: string }
  | { kind: "invalid"; reason: string }
  | { kind: "parsed"; file: CacheFile; loose: boolean };

async function readExisting(path: string): Promise<Existing> {
  const read = await readCacheFile(path, MAX_CACHE_BYTES);
  if (read.kind !== "bytes") return read;
  const { bytes, loose } = read;
  // An empty file is what a crash before the first write could leave: ours to replace.
  if (bytes.length > 0 && !bytes.subarray(0, MARKER.length).equals(Buffer.from(MARKER))) {
    return { kind: "foreign", reason: "the file there is not a keystore cache" };
  }
  try {
    return { kind: "parsed", file: parseCacheFile(bytes.toString("utf8")), loose };
  } catch (err) {
    if (err instanceof CacheFileError) return { kind: "invalid", reason: err.reason };
    throw err;
  }
}

// --- The cache --------------------------------------------------------------------------------

/** A cached secret; the caller imports it and zeroes `secret`. */
export interface CachedSecret {
  secret: Uint8Array;
  /** 0x + 96 lower-case hex digits, as sealed with the secret. */
  pubkey: string;
}

/**
 * Opens the cache at `path` for this set of keystores. Returns undefined when the cache cannot be
 * used at all this time (no keystores, or the path holds something else); that is logged.
 */
export async function openKeystoreCache(
  options: OpenCacheOptions,
): Promise<KeystoreCache | undefined> {
  const { path, keystores, logger } = options;
  if (keystores.length === 0) return undefined;
  const existing = await readExisting(path);
  if (existing.kind === "foreign") {
    logger.warn("keystore cache not used: path left alone", { path, reason: existing.reason });
    return undefined;
  }
  const secret = manifest(keystores);
  try {
    const wanted = cacheKdfCost(keystores);
    if (existing.kind === "parsed") {
      const { file } = existing;
      if (!atLeast(file.kdf, wanted)) {
        logger.warn("keystore cache ignored, rebuilding", {
          path,
          reason: "its KDF is cheaper than a configured keystore's",
        });
      } else {
        const keys = await keysFor(secret, file.kdf);
        if (timingSafeEqual(checkValue(keys, file.kdf), file.check)) {
          return new KeystoreCache(path, logger, "valid", file, keys, existing.loose, keystores);
        }
        wipeKeys(keys);
        logger.warn("keystore cache ignored, rebuilding", {
          path,
          reason:
            "it does not open with the current passwords (a password changed, or the file is corrupted or from another key set)",
        });
      }
    } else if (existing.kind === "invalid") {
      logger.warn("keystore cache ignored, rebuilding", { path, reason: existing.reason });
    } else {
      logger.info("keystore cache not found, building it", { path });
    }
    const kdf = { ...wanted, salt: randomBytes(SALT_BYTES) };
    const keys = await keysFor(secret, kdf);
    const file: CacheFile = { kdf, check: checkValue(keys, kdf), entries: new Map() };
    const state = existing.kind === "missing" ? "new" : "rebuilt";
    return new KeystoreCache(path, logger, state, file, keys, true, keystores);
  } finally {
    secret.fill(0);
  }
}

async function keysFor(secret: Buffer, kdf: CacheFile["kdf"]): Promise<Keys> {
  const master = await deriveMaster(secret, kdf.salt, kdf);
  try {
    return splitKeys(master);
  } finally {
    master.fill(0);
  }
}

function wipeKeys(keys: Keys): void {
  keys.check.fill(0);
  keys.id.fill(0);
  keys.seal.fill(0);
  keys.password.fill(0);
}

/** What `add` did with an imported keystore. */
export type CacheAddResult =
  | "sealed"
  /** Its password is not one the master was made with: the next start-up rebuilds the cache. */
  | "new_password"
  /** Its scrypt costs more than the cache's: the next start-up rebuilds the cache. */
  | "costlier_kdf";

export class KeystoreCache {
  /** Entries to write: those a configured keystore used or sealed during this load. */
  readonly #kept = new Map<string, Entry>();
  /** Ids of stored entries that opened: `keep` may reuse their sealed bytes unchanged. */
  readonly #opened = new Set<string>();
  /** Tags (passwordTag) of the passwords the master was made with. */
  readonly #passwords: ReadonlySet<string>;
  #rejected = 0;
  #hits = 0;
  #sealed = 0;
  /** Set by `finish`: from then on `add` and `drop` change `#kept` and `flush` writes it. */
  #loaded = false;
  #dirty = false;
  #closed = false;

  constructor(
    readonly path: string,
    private readonly logger: Logger,
    readonly state: CacheState,
    private readonly file: CacheFile,
    private readonly keys: Keys,
    /** True when the file must be written whatever this load finds (new, rebuilt, loose mode). */
    private readonly mustWrite: boolean,
    keystores: readonly CacheKeystore[],
  ) {
    this.#passwords = new Set(keystores.map((k) => passwordTag(keys, k.password)));
  }

  /** Keystores served from the cache, and keystores decrypted and sealed, so far. */
  get stats(): { fromCache: number; sealed: number; rejected: number } {
    return { fromCache: this.#hits, sealed: this.#sealed, rejected: this.#rejected };
  }

  /**
   * The secret sealed for this keystore and password, or undefined when there is none or it does
   * not open (then the caller decrypts the keystore and calls `keep`).
   */
  lookup(keystore: CacheKeystore): CachedSecret | undefined {
    const id = entryId(this.keys, keystore);
    const key = id.toString("hex");
    const entry = this.file.entries.get(key);
    if (!entry) return undefined;
    const decipher = createDecipheriv("aes-256-gcm", this.keys.seal, entry.nonce);
    decipher.setAAD(aad(keystore, id, entry.pubkey));
    decipher.setAuthTag(entry.sealed.subarray(SECRET_BYTES));
    const parts: Buffer[] = [];
    try {
      parts.push(decipher.update(entry.sealed.subarray(0, SECRET_BYTES)));
      parts.push(decipher.final());
    } catch {
      for (const part of parts) part.fill(0);
      this.#rejected++;
      return undefined;
    }
    const secret = new Uint8Array(SECRET_BYTES);
    let offset = 0;
    for (const part of parts) {
      secret.set(part, offset);
      offset += part.length;
      part.fill(0);
    }
    this.#opened.add(key);
    this.#hits++;
    return { secret, pubkey: entry.pubkey };
  }

  /**
   * Records that this keystore loaded, with this secret and pubkey (checked by the caller): its
   * entry is kept, or sealed anew when the cache had none that opened. The caller still owns (and
   * zeroes) `secret`.
   */
  keep(keystore: CacheKeystore, pubkey: string, secret: Uint8Array): void {
    const id = entryId(this.keys, keystore);
    const key = id.toString("hex");
    const stored = this.file.entries.get(key);
    if (stored && this.#opened.has(key) && stored.pubkey === pubkey) {
      this.#kept.set(key, stored);
      return;
    }
    this.#kept.set(key, this.#seal(keystore, id, pubkey, secret));
    this.#sealed++;
  }

  /** True when writing would change the file (or it must be rewritten anyway). */
  get changed(): boolean {
    if (this.mustWrite || this.#sealed > 0) return true;
    if (this.#kept.size !== this.file.entries.size) return true;
    for (const key of this.file.entries.keys()) if (!this.#kept.has(key)) return true;
    return false;
  }

  /**
   * Ends the load: writes the kept entries when the file would change (atomically, mode 0600).
   * Unless `keepOpen`, the keys are wiped: nothing more can be read or sealed. A failed write is
   * logged, not thrown: the keys are loaded either way.
   */
  finish(options: { keepOpen?: boolean } = {}): void {
    try {
      if (this.#rejected > 0) {
        this.logger.warn("keystore cache entries did not open; those keystores were decrypted", {
          path: this.path,
          entries: this.#rejected,
        });
      }
      this.#loaded = true;
      if (this.changed) this.#write();
    } finally {
      if (!options.keepOpen) this.close();
    }
  }

  /**
   * Seals a keystore imported while the signer runs, when the master covers it; `flush` writes
   * it. The caller checked `secret` against the keystore and still owns (and zeroes) it.
   */
  add(keystore: CacheKeystore, pubkey: string, secret: Uint8Array): CacheAddResult {
    this.#assertOpen();
    if (!this.#passwords.has(passwordTag(this.keys, keystore.password))) return "new_password";
    if (!atLeast(this.file.kdf, cacheKdfCost([keystore]))) return "costlier_kdf";
    const id = entryId(this.keys, keystore);
    this.#kept.set(id.toString("hex"), this.#seal(keystore, id, pubkey, secret));
    this.#dirty = true;
    return "sealed";
  }

  /** Drops every entry sealed for this pubkey (a deleted key); `flush` writes the change. */
  drop(pubkey: string): void {
    this.#assertOpen();
    for (const [key, entry] of this.#kept) {
      if (entry.pubkey !== pubkey) continue;
      this.#kept.delete(key);
      this.#dirty = true;
    }
  }

  /** Writes what `add` and `drop` changed since the last write (logged, not thrown, on failure). */
  flush(): void {
    if (this.#closed || !this.#dirty) return;
    this.#write();
  }

  /** Wipes the keys; the cache can no longer be read or changed. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    wipeKeys(this.keys);
  }

  #assertOpen(): void {
    if (!this.#loaded || this.#closed)
      throw new Error("the keystore cache is not open for changes");
  }

  #seal(keystore: CacheKeystore, id: Buffer, pubkey: string, secret: Uint8Array): Entry {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.keys.seal, nonce);
    cipher.setAAD(aad(keystore, id, pubkey));
    const sealed = Buffer.concat([cipher.update(secret), cipher.final(), cipher.getAuthTag()]);
    return { id, pubkey, nonce, sealed };
  }

  #write(): void {
    this.#dirty = false;
    try {
      writeFileAtomic(this.path, serialize(this.file.kdf, this.file.check, this.#kept.values()));
    } catch (err) {
      // Written again with the next change; a start-up finds the older file and repairs it.
      this.#dirty = true;
      const code = (err as { code?: unknown }).code;
      this.logger.warn("keystore cache not written", {
        path: this.path,
        reason: typeof code === "string" ? code : err instanceof Error ? err.message : "error",
      });
    }
  }
}
