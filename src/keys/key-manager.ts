import { availableParallelism } from "node:os";
import { join } from "node:path";
import { readInterchange, writeInterchange } from "../antislashing/interchange";
import {
  NothingToExportError,
  SlashingImportError,
  type SlashingStore,
} from "../antislashing/store";
import { type Principal, visibleKeys } from "../auth/authenticator";
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import type { BlsBackend } from "../signing/bls/backend";
import type { KeyStore } from "./key-store";
import { decryptKeystore, KeystoreError, keystorePubkey } from "./keystore";
import { removeFilesDurably, writeFileAtomic } from "./persist";
import { isPubkeyHex, normalizePubkey } from "./pubkey";
import { createSemaphore } from "./semaphore";

export interface KeyManagerDeps {
  keys: KeyStore;
  bls: BlsBackend;
  slashing: SlashingStore;
  /** The first filesystem path: imports are written here, and only keys from here may be deleted. */
  directory: string;
  maxItemsPerRequest: number;
  logger: Logger;
}

export type ImportStatus = "imported" | "duplicate" | "error";
export type DeleteStatus = "deleted" | "not_active" | "not_found" | "error";
export interface ItemResult<S> {
  status: S;
  message?: string;
}

interface ImportRequest {
  keystores: string[];
  passwords: string[];
  slashing_protection?: string;
}

/** The Ethereum Key Manager API's keystore operations over the key store and slashing database. */
export class KeyManagerService {
  // Imports and deletes of the same key never interleave.
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #decryption = createSemaphore(availableParallelism());

  constructor(private readonly deps: KeyManagerDeps) {}

  /** The keys the caller may see (list_keys is evaluated per key). */
  list(
    principal: Principal,
  ): { validating_pubkey: string; derivation_path?: string; readonly: boolean }[] {
    return visibleKeys(principal, "list_keys", this.deps.keys.pubkeys()).map((pubkey) => {
      const entry = this.deps.keys.get(pubkey);
      return { validating_pubkey: pubkey, readonly: entry?.readonly ?? true };
    });
  }

  async import(body: unknown): Promise<{ data: ItemResult<ImportStatus>[] }> {
    const request = this.parseImport(body);
    // Slashing history first: no key may become active before its history is in the database.
    if (request.slashing_protection !== undefined) {
      try {
        await this.deps.slashing.importInterchange(
          await readInterchange(request.slashing_protection),
        );
      } catch (error) {
        if (error instanceof SlashingImportError) {
          throw new SigilError(
            "invalid_request",
            `slashing_protection refused, nothing was imported: ${error.message}`,
          );
        }
        throw error;
      }
    }
    const seen = new Set<string>();
    const data = await Promise.all(
      request.keystores.map((text, i) => this.importOne(text, request.passwords[i] ?? "", seen)),
    );
    return { data };
  }

  async delete(
    body: unknown,
  ): Promise<{ data: ItemResult<DeleteStatus>[]; slashing_protection: string }> {
    const pubkeys = this.parseDelete(body);
    const data: ItemResult<DeleteStatus>[] = [];
    for (const pubkey of pubkeys)
      data.push(await this.withLock(pubkey, () => this.deleteOne(pubkey)));
    const history = await this.exportHistory(pubkeys);
    for (const [i, pubkey] of pubkeys.entries()) {
      const item = data[i];
      if (item?.status === "not_found" && history.withRecords.has(pubkey))
        data[i] = { status: "not_active" };
    }
    return { data, slashing_protection: history.interchange };
  }

  private async importOne(
    text: string,
    password: string,
    seen: Set<string>,
  ): Promise<ItemResult<ImportStatus>> {
    let keystore: unknown;
    try {
      keystore = JSON.parse(text);
    } catch {
      return { status: "error", message: "keystore is not valid JSON" };
    }
    let claimed: string | undefined;
    try {
      claimed = keystorePubkey(keystore);
    } catch (error) {
      return { status: "error", message: reasonOf(error) };
    }
    if (claimed && (seen.has(claimed) || this.deps.keys.get(claimed)))
      return { status: "duplicate" };
    if (claimed) seen.add(claimed);
    let secret: Uint8Array;
    try {
      secret = await this.#decryption.run(() => decryptKeystore(keystore, password));
    } catch (error) {
      return { status: "error", message: reasonOf(error) };
    }
    let key: ReturnType<BlsBackend["importSecretKey"]>;
    try {
      key = this.deps.bls.importSecretKey(secret);
    } catch (error) {
      return { status: "error", message: reasonOf(error) };
    } finally {
      secret.fill(0);
    }
    const pubkey = `0x${Buffer.from(key.publicKey).toString("hex")}`;
    if (claimed && claimed !== pubkey) {
      return { status: "error", message: "the keystore's pubkey does not match its decrypted key" };
    }
    if (!claimed && (seen.has(pubkey) || this.deps.keys.get(pubkey)))
      return { status: "duplicate" };
    seen.add(pubkey);
    return this.withLock(pubkey, async () => {
      if (this.deps.keys.get(pubkey)) return { status: "duplicate" as const };
      try {
        this.persist(pubkey, text, password);
      } catch (error) {
        this.deps.logger.error("could not write an imported keystore", {
          pubkey,
          error: reasonOf(error),
        });
        return {
          status: "error" as const,
          message: `could not write the keystore to ${this.deps.directory}`,
        };
      }
      this.deps.keys.add({ pubkey, key, source: "filesystem", readonly: false });
      this.deps.logger.info("keystore imported", { pubkey });
      return { status: "imported" as const };
    });
  }

  /** Keystore and password first, the descriptor last: without a descriptor nothing is loaded. */
  private persist(pubkey: string, keystoreText: string, password: string): void {
    const paths = this.filesOf(pubkey);
    writeFileAtomic(paths.keystore, keystoreText);
    writeFileAtomic(paths.password, password);
    writeFileAtomic(
      paths.descriptor,
      [
        "# Imported through the Key Manager API; deleting the key through the API removes these files.",
        "type: file-keystore",
        "keyType: BLS",
        `keystoreFile: ${pubkey}.json`,
        `keystorePasswordFile: ${pubkey}.password`,
        "",
      ].join("\n"),
    );
  }

  private filesOf(pubkey: string) {
    const base = join(this.deps.directory, pubkey);
    return { descriptor: `${base}.yaml`, keystore: `${base}.json`, password: `${base}.password` };
  }

  private async deleteOne(pubkey: string): Promise<ItemResult<DeleteStatus>> {
    const entry = this.deps.keys.get(pubkey);
    if (!entry) return { status: "not_found" };
    if (entry.readonly)
      return {
        status: "error",
        message:
          "key is read-only: its descriptor is not a Key Manager file (<pubkey>.yaml in the first key directory)",
      };
    const files = this.filesOf(pubkey);
    try {
      // The descriptor goes first, so the key cannot come back at the next start-up.
      removeFilesDurably([files.descriptor]);
    } catch (error) {
      this.deps.logger.error("could not delete a key descriptor", {
        pubkey,
        error: reasonOf(error),
      });
      return { status: "error", message: "could not delete the key's files; the key stays active" };
    }
    this.deps.keys.remove(pubkey);
    try {
      removeFilesDurably([files.keystore, files.password]);
    } catch (error) {
      this.deps.logger.warn("key deleted, but its keystore files remain", {
        pubkey,
        error: reasonOf(error),
      });
    }
    this.deps.logger.info("key deleted", { pubkey });
    return { status: "deleted" };
  }

  private async exportHistory(
    pubkeys: string[],
  ): Promise<{ interchange: string; withRecords: Set<string> }> {
    let chunks = "";
    const withRecords = new Set<string>();
    try {
      const source = await this.deps.slashing.exportInterchange(pubkeys);
      const counted = {
        metadata: source.metadata,
        validators: async function* () {
          for await (const validator of source.validators()) {
            if (validator.blocks.length > 0 || validator.attestations.length > 0)
              withRecords.add(validator.pubkey);
            yield validator;
          }
        },
      };
      await writeInterchange(counted, (chunk: string) => {
        chunks += chunk;
      });
      return { interchange: chunks, withRecords };
    } catch (error) {
      if (!(error instanceof NothingToExportError)) throw error;
      // Nothing was ever signed or imported, so the history is empty; the root is unknown.
      const empty = {
        metadata: {
          interchange_format_version: "5",
          genesis_validators_root: `0x${"00".repeat(32)}`,
        },
        data: [],
      };
      return { interchange: JSON.stringify(empty), withRecords };
    }
  }

  private parseImport(body: unknown): ImportRequest {
    if (typeof body !== "object" || body === null)
      throw invalid("request body must be a JSON object");
    const { keystores, passwords, slashing_protection } = body as Record<string, unknown>;
    if (!isStringArray(keystores))
      throw invalid("keystores must be an array of keystore JSON strings");
    if (!isStringArray(passwords)) throw invalid("passwords must be an array of strings");
    if (keystores.length !== passwords.length) {
      throw invalid(
        `keystores (${keystores.length}) and passwords (${passwords.length}) must have the same length`,
      );
    }
    this.checkCount(keystores.length);
    if (
      slashing_protection !== undefined &&
      slashing_protection !== null &&
      typeof slashing_protection !== "string"
    ) {
      throw invalid("slashing_protection must be an EIP-3076 interchange as a JSON string");
    }
    return { keystores, passwords, slashing_protection: slashing_protection ?? undefined };
  }

  private parseDelete(body: unknown): string[] {
    if (typeof body !== "object" || body === null)
      throw invalid("request body must be a JSON object");
    const { pubkeys } = body as Record<string, unknown>;
    if (!isStringArray(pubkeys)) throw invalid("pubkeys must be an array of public keys");
    this.checkCount(pubkeys.length);
    for (const [i, pubkey] of pubkeys.entries()) {
      if (!isPubkeyHex(pubkey))
        throw invalid(`pubkeys[${i}] must be 0x followed by 96 hex characters`);
    }
    return pubkeys.map(normalizePubkey);
  }

  private checkCount(count: number): void {
    if (count > this.deps.maxItemsPerRequest) {
      throw invalid(
        `${count} items is more than key_manager_api.max_items_per_request (${this.deps.maxItemsPerRequest})`,
      );
    }
  }

  private async withLock<T>(pubkey: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(pubkey) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => {});
    this.#locks.set(pubkey, settled);
    try {
      return await next;
    } finally {
      if (this.#locks.get(pubkey) === settled) this.#locks.delete(pubkey);
    }
  }
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function invalid(message: string): SigilError {
  return new SigilError("invalid_request", message);
}

function reasonOf(error: unknown): string {
  if (error instanceof KeystoreError) return error.reason;
  return error instanceof Error ? error.message : String(error);
}
