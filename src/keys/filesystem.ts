/**
 * The filesystem key source: every `*.yaml` / `*.yml` descriptor directly inside each configured
 * directory (not recursive) is loaded; see descriptor.ts for the format.
 *
 * Nothing here is fatal. Each problem (missing directory, unreadable or malformed file, wrong
 * password, duplicate key, …) is logged at warn with `file` and `reason` and returned in
 * `failures`; every other key still loads.
 *
 * Concurrency: descriptor reads and raw-key imports run at most `rawConcurrency` at once;
 * keystore loads (file reads plus the KDF, which is the expensive part) at most
 * `keystoreConcurrency` at once. The KDFs run on the runtime's thread pool, so the event loop
 * stays free while they do.
 *
 * Results are deterministic whatever the timing: keys and failures come back in configuration
 * order (directory, then file name, then document), and of two descriptors with the same
 * public key the first in that order wins.
 */
import { readdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Logger } from "../observability/log";
import type { BlsBackend, BlsSecretKey } from "../signing/bls/backend";
import {
  type DescriptorDocument,
  DescriptorError,
  ioProblem,
  type KeystoreDescriptor,
  parseDescriptorFile,
  readBoundedFile,
  readPasswordFile,
} from "./descriptor";
import { decryptKeystore, KeystoreError, verifyKeystorePubkey } from "./keystore";
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
}

export interface FilesystemLoadOptions {
  paths: string[];
  keystoreConcurrency: number;
  rawConcurrency: number;
  bls: BlsBackend;
  logger: Logger;
}

const DESCRIPTOR_NAME = /\.ya?ml$/i;

/** Position in configuration order: [directory, file, document]. */
type Order = number[];

type Outcome =
  | { order: Order; file: string; ok: true; pubkey: string; key: BlsSecretKey }
  | { order: Order; file: string; ok: false; reason: string };

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

export async function loadFilesystemKeys(
  options: FilesystemLoadOptions,
): Promise<FilesystemLoadResult> {
  const { bls, logger } = options;
  const started = performance.now();
  const rawLimit = createSemaphore(options.rawConcurrency);
  const keystoreLimit = createSemaphore(options.keystoreConcurrency);
  const outcomes: Outcome[] = [];

  const failed = (order: Order, file: string, reason: string) => {
    logger.warn("key not loaded", { file, reason });
    outcomes.push({ order, file, ok: false, reason });
  };

  /** Imports and then zeroes the secret, whatever happens. */
  const importSecret = (secret: Uint8Array): { key: BlsSecretKey; pubkey: string } => {
    try {
      const key = bls.importSecretKey(secret);
      return { key, pubkey: `0x${Buffer.from(key.publicKey).toString("hex")}` };
    } catch (err) {
      const detail = err instanceof Error ? err.message : "rejected";
      throw new DescriptorError(`invalid private key: ${detail}`);
    } finally {
      secret.fill(0);
    }
  };

  const loadKeystore = async (descriptor: KeystoreDescriptor) => {
    const { keystoreFile } = descriptor;
    const bytes = await readBoundedFile(keystoreFile, MAX_KEYSTORE_BYTES, "keystore file");
    let keystore: unknown;
    try {
      keystore = JSON.parse(bytes.toString("utf8"));
    } catch (err) {
      const detail = err instanceof Error ? `: ${err.message}` : "";
      throw new DescriptorError(`keystore file ${keystoreFile} is not valid JSON${detail}`);
    }
    const password = await readPasswordFile(descriptor.keystorePasswordFile);
    try {
      const imported = importSecret(await decryptKeystore(keystore, password));
      verifyKeystorePubkey(keystore, imported.key.publicKey);
      return imported;
    } catch (err) {
      if (err instanceof KeystoreError) {
        throw new KeystoreError(`keystore ${keystoreFile}: ${err.reason}`);
      }
      throw err;
    }
  };

  const loadDescriptorFile = async (order: Order, file: string): Promise<void> => {
    let documents: DescriptorDocument[];
    try {
      documents = await rawLimit.run(async () => {
        const bytes = await readBoundedFile(file, MAX_DESCRIPTOR_BYTES, "descriptor");
        const text = bytes.toString("utf8");
        bytes.fill(0);
        return parseDescriptorFile(text, file);
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
      try {
        const { key, pubkey } =
          descriptor.type === "file-raw"
            ? await rawLimit.run(() => importSecret(descriptor.privateKey))
            : await keystoreLimit.run(() => loadKeystore(descriptor));
        outcomes.push({ order: docOrder, file, ok: true, key, pubkey });
      } catch (err) {
        failed(docOrder, file, label(i) + reasonOf(err));
      } finally {
        if (descriptor.type === "file-raw") descriptor.privateKey.fill(0);
      }
    });
    await Promise.all(pending);
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
  return { keys, failures };
}
