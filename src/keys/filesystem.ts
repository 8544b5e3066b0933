/**
 * The filesystem key source: every `*.yaml` / `*.yml` descriptor directly inside each configured
 * directory (not recursive) is loaded; see descriptor.ts for the format.
 *
 * Nothing here is fatal. Each problem (missing directory, unreadable or malformed file, wrong
 * password, duplicate key, …) is logged at warn with `file` and `reason` and returned in
 * `failures`; every other key still loads.
 *
 * Two phases. First every descriptor, keystore file and password file is read (raw keys are
 * imported then, in batches: the worker pool derives their public keys in its workers while the
 * main thread goes on reading); then the keystores are unlocked. Reading first lets the keystore
 * cache (keystore-cache.ts), when configured, derive its key from every password before anything
 * is decrypted; a keystore the cache holds then needs no KDF at all.
 *
 * Concurrency: descriptor reads run at most `rawConcurrency` at once, keystore reads at most
 * `keystoreConcurrency`; raw keys go to the BLS backend RAW_IMPORT_BATCH at a time. KDFs run at
 * most min(`keystoreConcurrency`, cores) at once: they run on the runtime's thread pool (off the
 * event loop), which Bun sizes to the cores unless UV_THREADPOOL_SIZE says otherwise at launch.
 * More KDFs than cores at once gain nothing and cost 256 MiB each at the standard scrypt cost,
 * which is memory-bound: 16 keystores with UV_THREADPOOL_SIZE=16 on 2 cores took twice the CPU
 * time and 4.1 GiB instead of 0.57 GiB. So the loader never asks for more.
 *
 * Results are deterministic whatever the timing: keys and failures come back in configuration
 * order (directory, then file name, then document), and of two descriptors with the same
 * public key the first in that order wins.
 */
import { createHash, randomBytes } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import {
  type BlsBackend,
  type BlsImportResult,
  type BlsSecretKey,
  importSecretKeys,
} from "../bls/backend";
import type { Logger } from "../observability/log";
import {
  type DescriptorDocument,
  DescriptorError,
  ioProblem,
  type KeystoreDescriptor,
  parseDescriptorFile,
  readBoundedFile,
  readBoundedFileSync,
  readPasswordFile,
} from "./descriptor";
import { createLooseModeReport } from "./file-mode";
import {
  decryptKeystore,
  KeystoreError,
  type KeystoreKdfCost,
  keystoreKdfCost,
  normalizePassword,
  verifyKeystorePubkey,
} from "./keystore";
import { type CacheKeystore, type KeystoreCache, openKeystoreCache } from "./keystore-cache";
import type { PubkeyCache } from "./pubkey-cache";
import { createSemaphore } from "./semaphore";

/** Why a keystore decrypted while the signer runs stays out of the cache until a rebuild. */
export const NOT_CACHED = {
  new_password: "its password is not one the cache was made with",
  costlier_kdf: "its scrypt costs more than the cache's",
} as const;

/** Descriptors hold one key each, or a few thousand as multi-document YAML: 16 MiB is plenty. */
export const MAX_DESCRIPTOR_BYTES = 16 * 1024 * 1024;
/** An EIP-2335 keystore is about 1 KiB. */
export const MAX_KEYSTORE_BYTES = 1024 * 1024;

export interface FilesystemKey {
  /** 0x + 96 lower-case hex digits. */
  pubkey: string;
  key: BlsSecretKey;
  /** Path of the descriptor the key came from. */
  file: string;
  /** Identifies the descriptor document and what it points at, as read (see `reuse`). */
  fingerprint: string;
}

/** A key whose descriptor is unchanged since the load that `reuse` remembers: not opened again. */
export interface ReusedKey {
  pubkey: string;
  file: string;
  fingerprint: string;
}

export interface FilesystemLoadFailure {
  /** The descriptor (or, when a directory cannot be read, the directory). */
  file: string;
  /** Why it was skipped; never contains a secret. */
  reason: string;
  /** For a duplicate: the pubkey another descriptor already loaded. */
  pubkey?: string;
}

export interface FilesystemLoadResult {
  keys: FilesystemKey[];
  /** Keys `reuse` kept (none without it). */
  reused: ReusedKey[];
  failures: FilesystemLoadFailure[];
  /** The keystore cache, still open for changes while the signer runs (`cache.keepOpen` only). */
  cache?: KeystoreCache;
}

/** Decrypts an EIP-2335 keystore: `decryptKeystore`, or a wrapper around it (tests count calls). */
export type KeystoreDecrypt = (keystore: unknown, password: string) => Promise<Uint8Array>;

export interface FilesystemLoadOptions {
  paths: string[];
  keystoreConcurrency: number;
  rawConcurrency: number;
  bls: BlsBackend;
  logger: Logger;
  /**
   * The keystore cache file; absent: no cache. `keepOpen`: the cache is returned open, so that
   * keystores imported or reloaded later are sealed into it (the caller closes it); otherwise its
   * keys are wiped once the load ends. `open`: a cache a first load kept open (a reload): its
   * entries serve keystores, and keystores decrypted now are added to it.
   */
  cache?: { path: string; keepOpen?: boolean } | { open: KeystoreCache };
  /** Defaults to `decryptKeystore`. */
  decrypt?: KeystoreDecrypt;
  /**
   * The raw keys' public-key cache (pubkey-cache.ts): a raw key it holds is imported with its
   * cached public key, not derived; the others are derived and added. `prune`: this load reads
   * every raw key (a first load), so the cache keeps only theirs.
   */
  pubkeyCache?: { cache: PubkeyCache; prune: boolean };
  /**
   * Read the descriptor files with synchronous calls, SYNC_READ_CHUNK at a time with a turn of
   * the event loop between (a first load, before the signer serves requests): a fifth of the CPU
   * of the thread pool's round trips. A reload reads asynchronously, so that a slow or stuck file
   * system never holds the event loop of a signer serving requests.
   */
  syncReads?: boolean;
  /**
   * Called once every raw key is imported, before the result is built, when the load handled at
   * least COLLECT_FROM_KEYS keys: a first load of 100,000 keys runs a full garbage collection
   * there (`Bun.gc(true)`, about 60–90 ms), so that the objects the result, the key source and
   * the key store make next reuse the memory of what the reading left behind instead of raising
   * the peak (about 60 MiB less at 100,000 keys).
   */
  collect?: () => void;
  /**
   * A reload: given a document's fingerprint, the pubkey of the key a previous load got from the
   * identical document (same file, same bytes, same keystore and password) when the caller still
   * holds it. That key is not opened again (no import, no KDF): it comes back in `reused`.
   */
  reuse?: (fingerprint: string) => string | undefined;
}

/** Fingerprints are keyed per process: they identify documents, and say nothing of passwords. */
const FINGERPRINT_KEY = randomBytes(32);

/** Scratch for the length prefixes (`update` copies what it is given). */
const LENGTH = Buffer.alloc(4);

function fingerprintOf(parts: readonly (string | Uint8Array)[]): string {
  const mac = new Bun.CryptoHasher("sha256", FINGERPRINT_KEY);
  for (const part of parts) {
    LENGTH.writeUInt32BE(typeof part === "string" ? Buffer.byteLength(part) : part.length);
    mac.update(LENGTH);
    mac.update(part);
  }
  return mac.digest("hex");
}

/** The fingerprint of a keystore document: the descriptor's place and bytes, the keystore, the password. */
function keystoreFingerprint(
  file: string,
  digest: Buffer,
  index: number,
  read: CacheKeystore,
): string {
  return fingerprintOf([file, digest, String(index), read.keystoreHash, read.password]);
}

/**
 * Raw keys per `importSecretKeys` call: large enough that handing a batch to the worker pool costs
 * little per key, small enough that the workers start deriving while files are still being read.
 */
const RAW_IMPORT_BATCH = 256;

const DESCRIPTOR_NAME = /\.ya?ml$/i;

/**
 * The fewest keys a load must handle for `collect` to run. At 10,000 raw keys the collection
 * lowered no peak (153.7 against 154.2 MiB, 5 rounds) and held the start for 15–20 ms, as long
 * as with no key at all.
 */
export const COLLECT_FROM_KEYS = 25_000;

/** Descriptor files read per turn of the event loop with `syncReads` (about 2 ms here). */
const SYNC_READ_CHUNK = 256;

/**
 * With `syncReads`, how many raw-key batches may wait for the backend before reading pauses:
 * reading 100,000 descriptors is faster than 2 workers derive their public keys, and the keys
 * read ahead of them (and the garbage of reading them) raised the peak RSS by about 30 MiB.
 */
const MAX_RAW_BATCHES_AHEAD = 8;

/**
 * Position in configuration order, as two numbers (not an array per key: 100,000 of them were
 * memory at start-up): `order` = directory × 2^33 + file + 1 (0 for the directory itself), `doc` =
 * the document's index + 1 (0 for the file itself). Sorted by `order`, then `doc`.
 */
interface Position {
  order: number;
  doc: number;
}

const FILES_PER_DIRECTORY = 2 ** 33;

function position(directory: number, file = -1, doc = -1): Position {
  return { order: directory * FILES_PER_DIRECTORY + file + 1, doc: doc + 1 };
}

/**
 * A key loaded (or, without `key`, reused): its position, then what the result reports. The
 * result's keys are these very objects (one object per key, not one per stage).
 */
interface Loaded extends Position {
  ok: true;
  pubkey: string;
  /** Absent: reused (see `reuse`). */
  key?: BlsSecretKey;
  file: string;
  fingerprint: string;
}

type Outcome = Loaded | (Position & { file: string; ok: false; reason: string });

/** A raw key read and waiting for its batch; the secret is zeroed once handed over. */
interface ReadRawKey extends Position {
  file: string;
  label: string;
  secret: Uint8Array;
  fingerprint: string;
}

/** A keystore descriptor whose files were read: everything but the KDF is done. */
interface ReadKeystore {
  at: Position;
  file: string;
  /** "document i of n: " for multi-document files, else "". */
  label: string;
  keystoreFile: string;
  keystore: unknown;
  password: string;
  cache: CacheKeystore;
  fingerprint: string;
}

function compareOrder(a: Position, b: Position): number {
  return a.order - b.order || a.doc - b.doc;
}

function reasonOf(err: unknown): string {
  if (err instanceof DescriptorError || err instanceof KeystoreError) return err.reason;
  // Our own modules never put secrets in messages; anything else is unexpected but still skipped.
  return `unexpected error: ${err instanceof Error ? err.message : String(err)}`;
}

/** Prefixes a keystore's own reason with its file, as every keystore failure reads. */
function inKeystore(keystoreFile: string, err: unknown): unknown {
  return err instanceof KeystoreError
    ? new KeystoreError(`keystore ${keystoreFile}: ${err.reason}`)
    : err;
}

async function listDescriptors(dir: string): Promise<string[]> {
  let isDir: boolean;
  try {
    isDir = (await stat(dir)).isDirectory();
  } catch (err) {
    const problem = ioProblem(err);
    throw new DescriptorError(
      problem === "not found" ? "key directory not found" : `key directory: ${problem}`,
    );
  }
  if (!isDir) throw new DescriptorError("key directory path is not a directory");
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && DESCRIPTOR_NAME.test(e.name))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    throw new DescriptorError(`key directory: ${ioProblem(err)}`);
  }
}

/**
 * A one-keystore descriptor as a load reads it (written while the signer runs, by the Key
 * Manager API): the keystore as the cache identifies it (file hash, normalised password, KDF;
 * the caller wipes `password`) and the fingerprint a reload gives the descriptor, so that the
 * reload keeps the key instead of opening it again.
 */
export async function readWrittenKeystore(
  descriptorFile: string,
  keystoreFile: string,
  keystorePasswordFile: string,
): Promise<{ cache: CacheKeystore; fingerprint: string }> {
  const bytes = await readBoundedFile(descriptorFile, MAX_DESCRIPTOR_BYTES, "descriptor", () => {});
  const digest = createHash("sha256").update(bytes).digest();
  const descriptor: KeystoreDescriptor = {
    type: "file-keystore",
    keystoreFile,
    keystorePasswordFile,
  };
  const { cache } = await readKeystore(descriptor, () => {});
  return { cache, fingerprint: keystoreFingerprint(descriptorFile, digest, 0, cache) };
}

/** Reads a keystore and its password and validates the keystore; no KDF runs here. */
async function readKeystore(
  descriptor: KeystoreDescriptor,
  onMode: (path: string, mode: number) => void,
): Promise<Omit<ReadKeystore, "at" | "file" | "label" | "fingerprint">> {
  const { keystoreFile } = descriptor;
  const bytes = await readBoundedFile(keystoreFile, MAX_KEYSTORE_BYTES, "keystore file", onMode);
  let keystore: unknown;
  try {
    keystore = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    const detail = err instanceof Error ? `: ${err.message}` : "";
    throw new DescriptorError(`keystore file ${keystoreFile} is not valid JSON${detail}`);
  }
  const password = await readPasswordFile(descriptor.keystorePasswordFile, onMode);
  let kdf: KeystoreKdfCost;
  try {
    kdf = keystoreKdfCost(keystore);
  } catch (err) {
    throw inKeystore(keystoreFile, err);
  }
  const keystoreHash = createHash("sha256").update(bytes).digest();
  return {
    keystoreFile,
    keystore,
    password,
    cache: { keystoreHash, password: normalizePassword(password), kdf },
  };
}

export async function loadFilesystemKeys(
  options: FilesystemLoadOptions,
): Promise<FilesystemLoadResult> {
  const { bls, logger } = options;
  const decrypt = options.decrypt ?? decryptKeystore;
  const started = performance.now();
  const rawLimit = createSemaphore(options.rawConcurrency);
  const readLimit = createSemaphore(options.keystoreConcurrency);
  const kdfLimit = createSemaphore(Math.min(options.keystoreConcurrency, availableParallelism()));
  const outcomes: Outcome[] = [];
  const keystores: ReadKeystore[] = [];
  /** The key of an unchanged document, kept as the caller holds it. */
  const reused = (order: number, doc: number, file: string, fingerprint: string): boolean => {
    const pubkey = options.reuse?.(fingerprint);
    if (pubkey === undefined) return false;
    outcomes.push({ order, doc, ok: true, pubkey, file, fingerprint });
    return true;
  };
  const looseModes = createLooseModeReport();
  const onMode = looseModes.check;

  const failed = (at: Position, file: string, reason: string) => {
    logger.warn("key not loaded", { file, reason });
    outcomes.push({ order: at.order, doc: at.doc, file, ok: false, reason });
  };

  const invalidKey = (err: unknown) =>
    new DescriptorError(`invalid private key: ${err instanceof Error ? err.message : "rejected"}`);
  // The handle's own string: the key store and the source keep this one, not a copy.
  const pubkeyOf = (key: BlsSecretKey) => key.pubkey;

  /**
   * Imports one keystore's secret; the caller zeroes it. Through `importSecretKeys` too: the
   * worker pool derives the public key in a worker, and cached keystores, all unlocked in the
   * same turn, leave for the workers together.
   */
  const importSecret = async (
    secret: Uint8Array,
  ): Promise<{ key: BlsSecretKey; pubkey: string }> => {
    const [result] = await importSecretKeys(bls, [secret]);
    if (result === undefined || !result.ok) throw invalidKey(result?.error);
    return { key: result.key, pubkey: pubkeyOf(result.key) };
  };

  const pubkeys = options.pubkeyCache?.cache;
  let rawBatch: ReadRawKey[] = [];
  const rawImports: Promise<void>[] = [];
  /** Batches handed to the backend and not yet answered, and who waits for one to be. */
  let rawInFlight = 0;
  const rawWaiters: (() => void)[] = [];
  /** Hands the raw keys read so far to the backend; their outcomes come with its answer. */
  const importRawBatch = () => {
    const batch = rawBatch;
    rawBatch = [];
    if (batch.length === 0) return;
    let results: Promise<BlsImportResult[]>;
    // A public key from the cache is not derived: the key checks it before its first signature.
    const claimed = pubkeys ? batch.map((raw) => pubkeys.lookup(raw.secret)) : undefined;
    try {
      results = importSecretKeys(
        bls,
        batch.map((raw) => raw.secret),
        claimed,
      );
    } catch (err) {
      results = Promise.reject(err);
    } finally {
      // importSecretKeys copied every secret before returning. The cache still needs those
      // whose public key is derived now (until `settle`).
      batch.forEach((raw, i) => {
        if (!pubkeys || claimed?.[i] !== undefined) raw.secret.fill(0);
      });
    }
    const settle = (raw: ReadRawKey, result: BlsImportResult, i: number) => {
      const { order, doc, file, label, fingerprint } = raw;
      if (pubkeys && claimed?.[i] === undefined) {
        if (result.ok) pubkeys.put(raw.secret, result.key.publicKey);
        raw.secret.fill(0);
      }
      if (!result.ok) failed(raw, file, label + invalidKey(result.error).reason);
      else
        outcomes.push({
          order,
          doc,
          ok: true,
          pubkey: pubkeyOf(result.key),
          key: result.key,
          file,
          fingerprint,
        });
    };
    rawInFlight++;
    rawImports.push(
      results
        .then(
          (imported) => {
            for (const [i, raw] of batch.entries()) settle(raw, imported[i] as BlsImportResult, i);
          },
          (err: unknown) => {
            const error = err instanceof Error ? err : new Error(String(err));
            for (const [i, raw] of batch.entries()) settle(raw, { ok: false, error }, i);
          },
        )
        .finally(() => {
          rawInFlight--;
          for (const wake of rawWaiters.splice(0)) wake();
        }),
    );
  };

  /** The descriptor's digest and documents, from its bytes (zeroed here). */
  const parseDescriptorBytes = (file: string, bytes: Buffer, mode: number) => {
    const digest = createHash("sha256").update(bytes).digest();
    const text = bytes.toString("utf8");
    bytes.fill(0);
    const documents = parseDescriptorFile(text, file);
    // Only a descriptor holding a raw key is a secret; one naming a keystore is not.
    if (documents.some((d) => d.ok && d.descriptor.type === "file-raw")) onMode(file, mode);
    return { digest, documents };
  };

  /**
   * Raw keys join the next import batch; keystores are read (the promise, when there is one):
   * everything a descriptor file needs once it is parsed.
   */
  const takeDocuments = (
    order: number,
    file: string,
    digest: Buffer,
    documents: DescriptorDocument[],
  ): Promise<unknown> | undefined => {
    const label = (i: number) =>
      documents.length > 1 ? `document ${i + 1} of ${documents.length}: ` : "";
    const pending: Promise<void>[] = [];
    documents.forEach((document, i) => {
      const doc = i + 1;
      if (!document.ok) {
        failed({ order, doc }, file, label(i) + document.reason);
        return;
      }
      const { descriptor } = document;
      if (descriptor.type === "file-raw") {
        const fingerprint = fingerprintOf([file, digest, String(i)]);
        if (reused(order, doc, file, fingerprint)) {
          descriptor.privateKey.fill(0);
          return;
        }
        const secret = descriptor.privateKey;
        rawBatch.push({ order, doc, file, label: label(i), secret, fingerprint });
        if (rawBatch.length >= RAW_IMPORT_BATCH) importRawBatch();
        return;
      }
      const at: Position = { order, doc };
      const read = async () => {
        try {
          const read = await readLimit.run(() => readKeystore(descriptor, onMode));
          const fingerprint = keystoreFingerprint(file, digest, i, read.cache);
          if (reused(order, doc, file, fingerprint)) {
            read.cache.password.fill(0);
            return;
          }
          keystores.push({ at, file, label: label(i), ...read, fingerprint });
        } catch (err) {
          failed(at, file, label(i) + reasonOf(err));
        }
      };
      pending.push(read());
    });
    return pending.length > 0 ? Promise.all(pending) : undefined;
  };

  const loadDescriptorFile = async (at: Position, file: string): Promise<void> => {
    let parsed: ReturnType<typeof parseDescriptorBytes>;
    try {
      parsed = await rawLimit.run(async () => {
        let mode = 0;
        const bytes = await readBoundedFile(file, MAX_DESCRIPTOR_BYTES, "descriptor", (_, m) => {
          mode = m;
        });
        return parseDescriptorBytes(file, bytes, mode);
      });
    } catch (err) {
      failed(at, file, reasonOf(err));
      return;
    }
    await takeDocuments(at.order, file, parsed.digest, parsed.documents);
  };

  /** `loadDescriptorFile` with a synchronous read (`syncReads`); keystores still read async. */
  const loadDescriptorFileSync = (at: Position, file: string): Promise<unknown> | undefined => {
    let parsed: ReturnType<typeof parseDescriptorBytes>;
    try {
      let mode = 0;
      const bytes = readBoundedFileSync(file, MAX_DESCRIPTOR_BYTES, "descriptor", (_, m) => {
        mode = m;
      });
      parsed = parseDescriptorBytes(file, bytes, mode);
    } catch (err) {
      failed(at, file, reasonOf(err));
      return undefined;
    }
    return takeDocuments(at.order, file, parsed.digest, parsed.documents);
  };

  /** Every descriptor of one directory, in chunks that leave the event loop a turn between. */
  const loadDirectorySync = async (dirIndex: number, dir: string, names: string[]) => {
    const pending: Promise<unknown>[] = [];
    for (let from = 0; from < names.length; from += SYNC_READ_CHUNK) {
      if (from > 0) await new Promise((resolve) => setImmediate(resolve));
      while (rawInFlight > MAX_RAW_BATCHES_AHEAD) {
        await new Promise<void>((wake) => rawWaiters.push(wake));
      }
      const to = Math.min(names.length, from + SYNC_READ_CHUNK);
      for (let fileIndex = from; fileIndex < to; fileIndex++) {
        const done = loadDescriptorFileSync(
          position(dirIndex, fileIndex),
          join(dir, names[fileIndex] as string),
        );
        if (done) pending.push(done);
      }
    }
    await Promise.all(pending);
  };

  /**
   * Imports the secret and checks it against the keystore's `pubkey` (and, for a cached secret,
   * the pubkey sealed with it) before the cache records it. The caller zeroes `secret`.
   */
  const accept = async (
    read: ReadKeystore,
    secret: Uint8Array,
    cache: KeystoreCache | undefined,
    sealedPubkey?: string,
  ) => {
    const imported = await importSecret(secret);
    try {
      verifyKeystorePubkey(read.keystore, imported.key.publicKey);
      if (sealedPubkey !== undefined && sealedPubkey !== imported.pubkey) {
        throw new KeystoreError("the cached pubkey does not match the cached secret");
      }
    } catch (err) {
      bls.forget?.(imported.key);
      throw inKeystore(read.keystoreFile, err);
    }
    if (cache) record(cache, read, imported.pubkey, secret);
    return imported;
  };

  const unlock = async (read: ReadKeystore, cache: KeystoreCache | undefined) => {
    const cached = cache?.lookup(read.cache);
    if (cached) {
      try {
        // Awaited here: `finally` below zeroes the secret accept still uses.
        return await accept(read, cached.secret, cache, cached.pubkey);
      } catch (err) {
        // Authenticated, yet refused: never trusted; the keystore itself decides below.
        logger.warn("keystore cache entry refused, decrypting the keystore", {
          file: read.file,
          reason: reasonOf(err),
        });
      } finally {
        cached.secret.fill(0);
      }
    }
    let secret: Uint8Array;
    try {
      secret = await kdfLimit.run(() => decrypt(read.keystore, read.password));
    } catch (err) {
      throw inKeystore(read.keystoreFile, err);
    }
    try {
      return await accept(read, secret, cache);
    } finally {
      secret.fill(0);
    }
  };

  const seenDirs = new Set<string>();
  const tasks: Promise<void>[] = [];
  for (const [dirIndex, path] of options.paths.entries()) {
    const dir = resolve(path);
    if (seenDirs.has(dir)) {
      logger.warn("key directory listed more than once, loading it once", { path: dir });
      continue;
    }
    seenDirs.add(dir);
    tasks.push(
      listDescriptors(dir).then(
        (names) =>
          options.syncReads
            ? loadDirectorySync(dirIndex, dir, names)
            : Promise.all(
                names.map((name, fileIndex) =>
                  loadDescriptorFile(position(dirIndex, fileIndex), join(dir, name)),
                ),
              ).then(() => undefined),
        (err: unknown) => failed(position(dirIndex), dir, reasonOf(err)),
      ),
    );
  }
  await Promise.all(tasks);
  importRawBatch();
  await Promise.all(rawImports);
  if (outcomes.length >= COLLECT_FROM_KEYS) options.collect?.();
  looseModes.flush(logger);
  if (pubkeys && options.pubkeyCache) {
    const stats = pubkeys.stats;
    pubkeys.flush(options.pubkeyCache.prune);
    logger.info("public-key cache", { path: pubkeys.path, state: pubkeys.state, ...stats });
  }

  const cacheOption = options.cache;
  const alreadyOpen = cacheOption && "open" in cacheOption ? cacheOption.open : undefined;
  const keepCacheOpen =
    cacheOption !== undefined && "keepOpen" in cacheOption && !!cacheOption.keepOpen;
  const cache =
    alreadyOpen ??
    (cacheOption && "path" in cacheOption
      ? await openKeystoreCache({
          path: cacheOption.path,
          keystores: keystores.map((k) => k.cache),
          logger,
        })
      : undefined);
  // A first load records each keystore in the cache it opened; a reload adds what it decrypted.
  const record = (into: KeystoreCache, read: ReadKeystore, pubkey: string, secret: Uint8Array) => {
    if (!alreadyOpen) {
      into.keep(read.cache, pubkey, secret);
      return;
    }
    const added = into.add(read.cache, pubkey, secret);
    if (added !== "sealed")
      logger.warn(
        "keystore not in the keystore cache: the next start-up decrypts every keystore to rebuild it",
        { file: read.file, reason: NOT_CACHED[added] },
      );
  };
  try {
    await Promise.all(
      keystores.map(async (read) => {
        try {
          const { key, pubkey } = await unlock(read, cache);
          const { at, file, fingerprint } = read;
          outcomes.push({ order: at.order, doc: at.doc, ok: true, pubkey, key, file, fingerprint });
        } catch (err) {
          failed(read.at, read.file, read.label + reasonOf(err));
        }
      }),
    );
  } finally {
    for (const read of keystores) read.cache.password.fill(0);
    if (alreadyOpen) alreadyOpen.flush();
    else if (cache) {
      cache.finish({ keepOpen: keepCacheOpen });
      logger.info("keystore cache", { path: cache.path, state: cache.state, ...cache.stats });
    }
  }

  outcomes.sort(compareOrder);
  const keys: FilesystemKey[] = [];
  const kept: ReusedKey[] = [];
  const failures: FilesystemLoadFailure[] = [];
  const firstFile = new Map<string, string>();
  for (const outcome of outcomes) {
    if (!outcome.ok) {
      failures.push({ file: outcome.file, reason: outcome.reason });
      continue;
    }
    const { pubkey, file, key } = outcome;
    const first = firstFile.get(pubkey);
    if (first !== undefined) {
      const reason = `duplicate of ${first} (pubkey ${pubkey})`;
      logger.warn("key not loaded", { file, reason });
      failures.push({ file, reason, pubkey });
      if (key) bls.forget?.(key);
      continue;
    }
    firstFile.set(pubkey, file);
    // The outcome itself: it has every field of a FilesystemKey (or ReusedKey) already.
    if (key) keys.push(outcome as FilesystemKey);
    else kept.push(outcome);
  }

  logger.info("filesystem keys loaded", {
    loaded: keys.length + kept.length,
    ...(options.reuse ? { unchanged: kept.length } : {}),
    failed: failures.length,
    elapsed_ms: Math.round(performance.now() - started),
    paths: seenDirs.size,
  });
  return { keys, reused: kept, failures, ...(cache && keepCacheOpen ? { cache } : {}) };
}
