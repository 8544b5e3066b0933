import { SigilError } from "../errors";
import { isPubkeyHex, normalizePubkey } from "../wire/pubkey";

/** The body of a keystore import (Key Manager API and cloud_kv alike). */
export interface ImportRequest {
  keystores: string[];
  passwords: string[];
  slashing_protection?: string;
}

export type ImportStatus = "imported" | "duplicate" | "error";
export type DeleteStatus = "deleted" | "not_active" | "not_found" | "error";
export interface ItemResult<S> {
  status: S;
  message?: string;
}

/** `limitName` is the config option that bounds the item count, named in the refusal. */
export function parseImportRequest(
  body: unknown,
  maxItems: number,
  limitName: string,
): ImportRequest {
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
  checkCount(keystores.length, maxItems, limitName);
  if (
    slashing_protection !== undefined &&
    slashing_protection !== null &&
    typeof slashing_protection !== "string"
  ) {
    throw invalid("slashing_protection must be an EIP-3076 interchange as a JSON string");
  }
  return { keystores, passwords, slashing_protection: slashing_protection ?? undefined };
}

/** `{pubkeys: [...]}` → normalised pubkeys. */
export function parseDeleteRequest(body: unknown, maxItems: number, limitName: string): string[] {
  if (typeof body !== "object" || body === null)
    throw invalid("request body must be a JSON object");
  const { pubkeys } = body as Record<string, unknown>;
  if (!isStringArray(pubkeys)) throw invalid("pubkeys must be an array of public keys");
  checkCount(pubkeys.length, maxItems, limitName);
  for (const [i, pubkey] of pubkeys.entries()) {
    if (!isPubkeyHex(pubkey))
      throw invalid(`pubkeys[${i}] must be 0x followed by 96 hex characters`);
  }
  return pubkeys.map(normalizePubkey);
}

function checkCount(count: number, maxItems: number, limitName: string): void {
  if (count > maxItems) throw invalid(`${count} items is more than ${limitName} (${maxItems})`);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function invalid(message: string): SigilError {
  return new SigilError("invalid_request", message);
}
