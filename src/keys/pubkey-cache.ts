/**
 * The raw keys' public-key cache: `<key_sources.filesystem.cache.path>.pubkeys`, next to the
 * keystore cache and enabled with it (docs/keys.md, "Public-key cache").
 *
 * Deriving a raw key's public key is the whole cost of importing it: about 0.1 ms of CPU with
 * blst, 10 s of CPU for 100,000 keys at every start-up. The cache keeps each raw key's public key,
 * so a restart imports the secret without deriving it; the BLS backend then checks the public key
 * against the secret before the key's first signature (`importClaimedKey`), and a key whose
 * public key was wrong never signs.
 *
 * The file holds no secret. After a header line, one record of RECORD_BYTES per key:
 *   id (16 bytes)     = HMAC-SHA256(secret, DOMAIN ‖ "id"), truncated: finds the entry of a secret;
 *   pubkey (48 bytes) = the compressed public key;
 *   tag (16 bytes)    = HMAC-SHA256(secret, DOMAIN ‖ "pubkey" ‖ pubkey), truncated.
 * Both are keyed by the secret itself, so only someone who holds the secret can make an entry
 * that a load accepts: a corrupted or edited entry, or one copied from another key, fails its tag
 * and the key's public key is derived as without a cache. The check before the first signature is
 * the second line: it also holds against an entry made with the secret (a bug, or someone who
 * could sign with that key anyway).
 *
 * Nothing about the file is fatal: a missing, truncated or corrupted file is logged and rebuilt; a
 * file at the path that is not a public-key cache is left alone and the cache is off for this
 * start. The file is rewritten atomically (mode 0600) when a load changes what it would hold: a
 * start-up keeps exactly the entries of the raw keys it loaded, a reload adds what it derived.
 */
import type { Logger } from "../observability/log";
import { readCacheFile, writeFileAtomic } from "./persist";

const DOMAIN = "sigil-pubkey-cache/1";
const HEADER = Buffer.from(`${DOMAIN}\n`);
const ID_BYTES = 16;
const PUBKEY_BYTES = 48;
const TAG_BYTES = 16;
export const RECORD_BYTES = ID_BYTES + PUBKEY_BYTES + TAG_BYTES;
/** 80 bytes per key: room for ten million keys. */
const MAX_FILE_BYTES = HEADER.length + 10_000_000 * RECORD_BYTES;
const ID_INPUT = Buffer.from(`${DOMAIN}/id`);
const TAG_INPUT = Buffer.from(`${DOMAIN}/pubkey`);

export type PubkeyCacheState = "valid" | "new" | "rebuilt";

function hmac(secret: Uint8Array, ...parts: Uint8Array[]): Uint8Array {
  const mac = new Bun.CryptoHasher("sha256", secret);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * The id of a secret's entry (how `lookup` finds it): the first ID_BYTES of the result. Whole
 * MACs are returned and compared on their first bytes: `subarray` of a small typed array makes
 * the runtime give it a buffer of its own, which cost more than the MAC.
 */
function idOf(secret: Uint8Array): Uint8Array {
  return hmac(secret, ID_INPUT);
}

/** The tag of a secret's entry: the first TAG_BYTES of the result. */
function tagOf(secret: Uint8Array, pubkey: Uint8Array): Uint8Array {
  return hmac(secret, TAG_INPUT, pubkey);
}

function copyInto(target: Uint8Array, at: number, source: Uint8Array, length: number): void {
  for (let i = 0; i < length; i++) target[at + i] = source[i] as number;
}

/** The first 6 bytes of an id, as a number: the lookup's hash key (never trusted alone). */
function shortId(bytes: Uint8Array, at: number): number {
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + (bytes[at + i] as number);
  return value;
}

/** Whether `a` at `at` holds the first `length` bytes of `b`. */
function equalAt(a: Uint8Array, at: number, b: Uint8Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (a[at + i] !== b[i]) return false;
  return true;
}

/** Whether the records at `a` and `b` have the same id. */
function sameId(records: Uint8Array, a: number, b: number): boolean {
  for (let i = 0; i < ID_BYTES; i++) if (records[a + i] !== records[b + i]) return false;
  return true;
}

type Existing =
  | { kind: "missing" }
  | { kind: "foreign"; reason: string }
  | { kind: "invalid"; reason: string }
  | { kind: "records"; records: Uint8Array; loose: boolean };

async function readExisting(path: string): Promise<Existing> {
  const read = await readCacheFile(path, MAX_FILE_BYTES);
  if (read.kind !== "bytes") return read;
  const { bytes, loose } = read;
  // An empty file is what a crash before the first write could leave: ours to replace.
  if (bytes.length === 0) return { kind: "invalid", reason: "the file is empty" };
  if (!bytes.subarray(0, HEADER.length).equals(HEADER)) {
    return { kind: "foreign", reason: "the file there is not a public-key cache" };
  }
  if ((bytes.length - HEADER.length) % RECORD_BYTES !== 0) {
    return { kind: "invalid", reason: "the file is truncated or corrupted" };
  }
  return { kind: "records", records: bytes.subarray(HEADER.length), loose };
}

export class PubkeyCache {
  /** The records read or last written (without the header). */
  #records: Uint8Array = new Uint8Array(0);
  /** Short id → offset of the record in `#records`; -1 when two records share it. */
  #index = new Map<number, number>();
  /** Per record of `#records`: whether this load used it (a start-up keeps only those). */
  #used: Uint8Array = new Uint8Array(0);
  /** Records made by `put` since the last write, back to back (one buffer, grown by doubling). */
  #added = new Uint8Array(0);
  #addedCount = 0;
  #dirty: boolean;
  #hits = 0;
  #rejected = 0;

  private constructor(
    readonly path: string,
    private readonly logger: Logger,
    readonly state: PubkeyCacheState,
    records: Uint8Array,
    /** Write the file even if nothing changes (rebuilt, or a mode to fix). */
    mustWrite: boolean,
  ) {
    this.#dirty = mustWrite;
    this.#reset(records);
  }

  /**
   * Opens the cache at `path`: its records when it is one, empty when it is missing or unusable
   * (logged; it is rebuilt), undefined when the path holds something else (logged; left alone).
   */
  static async open(path: string, logger: Logger): Promise<PubkeyCache | undefined> {
    const existing = await readExisting(path);
    switch (existing.kind) {
      case "foreign":
        logger.warn("public-key cache not used: path left alone", {
          path,
          reason: existing.reason,
        });
        return undefined;
      case "invalid":
        logger.warn("public-key cache ignored, rebuilding", { path, reason: existing.reason });
        return new PubkeyCache(path, logger, "rebuilt", new Uint8Array(0), true);
      case "missing":
        return new PubkeyCache(path, logger, "new", new Uint8Array(0), false);
      case "records":
        // A looser mode is fixed by writing the file again.
        return new PubkeyCache(path, logger, "valid", existing.records, existing.loose);
    }
  }

  /**
   * The cached public key of this secret (a copy), when its entry is there and its tag proves
   * it was made with this secret; undefined otherwise (the caller derives the public key).
   */
  lookup(secret: Uint8Array): Uint8Array | undefined {
    const id = idOf(secret);
    const at = this.#index.get(shortId(id, 0));
    if (at === undefined || at < 0) return undefined;
    const records = this.#records;
    if (!equalAt(records, at, id, ID_BYTES)) return undefined;
    const pubkey = records.slice(at + ID_BYTES, at + ID_BYTES + PUBKEY_BYTES);
    if (!equalAt(records, at + ID_BYTES + PUBKEY_BYTES, tagOf(secret, pubkey), TAG_BYTES)) {
      this.#rejected++;
      return undefined;
    }
    this.#used[at / RECORD_BYTES] = 1;
    this.#hits++;
    return pubkey;
  }

  /** Records the public key a load derived for this secret; `flush` writes it. */
  put(secret: Uint8Array, pubkey: Uint8Array): void {
    const at = this.#addedCount * RECORD_BYTES;
    if (at + RECORD_BYTES > this.#added.length) {
      const grown = new Uint8Array(Math.max(64 * RECORD_BYTES, this.#added.length * 2));
      grown.set(this.#added);
      this.#added = grown;
    }
    const added = this.#added;
    copyInto(added, at, idOf(secret), ID_BYTES);
    added.set(pubkey, at + ID_BYTES);
    copyInto(added, at + ID_BYTES + PUBKEY_BYTES, tagOf(secret, pubkey), TAG_BYTES);
    this.#addedCount++;
    this.#dirty = true;
  }

  /** This load's figures so far: keys served, public keys derived, entries whose tag failed. */
  get stats(): { fromCache: number; derived: number; rejected: number } {
    return { fromCache: this.#hits, derived: this.#addedCount, rejected: this.#rejected };
  }

  /**
   * Ends a load: writes the file when the load changed what it holds, and starts the next load's
   * figures. `prune` (a start-up, which read every raw key): keep only the entries this load used
   * or added; otherwise (a reload, which skips the unchanged keys) keep every entry and add the
   * new ones. A failed write is logged, never thrown: the next load tries again.
   */
  flush(prune: boolean): void {
    const records = this.#records;
    const used = this.#used;
    let kept = used.length;
    if (prune) for (let i = 0; i < used.length; i++) kept -= used[i] === 0 ? 1 : 0;
    const dropped = used.length - kept;
    this.#hits = 0;
    this.#rejected = 0;
    if (!this.#dirty && dropped === 0) {
      used.fill(0);
      return;
    }
    const added = this.#addedCount * RECORD_BYTES;
    const content = Buffer.alloc(HEADER.length + kept * RECORD_BYTES + added);
    content.set(HEADER);
    let at = HEADER.length;
    if (dropped === 0) {
      content.set(records, at);
      at += records.length;
    } else {
      for (let i = 0; i < used.length; i++) {
        if (used[i] === 0) continue;
        content.set(records.subarray(i * RECORD_BYTES, (i + 1) * RECORD_BYTES), at);
        at += RECORD_BYTES;
      }
    }
    content.set(this.#added.subarray(0, added), at);
    try {
      writeFileAtomic(this.path, content);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      this.logger.warn("public-key cache not written", {
        path: this.path,
        reason: typeof code === "string" ? code : err instanceof Error ? err.message : "error",
      });
      return;
    }
    this.#dirty = false;
    this.#added = new Uint8Array(0);
    this.#addedCount = 0;
    this.#reset(content.subarray(HEADER.length));
  }

  #reset(records: Uint8Array): void {
    this.#records = records;
    this.#used = new Uint8Array(records.length / RECORD_BYTES);
    this.#index = new Map();
    for (let at = 0; at < records.length; at += RECORD_BYTES) {
      const key = shortId(records, at);
      const first = this.#index.get(key);
      if (first === undefined) this.#index.set(key, at);
      // The same secret twice (two descriptors of one key): the first entry serves both.
      else if (first >= 0 && !sameId(records, first, at)) this.#index.set(key, -1);
    }
  }
}
