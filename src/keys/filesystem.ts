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
import { createHash } from "node:crypto";
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
import { toHex } from "../wire/hex";
import {
  type DescriptorDocument,
  DescriptorError,
  ioProblem,
  type KeystoreDescriptor,
  parseDescriptorFile,
  readBoundedFile,
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
import { createSemaphore } from "./semaphore";

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
}

export interface FilesystemLoadFailure {
  /** The descriptor (or, when a directory cannot be read, the directory). */
  file: string;
  /** Why it was skipped; never contains a secret. */
  reason: string;
}

export interface FilesystemLoadResult {
  keys: FilesystemKey[];
  failures: FilesystemLoadFailure[];
  /** The keystore cache, still open for the Key Manager API's changes (`cache.keepOpen` only). */
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
   * keystores imported later are sealed into it (the caller closes it); otherwise its keys are
   * wiped once the load ends.
   */
  cache?: { path: string; keepOpen?: boolean };
  /** Defaults to `decryptKeystore`. */
  decrypt?: KeystoreDecrypt;
}

/**
 * Raw keys per `importSecretKeys` call: large enough that handing a batch to the worker pool costs
 * little per key, small enough that the workers start deriving while files are still being read.
 */
const RAW_IMPORT_BATCH = 256;

const DESCRIPTOR_NAME = /\.ya?ml$/i;

/** Position in configuration order: [directory, file, document]. */
type Order = number[];

type Outcome =
  | { order: Order; file: string; ok: true; pubkey: string; key: BlsSecretKey }
  | { order: Order; file: string; ok: false; reason: string };

/** A raw key read and waiting for its batch; the secret is zeroed once handed over. */
interface ReadRawKey {
  order: Order;
  file: string;
  label: string;
  secret: Uint8Array;
}

/** A keystore descriptor whose files were read: everything but the KDF is done. */
interface ReadKeystore {
  order: Order;
  file: string;
  /** "document i of n: " for multi-document files, else "". */
  label: string;
  keystoreFile: string;
  keystore: unknown;
  password: string;
  cache: CacheKeystore;
}

function compareOrder(a: Order, b: Order): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
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
 * A keystore as the cache identifies it (file hash, normalised password, KDF), read from its
 * files exactly as the next start-up will read them. The caller wipes `password`.
 */
export async function readCacheKeystore(
  keystoreFile: string,
  keystorePasswordFile: string,
): Promise<CacheKeystore> {
  const descriptor: KeystoreDescriptor = {
    type: "file-keystore",
    keystoreFile,
    keystorePasswordFile,
  };
  return (await readKeystore(descriptor, () => {})).cache;
}

/** Reads a keystore and its password and validates the keystore; no KDF runs here. */
async function readKeystore(
  descriptor: KeystoreDescriptor,
  onMode: (path: string, mode: number) => void,
): Promise<Omit<ReadKeystore, "order" | "file" | "label">> {
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
  const looseModes = createLooseModeReport();
  const onMode = looseModes.check;

  const failed = (order: Order, file: string, reason: string) => {
    logger.warn("key not loaded", { file, reason });
    outcomes.push({ order, file, ok: false, reason });
  };

  const invalidKey = (err: unknown) =>
    new DescriptorError(`invalid private key: ${err instanceof Error ? err.message : "rejected"}`);
  const pubkeyOf = (key: BlsSecretKey) => toHex(key.publicKey);

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

  let rawBatch: ReadRawKey[] = [];
  const rawImports: Promise<void>[] = [];
  /** Hands the raw keys read so far to the backend; their outcomes come with its answer. */
  const importRawBatch = () => {
    const batch = rawBatch;
    rawBatch = [];
    if (batch.length === 0) return;
    let results: Promise<BlsImportResult[]>;
    try {
      results = importSecretKeys(
        bls,
        batch.map((raw) => raw.secret),
      );
    } catch (err) {
      results = Promise.reject(err);
    } finally {
      // importSecretKeys copied every secret before returning.
      for (const raw of batch) raw.secret.fill(0);
    }
    const settle = (raw: ReadRawKey, result: BlsImportResult) => {
      const { order, file, label } = raw;
      if (!result.ok) failed(order, file, label + invalidKey(result.error).reason);
      else outcomes.push({ order, file, ok: true, key: result.key, pubkey: pubkeyOf(result.key) });
    };
    rawImports.push(
      results.then(
        (imported) => {
          for (const [i, raw] of batch.entries()) settle(raw, imported[i] as BlsImportResult);
        },
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          for (const raw of batch) settle(raw, { ok: false, error });
        },
      ),
    );
  };

  const loadDescriptorFile = async (order: Order, file: string): Promise<void> => {
    let documents: DescriptorDocument[];
    try {
      documents = await rawLimit.run(async () => {
        let mode = 0;
        const bytes = await readBoundedFile(file, MAX_DESCRIPTOR_BYTES, "descriptor", (_, m) => {
          mode = m;
        });
        const text = bytes.toString("utf8");
        bytes.fill(0);
        const parsed = parseDescriptorFile(text, file);
        // Only a descriptor holding a raw key is a secret; one naming a keystore is not.
        if (parsed.some((d) => d.ok && d.descriptor.type === "file-raw")) onMode(file, mode);
        return parsed;
      });
    } catch (err) {
      failed(order, file, reasonOf(err));
      return;
    }
    const label = (i: number) =>
      documents.length > 1 ? `document ${i + 1} of ${documents.length}: ` : "";

    const pending = documents.map(async (document, i) => {
      const docOrder = [...order, i];
      if (!document.ok) {
        failed(docOrder, file, label(i) + document.reason);
        return;
      }
      const { descriptor } = document;
      if (descriptor.type === "file-raw") {
        rawBatch.push({ order: docOrder, file, label: label(i), secret: descriptor.privateKey });
        if (rawBatch.length >= RAW_IMPORT_BATCH) importRawBatch();
        return;
      }
      try {
        const read = await readLimit.run(() => readKeystore(descriptor, onMode));
        keystores.push({ order: docOrder, file, label: label(i), ...read });
      } catch (err) {
        failed(docOrder, file, label(i) + reasonOf(err));
      }
    });
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
    cache?.keep(read.cache, imported.pubkey, secret);
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
          Promise.all(
            names.map((name, fileIndex) =>
              loadDescriptorFile([dirIndex, fileIndex], join(dir, name)),
            ),
          ).then(() => undefined),
        (err: unknown) => failed([dirIndex], dir, reasonOf(err)),
      ),
    );
  }
  await Promise.all(tasks);
  importRawBatch();
  await Promise.all(rawImports);
  looseModes.flush(logger);

  const keepCacheOpen = options.cache?.keepOpen === true;
  const cache = options.cache
    ? await openKeystoreCache({
        path: options.cache.path,
        keystores: keystores.map((k) => k.cache),
        logger,
      })
    : undefined;
  try {
    await Promise.all(
      keystores.map(async (read) => {
        try {
          const { key, pubkey } = await unlock(read, cache);
          outcomes.push({ order: read.order, file: read.file, ok: true, key, pubkey });
        } catch (err) {
          failed(read.order, read.file, read.label + reasonOf(err));
        }
      }),
    );
  } finally {
    for (const read of keystores) read.cache.password.fill(0);
    if (cache) {
      cache.finish({ keepOpen: keepCacheOpen });
      logger.info("keystore cache", { path: cache.path, state: cache.state, ...cache.stats });
    }
  }

  outcomes.sort((a, b) => compareOrder(a.order, b.order));
  const keys: FilesystemKey[] = [];
  const failures: FilesystemLoadFailure[] = [];
  const firstFile = new Map<string, string>();
  for (const outcome of outcomes) {
    if (!outcome.ok) {
      failures.push({ file: outcome.file, reason: outcome.reason });
      continue;
    }
    const first = firstFile.get(outcome.pubkey);
    if (first !== undefined) {
      const reason = `duplicate of ${first} (pubkey ${outcome.pubkey})`;
      logger.warn("key not loaded", { file: outcome.file, reason });
      failures.push({ file: outcome.file, reason });
      continue;
    }
    firstFile.set(outcome.pubkey, outcome.file);
    keys.push({ pubkey: outcome.pubkey, key: outcome.key, file: outcome.file });
  }

  logger.info("filesystem keys loaded", {
    loaded: keys.length,
    failed: failures.length,
    elapsed_ms: Math.round(performance.now() - started),
    paths: seenDirs.size,
  });
  return { keys, failures, ...(cache && keepCacheOpen ? { cache } : {}) };
}
