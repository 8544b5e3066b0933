import { availableParallelism } from "node:os";
import type { FutureBound } from "../antislashing/future";
import type { SlashingStore } from "../antislashing/store";
import type { KeyAccess } from "../auth/authenticator";
import type { BlsBackend, BlsSecretKey } from "../bls/backend";
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import { type BatchOutcome, type WriteOptions, writeBatch } from "./batch";
import {
  checkPasswords,
  type DeleteCommand,
  type DeleteStatus,
  deletedPubkeys,
  type ImportCommand,
  type ImportStatus,
  type ItemResult,
} from "./import-request";
import type { KeySourceName, KeyStore } from "./key-store";
import { KeyedLock } from "./keyed-lock";
import { openImportedKeystore } from "./keystore-import";
import { createSemaphore } from "./semaphore";
import { exportHistory, importHistory, readHistory } from "./slashing-history";
import type { KeySource, LoadFailure, NewKey, SourceSnapshot } from "./sources/source";
import { WriteFence } from "./write-fence";

export interface KeyServiceDeps {
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  readonly slashing: SlashingStore;
  /** `antislashing.max_future_epochs`, which imported history is held to as signing is. */
  readonly futureBound?: FutureBound;
  readonly sources: readonly KeySource[];
  readonly logger: Logger;
}

/** What one load of a source did to the key store. */
export interface LoadSummary {
  readonly source: KeySourceName;
  /** Keys of this source in the key store after the load. */
  readonly loaded: number;
  readonly added: number;
  readonly replaced: number;
  readonly removed: number;
  readonly failures: readonly LoadFailure[];
}

/** Delete through every source that holds the key (Key Manager API), or through one only. */
export type DeleteScope = "every_source" | KeySourceName;

/** The load failure of a key a failed batch left in its source (see `#quarantined`). */
const LEFT_BY_FAILED_WRITE =
  "left in the source by a write that failed and could not be undone: delete it";

/**
 * The one service behind every key change: loads of each source (start-up, unseal, refresh,
 * reload) and the imports, deletes and key generation of the Key Manager API and cloud_kv. The key
 * store changes only after the source has: a load applies what it read in one step; an import
 * writes the whole batch (all or nothing) before any of its keys joins the store; a delete
 * removes the key from every source that holds it before it leaves the store. A per-key lock
 * keeps an import and a delete of one key apart; the write fence keeps a load from undoing a
 * write that happened while it read.
 */
export class KeyService {
  readonly #lock = new KeyedLock();
  readonly #fence = new WriteFence();
  readonly #decryption = createSemaphore(availableParallelism());
  readonly #sources = new Map<KeySourceName, KeySource>();
  /**
   * Per source, the keys it holds as of its last load and the writes since: loaded, or shadowed
   * by the same key from another source. Each with why the Key Manager API may not delete it.
   */
  readonly #holds = new Map<KeySourceName, Map<string, string | undefined>>();
  /** Each source's loads, one after the other (keyed by source name). */
  readonly #loads = new KeyedLock();
  readonly #last = new Map<KeySourceName, LoadSummary>();
  /**
   * Keys a failed batch left in a source (its removal failed too). No load of this process puts
   * them in the key store; a delete or an import of the key ends that.
   */
  readonly #quarantined = new Set<string>();

  readonly #deletedListeners: ((pubkey: string) => Promise<void>)[] = [];

  constructor(private readonly deps: KeyServiceDeps) {
    for (const source of deps.sources) {
      this.#sources.set(source.name, source);
      this.#holds.set(source.name, new Map());
    }
  }

  source(name: KeySourceName): KeySource | undefined {
    return this.#sources.get(name);
  }

  /** The summary of the source's last load, if any. */
  lastLoad(name: KeySourceName): LoadSummary | undefined {
    return this.#last.get(name);
  }

  /**
   * Reads the source and makes the key store's keys of that source what it holds: new keys are
   * added, keys gone from it removed, changed ones replaced. Loads of one source run one at a
   * time. A source that cannot be read throws, and the keys loaded before stay.
   */
  load(name: KeySourceName): Promise<LoadSummary> {
    const source = this.#require(name);
    return this.#loads.run(name, () => this.#load(source));
  }

  /** Takes every key of the source out of the key store (cloud_kv on seal). */
  drop(name: KeySourceName): number {
    const { keys } = this.deps;
    let dropped = 0;
    for (const pubkey of keys.pubkeys()) {
      if (keys.get(pubkey)?.source === name && keys.remove(pubkey)) dropped++;
    }
    this.#holds.set(name, new Map());
    return dropped;
  }

  async #load(source: KeySource): Promise<LoadSummary> {
    const { keys } = this.deps;
    const watch = this.#fence.watch();
    try {
      const snapshot = await source.load((pubkey) => {
        const held = keys.get(pubkey);
        if (!held) return undefined;
        return held.source === source.name ? "this" : "other";
      });
      // Sealed while it read (cloud_kv): nothing it read may join the store.
      if (!source.ready()) {
        for (const item of snapshot.keys) this.#forget(item.key);
        throw new SigilError("sealed", `the ${source.name} source closed while it was loaded`);
      }
      const { summary, holds } = this.#apply(source, snapshot, watch.touched);
      // The writes that ran meanwhile decided their keys; the holdings follow them.
      const current = this.#holds.get(source.name);
      for (const pubkey of watch.all) {
        if (current?.has(pubkey)) holds.set(pubkey, current.get(pubkey));
        else holds.delete(pubkey);
      }
      this.#holds.set(source.name, holds);
      this.#last.set(source.name, summary);
      return summary;
    } finally {
      watch.close();
    }
  }

  /**
   * Applies a snapshot to the key store in one synchronous step (nothing else changes the store
   * meanwhile), leaving alone the keys a write touched since the load began. Returns the
   * source's new holdings.
   */
  #apply(
    source: KeySource,
    snapshot: SourceSnapshot,
    touched: (pubkey: string) => boolean,
  ): { summary: LoadSummary; holds: Map<string, string | undefined> } {
    const { keys } = this.deps;
    const name = source.name;
    const failures = [...snapshot.failures];
    const held = this.#holds.get(name) ?? new Map<string, string | undefined>();
    const holds = new Map<string, string | undefined>();
    let added = 0;
    let replaced = 0;
    let removed = 0;
    for (const item of snapshot.keys) {
      const { pubkey } = item;
      if (touched(pubkey)) {
        this.#forget(item.key);
        continue;
      }
      if (this.#quarantined.has(pubkey)) {
        this.#forget(item.key);
        failures.push({ where: pubkey, reason: LEFT_BY_FAILED_WRITE });
        continue;
      }
      const current = keys.get(pubkey);
      if (current && current.source !== name) {
        this.#forget(item.key);
        holds.set(pubkey, item.readonly);
        failures.push({
          where: pubkey,
          reason: `duplicate across sources: already loaded from the ${current.source} source`,
        });
        continue;
      }
      const readonly = item.readonly !== undefined;
      if (current) {
        if (item.key && item.key !== current.key) {
          keys.replace({ pubkey, key: item.key, source: name, readonly });
          replaced++;
        } else if (current.readonly !== readonly) {
          keys.replace({ ...current, readonly });
        }
      } else if (item.key) {
        keys.add({ pubkey, key: item.key, source: name, readonly });
        added++;
      } else {
        // Held when the source read it, gone since: the next load opens it again.
        continue;
      }
      holds.set(pubkey, item.readonly);
    }
    for (const pubkey of held.keys()) {
      if (holds.has(pubkey) || touched(pubkey)) continue;
      if (keys.get(pubkey)?.source === name && keys.remove(pubkey)) removed++;
    }
    const summary = { source: name, loaded: keys.count(name), added, replaced, removed, failures };
    return { summary, holds };
  }

  #forget(key: BlsSecretKey | undefined): void {
    if (key) this.deps.bls.forget?.(key);
  }

  // ---------------------------------------------------------------- Key Manager API, cloud_kv

  /** GET /eth/v1/keystores: the keys the caller may see; `readonly` when delete would refuse. */
  list(access: KeyAccess): { validating_pubkey: string; readonly: boolean }[] {
    const { keys } = this.deps;
    return keys
      .pubkeys()
      .filter((pubkey) => access.refusal(pubkey) === undefined)
      .map((pubkey) => ({
        validating_pubkey: pubkey,
        readonly: this.#readonlyReason(pubkey) !== undefined,
      }));
  }

  /**
   * Imports keystores into the `target` source. Per item: `imported`, `duplicate`, or `error` (a
   * keystore that does not open, a key the caller may not import). The keys to write are written
   * as one batch: if a write fails (or the time runs out), the batch is undone and every one of
   * them answers `error` saying so; none joins the key store. The request's slashing history is
   * imported before that, and only the history of its own keys that the caller may import, within
   * the future bound: anything else refuses the whole request, nothing changed (importHistory).
   */
  async import(
    target: KeySourceName,
    command: ImportCommand,
    access: KeyAccess,
    options: WriteOptions,
  ): Promise<{ data: ItemResult<ImportStatus>[] }> {
    checkPasswords(command);
    const source = this.#writable(target);
    // Read whole, and refused when malformed, before any keystore costs a KDF.
    const history =
      typeof command.slashing_protection === "string"
        ? await readHistory(command.slashing_protection)
        : undefined;
    const seen = new Set<string>();
    const opened = await Promise.all(
      command.keystores.map((text, i) => {
        const password = command.passwords[i] ?? "";
        return openImportedKeystore(text, password, {
          keys: this.deps.keys,
          bls: this.deps.bls,
          decryption: this.#decryption,
          seen,
          refusal: (pubkey) => access.refusal(pubkey),
        }).then((result) => ({ result, text, password }));
      }),
    );
    const data: ItemResult<ImportStatus>[] = [];
    const candidates: { index: number; key: NewKey }[] = [];
    for (const [index, { result, text, password }] of opened.entries()) {
      if (!result.ok) {
        data[index] = result.result;
        continue;
      }
      data[index] = { status: "imported" };
      candidates.push({
        index,
        key: {
          pubkey: result.pubkey,
          key: result.key,
          secret: result.secret,
          origin: "imported",
          keystore: { text, password },
        },
      });
    }
    if (history) {
      // Slashing history first: no key may become active before its history is in the database.
      const requested = new Set<string>();
      for (const { result } of opened) if (result.pubkey) requested.add(result.pubkey);
      try {
        await importHistory(this.deps.slashing, history, {
          requested,
          refusal: (pubkey) => access.refusal(pubkey),
          ...(this.deps.futureBound ? { bound: this.deps.futureBound } : {}),
        });
      } catch (error) {
        for (const { key } of candidates) {
          key.secret.fill(0);
          this.#forget(key.key);
        }
        throw error;
      }
    }
    try {
      if (candidates.length > 0) {
        const pubkeys = candidates.map((c) => c.key.pubkey);
        await this.#lock.runAll(pubkeys, async () => {
          const outcome = await this.#writeNew(
            source,
            candidates.map((c) => c.key),
            options,
          );
          const answer = importAnswers(source.name, outcome);
          for (const { index, key } of candidates) {
            const given = answer(key);
            if (given) data[index] = given;
            else this.deps.logger.info("keystore imported", { pubkey: key.pubkey, source: target });
          }
        });
      }
    } finally {
      for (const { key } of candidates) key.secret.fill(0);
    }
    return { data };
  }

  /**
   * Writes new keys (key generation) into `target`, all or nothing. Throws with the truth when
   * the batch failed: what was undone, and the pubkeys left behind (never loaded here).
   */
  async generate(
    target: KeySourceName,
    generated: readonly NewKey[],
    options: WriteOptions,
  ): Promise<void> {
    const source = this.#writable(target);
    const outcome = await this.#lock.runAll(
      generated.map((k) => k.pubkey),
      () => this.#writeNew(source, generated, options),
    );
    if (outcome.ok && outcome.existing.length === 0) return;
    if (outcome.ok) {
      // A fresh mnemonic's key already in the table cannot happen by chance; the batch is void.
      throw new SigilError(
        "internal_error",
        `generated key ${outcome.existing[0]?.pubkey} already exists in ${target}`,
      );
    }
    throw new SigilError(
      outcome.stop.kind === "out_of_time" ? "request_timeout" : "key_write_failed",
      `key generation failed and no key was kept: ${batchFailure(source.name, generated.length, outcome)}`,
    );
  }

  /**
   * Deletes keys. Per key: `deleted` once it is out of every source that holds it (removed first,
   * so no load can bring it back) and then out of the key store; `not_found` / `not_active` when
   * no such key is loaded; `error` for a key the caller may not see, a key some source holds
   * read-only (nothing is touched), or a removal that failed (the key stays loaded). The
   * interchange covers exactly the keys answered `deleted` or `not_active`.
   */
  async delete(
    scope: DeleteScope,
    command: DeleteCommand,
    access: KeyAccess,
  ): Promise<{ data: ItemResult<DeleteStatus>[]; slashing_protection: string }> {
    const pubkeys = deletedPubkeys(command);
    if (scope !== "every_source") this.#writable(scope);
    const data: ItemResult<DeleteStatus>[] = [];
    for (const pubkey of pubkeys) data.push(await this.#deleteOne(pubkey, scope, access));
    // The history of the keys that left memory (exported after, so it is complete) and of keys
    // never loaded, whose records make them `not_active`; none for a refused key.
    const exported = pubkeys.filter((_, i) => {
      const status = data[i]?.status;
      return status === "deleted" || status === "not_found";
    });
    const history = await exportHistory(this.deps.slashing, [...new Set(exported)]);
    for (const [i, pubkey] of pubkeys.entries()) {
      if (data[i]?.status === "not_found" && history.withRecords.has(pubkey))
        data[i] = { status: "not_active" };
    }
    return { data, slashing_protection: history.interchange };
  }

  #deleteOne(
    pubkey: string,
    scope: DeleteScope,
    access: KeyAccess,
  ): Promise<ItemResult<DeleteStatus>> {
    const refusal = access.refusal(pubkey);
    if (refusal !== undefined)
      return Promise.resolve({ status: "error", message: `not allowed: ${refusal}` });
    return this.#lock.run(pubkey, async () => {
      const end = this.#fence.begin([pubkey]);
      try {
        return scope === "every_source"
          ? await this.#deleteEverywhere(pubkey)
          : await this.#deleteFrom(this.#writable(scope), pubkey);
      } finally {
        end();
      }
    });
  }

  /** The Key Manager API's delete: out of every source that holds the key, or not at all. */
  async #deleteEverywhere(pubkey: string): Promise<ItemResult<DeleteStatus>> {
    const { keys, logger } = this.deps;
    if (!keys.get(pubkey)) return { status: "not_found" };
    const readonly = this.#readonlyReason(pubkey);
    if (readonly !== undefined)
      return { status: "error", message: `key is read-only: ${readonly}; nothing was deleted` };
    const holders = this.#holders(pubkey);
    const done: string[] = [];
    for (const source of holders) {
      try {
        await source.writer?.remove(pubkey);
        done.push(source.name);
      } catch (error) {
        logger.error("key delete failed", { pubkey, source: source.name, error: reason(error) });
        const partly = done.length > 0 ? ` (it was removed from ${done.join(", ")})` : "";
        return {
          status: "error",
          message: `could not remove the key from the ${source.name} source${partly}: ${reason(error)}; the key stays loaded and signing`,
        };
      }
    }
    const waited = await this.#forgetEverywhere(pubkey, holders);
    logger.info("key deleted", {
      pubkey,
      sources: holders.map((s) => s.name).join(","),
      ...waited,
    });
    await this.#announceDeleted(pubkey);
    return { status: "deleted" };
  }

  /** cloud_kv's own delete: the item whatever its status, loaded or not; other sources' keys refused. */
  async #deleteFrom(source: KeySource, pubkey: string): Promise<ItemResult<DeleteStatus>> {
    const { keys, logger } = this.deps;
    const entry = keys.get(pubkey);
    if (entry && entry.source !== source.name)
      return {
        status: "error",
        message: `key is from the ${entry.source} source, not ${source.name}; nothing was deleted`,
      };
    let outcome: "removed" | "absent" | undefined;
    try {
      outcome = await source.writer?.remove(pubkey);
    } catch (error) {
      logger.error("key delete failed", { pubkey, source: source.name, error: reason(error) });
      return {
        status: "error",
        message: `could not delete the key from the ${source.name} source: ${reason(error)}; ${entry ? "the key stays loaded and signing" : "nothing was deleted"}`,
      };
    }
    if (outcome !== "removed" && !entry) return { status: "not_found" };
    const waited = await this.#forgetEverywhere(pubkey, [source]);
    logger.info("key deleted", { pubkey, sources: source.name, ...waited });
    await this.#announceDeleted(pubkey);
    return { status: "deleted" };
  }

  /**
   * `listener` hears of every key deleted for good (Key Manager API, cloud_kv delete), not of
   * keys that only leave memory (a reload, a seal): what is derived from a key goes with it.
   */
  onKeyDeleted(listener: (pubkey: string) => Promise<void>): void {
    this.#deletedListeners.push(listener);
  }

  /** Awaited before the delete is answered; a listener's failure is its own to log. */
  async #announceDeleted(pubkey: string): Promise<void> {
    await Promise.all(this.#deletedListeners.map((listener) => listener(pubkey).catch(() => {})));
  }

  /**
   * Takes the key out of memory, then waits for the signatures with it still in flight to be
   * released or refused (no new one can start), so that the delete answers once signing with it
   * has stopped; under the key's lock, so no import of it runs meanwhile. Returns, for the log,
   * how many were in flight and how long that took.
   */
  async #forgetEverywhere(
    pubkey: string,
    sources: readonly KeySource[],
  ): Promise<{ in_flight: number; in_flight_wait_ms: number }> {
    const { keys } = this.deps;
    keys.remove(pubkey);
    this.#quarantined.delete(pubkey);
    for (const source of sources) {
      this.#holds.get(source.name)?.delete(pubkey);
      source.writer?.removed?.([pubkey]);
    }
    const inFlight = keys.inFlight(pubkey);
    const started = performance.now();
    if (inFlight > 0) {
      await keys.settled(pubkey);
      // The signatures released just now are answered in the microtasks that follow: let their
      // responses go out before this delete goes on to answer.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return {
      in_flight: inFlight,
      in_flight_wait_ms: Math.round((performance.now() - started) * 10) / 10,
    };
  }

  /** The sources that hold the key: the one it was loaded from, and any shadowed by it. */
  #holders(pubkey: string): KeySource[] {
    const entry = this.deps.keys.get(pubkey);
    const names = new Set<KeySourceName>(entry ? [entry.source] : []);
    for (const [name, held] of this.#holds) if (held.has(pubkey)) names.add(name);
    return [...names].map((name) => this.#require(name));
  }

  /** Why the Key Manager API may not delete this key, or undefined when it may. */
  #readonlyReason(pubkey: string): string | undefined {
    for (const source of this.#holders(pubkey)) {
      if (!source.writer) return `the ${source.name} source is read-only`;
      const why = this.#holds.get(source.name)?.get(pubkey);
      if (why !== undefined) return why;
    }
    return undefined;
  }

  /** Writes `keys` as one batch; on success they join the key store. Holds the keys' locks. */
  async #writeNew(
    source: KeySource,
    batch: readonly NewKey[],
    options: WriteOptions,
  ): Promise<BatchOutcome> {
    const { keys, logger } = this.deps;
    const writer = source.writer as NonNullable<KeySource["writer"]>;
    const end = this.#fence.begin(batch.map((k) => k.pubkey));
    try {
      // Under the locks: a key that was loaded meanwhile is a duplicate, and is not written.
      const loaded = batch.filter((k) => keys.get(k.pubkey) !== undefined);
      const fresh = batch.filter((k) => !loaded.includes(k));
      const outcome = await writeBatch(writer, fresh, options);
      for (const key of [...loaded, ...outcome.existing]) this.#forget(key.key);
      if (!outcome.ok) {
        for (const key of fresh) this.#forget(key.key);
        for (const { pubkey } of outcome.left) this.#quarantined.add(pubkey);
        logger.error("key batch failed; this request's writes were undone", {
          source: source.name,
          keys: fresh.length,
          stop: outcome.stop.kind === "failed" ? outcome.stop.reason : "out of time",
          removed: outcome.removed.length,
          left: outcome.left.map((l) => l.pubkey).join(","),
        });
        return { ...outcome, existing: [...loaded, ...outcome.existing] };
      }
      const held = this.#holds.get(source.name);
      if (source.ready()) {
        const readonly = writer.readonlyReason !== undefined;
        for (const { pubkey, key } of outcome.written) {
          keys.add({ pubkey, key, source: source.name, readonly });
          held?.set(pubkey, writer.readonlyReason);
          this.#quarantined.delete(pubkey);
        }
      } else {
        // Sealed while it wrote: the keys are in the source and load at the next unseal.
        for (const key of outcome.written) this.#forget(key.key);
      }
      await writer.committed?.(outcome.written);
      return { ...outcome, existing: [...loaded, ...outcome.existing] };
    } finally {
      end();
    }
  }

  #require(name: KeySourceName): KeySource {
    const source = this.#sources.get(name);
    if (!source) throw new Error(`no ${name} key source`);
    return source;
  }

  /** A source with a writer, ready to be written (cloud_kv: unsealed). */
  #writable(name: KeySourceName): KeySource & { writer: NonNullable<KeySource["writer"]> } {
    const source = this.#require(name);
    if (!source.writer) throw new Error(`the ${name} key source is read-only`);
    if (!source.ready())
      throw new SigilError("sealed", `the signer is sealed: ${name} keys cannot be written`);
    return source as KeySource & { writer: NonNullable<KeySource["writer"]> };
  }
}

/** Per key of a batch, the answer an import gives it when it is not `imported`. */
function importAnswers(
  source: KeySourceName,
  outcome: BatchOutcome,
): (key: NewKey) => ItemResult<ImportStatus> | undefined {
  const existing = new Set(outcome.existing);
  if (outcome.ok) return (key) => (existing.has(key) ? { status: "duplicate" } : undefined);
  const left = new Map(outcome.left.map((l) => [l.pubkey, l.reason]));
  const what = batchFailure(source, undefined, outcome);
  return (key) => {
    if (existing.has(key)) return { status: "duplicate" };
    const stays = left.get(key.pubkey);
    return {
      status: "error",
      message:
        stays === undefined
          ? `not imported: ${what}`
          : `not imported, and left in the ${source} source (its removal failed: ${stays}); it is not loaded: delete it by hand. ${what}`,
    };
  };
}

/** The truth about a failed batch, for an answer: what stopped it, what was undone, what is left. */
export function batchFailure(
  source: KeySourceName,
  size: number | undefined,
  outcome: Extract<BatchOutcome, { ok: false }>,
): string {
  const { stop, removed, left } = outcome;
  const cause =
    stop.kind === "failed"
      ? `writing ${stop.pubkey} to the ${source} source failed (${stop.reason})`
      : "the request ran out of time before its keys were written";
  const of = size === undefined ? "" : ` of ${size}`;
  const undone = `${removed.length}${of} key${removed.length === 1 ? "" : "s"} this request had written ${removed.length === 1 ? "was" : "were"} removed`;
  const rest =
    left.length === 0
      ? ""
      : `; ${left.length} could not be removed and ${left.length === 1 ? "stays" : "stay"} in the source, not loaded: ${left.map((l) => l.pubkey).join(", ")} (delete by hand)`;
  return `${cause}; ${undone}${rest}`;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
