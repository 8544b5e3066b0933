import type { BlsBackend, BlsSecretKey } from "../bls/backend";
import { toHex } from "../wire/hex";
import type { ImportStatus, ItemResult } from "./import-request";
import type { KeyStore } from "./key-store";
import { decryptKeystore, keystoreFailureReason, keystorePubkey } from "./keystore";
import type { Semaphore } from "./semaphore";

export interface ImportBatch {
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  /** Bounds the CPU-heavy KDFs. */
  readonly decryption: Semaphore;
  /** Pubkeys already taken by earlier items of the same request. */
  readonly seen: Set<string>;
  /**
   * The route's key rule: why the caller may not import this pubkey, or undefined. Checked before
   * anything else is said about the key, so an answer never tells whether a hidden key exists.
   */
  readonly refusal?: (pubkey: string) => string | undefined;
}

export type OpenedKeystore =
  | {
      readonly ok: true;
      readonly pubkey: string;
      readonly key: BlsSecretKey;
      readonly secret: Uint8Array;
    }
  | {
      readonly ok: false;
      readonly result: ItemResult<ImportStatus>;
      /** The key the keystore is for, when known: as it claims, or as it decrypted. */
      readonly pubkey?: string;
    };

/**
 * One keystore of an import request, up to the point where it would be stored: parsed,
 * decrypted, checked against its claimed pubkey, and not a duplicate of a loaded key or of an
 * earlier item. On success the caller owns `secret` and must zero it.
 */
const MISMATCH = "the keystore's pubkey does not match its decrypted key";

export async function openImportedKeystore(
  text: string,
  password: string,
  batch: ImportBatch,
): Promise<OpenedKeystore> {
  let claimed: string | undefined;
  const fail = (message: string, pubkey = claimed): OpenedKeystore => ({
    ok: false,
    result: { status: "error", message },
    ...(pubkey ? { pubkey } : {}),
  });
  const duplicate = (pubkey = claimed): OpenedKeystore => ({
    ok: false,
    result: { status: "duplicate" },
    ...(pubkey ? { pubkey } : {}),
  });
  let keystore: unknown;
  try {
    keystore = JSON.parse(text);
  } catch {
    return fail("keystore is not valid JSON");
  }
  try {
    claimed = keystorePubkey(keystore);
  } catch (error) {
    return fail(keystoreFailureReason(error));
  }
  const taken = (pubkey: string) => batch.seen.has(pubkey) || batch.keys.get(pubkey) !== undefined;
  const refused = (pubkey: string) => {
    const reason = batch.refusal?.(pubkey);
    return reason === undefined ? undefined : fail(`not allowed: ${reason}`, pubkey);
  };
  const refusedClaim = claimed ? refused(claimed) : undefined;
  if (refusedClaim) return refusedClaim;
  if (claimed && taken(claimed)) return duplicate();
  if (claimed) batch.seen.add(claimed);
  let secret: Uint8Array;
  try {
    secret = await batch.decryption.run(() => decryptKeystore(keystore, password));
  } catch (error) {
    return fail(keystoreFailureReason(error));
  }
  let key: BlsSecretKey;
  try {
    key = batch.bls.importSecretKey(secret);
  } catch (error) {
    secret.fill(0);
    return fail(keystoreFailureReason(error));
  }
  const pubkey = toHex(key.publicKey);
  const refusedKey = claimed ? undefined : refused(pubkey);
  if (refusedKey || (claimed && claimed !== pubkey) || (!claimed && taken(pubkey))) {
    secret.fill(0);
    batch.bls.forget?.(key);
    if (refusedKey) return refusedKey;
    // A keystore that lies about its key is for no key of the request.
    if (claimed) return { ok: false, result: { status: "error", message: MISMATCH } };
    return duplicate(pubkey);
  }
  batch.seen.add(pubkey);
  return { ok: true, pubkey, key, secret };
}
