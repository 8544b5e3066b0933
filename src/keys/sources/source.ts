import type { BlsSecretKey } from "../../bls/backend";
import type { KeySourceName } from "../key-store";

/**
 * Where keys live, behind one interface (docs/keys.md, "Key sources"): the filesystem's key
 * descriptors (with the Key Manager API's keystore files as their writer) and the cloud_kv
 * table. A source loads what it holds now; a writable one has a `KeyWriter`. The key service
 * (key-service.ts) applies loads to the in-memory key store and drives every writer, so the
 * store changes only after the source has.
 */
export interface KeySource {
  readonly name: KeySourceName;
  /**
   * What the source holds now. `present` says, for a pubkey, whether the key store holds it from
   * this source or from another: a source may then skip the work of opening it again (`key`
   * left out: keep the one held). Throws when the source cannot be read at all (the keys loaded
   * before stay); a key that cannot be loaded is a failure, and the others load.
   */
  load(present: (pubkey: string) => "this" | "other" | undefined): Promise<SourceSnapshot>;
  /** Whether the source can be loaded and written now (cloud_kv: only while unsealed). */
  ready(): boolean;
  /** Absent: the source is read-only. */
  readonly writer?: KeyWriter;
}

export interface SourceSnapshot {
  readonly keys: readonly SnapshotKey[];
  /** Keys skipped, each with its reason (never a secret). */
  readonly failures: readonly LoadFailure[];
}

export interface SnapshotKey {
  readonly pubkey: string;
  /** A freshly opened key; absent when the one the store holds from this source is unchanged. */
  readonly key?: BlsSecretKey;
  /** Why the Key Manager API may not delete it, or undefined when it may. */
  readonly readonly?: string;
}

export interface LoadFailure {
  /** The file, or the pubkey, that failed. */
  readonly where: string;
  readonly reason: string;
}

/** A key about to be written: imported from a keystore, or generated. */
export interface NewKey {
  readonly pubkey: string;
  readonly key: BlsSecretKey;
  /** The 32-byte secret; the caller zeroes it once the batch is over. */
  readonly secret: Uint8Array;
  readonly origin: "imported" | "generated";
  /** The EIP-2335 keystore and its password, for imports (the files writer keeps them). */
  readonly keystore?: { readonly text: string; readonly password: string };
}

/**
 * Writes and removes keys of one source, each call durable before it resolves. A batch is written
 * in two steps so that a failure can be undone before anything could load: `persist` stores a
 * key so that no load picks it up yet, `commit` makes it loadable.
 */
export interface KeyWriter {
  /** Writes at once, at most (cloud_kv: the configured write concurrency). */
  readonly concurrency: number;
  /** Stores the key, not yet loadable; "exists" when the source already has this pubkey. */
  persist(key: NewKey): Promise<"written" | "exists">;
  /** Makes a persisted key loadable. */
  commit(key: NewKey): Promise<void>;
  /**
   * Removes the key: with `written`, only what that `persist` wrote (undoing a failed batch);
   * without, whatever the source holds for the pubkey (a delete). "absent": there was nothing.
   */
  remove(pubkey: string, written?: NewKey): Promise<"removed" | "absent">;
  /** After a batch joined the key store (the keystore cache seals it); never fails the batch. */
  committed?(keys: readonly NewKey[]): Promise<void>;
  /** After keys left the source and the key store. */
  removed?(pubkeys: readonly string[]): void;
  /**
   * Why the Key Manager API may not delete the keys this writer writes, or undefined when it may
   * (cloud_kv keys are deleted there only with `writable` enabled).
   */
  readonly readonlyReason?: string;
}

/** Why a write failed, for answers and logs: an error's name and message, never a secret. */
export function writeFailureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && error.message.startsWith(code)) return error.message;
  return error.name === "Error" ? error.message : `${error.name}: ${error.message}`;
}
