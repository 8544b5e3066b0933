/**
 * The seal record stored in signer_state (docs/architecture.md, "Seal lifecycle"): who the
 * operators are, their wrapped shares, and the check value of the master key. Never the master key,
 * never a clear share, never a token: registration tokens and operator credentials are kept as
 * SHA-256 hashes.
 */
import { isJsonObject } from "../wire/json";

export const SEAL_RECORD_FORMAT = 1;

export interface OperatorRecord {
  /** "operator-1" … in share order; stable for the life of one split. */
  readonly id: string;
  /** `awskms:<ARN>` or `age:<recipient>`. */
  readonly wrap: string;
  /** Base64 of the wrapped share. */
  readonly wrappedShare: string;
  /** shareDigest(sealId, id, share): lets a submitted share be checked on arrival. */
  readonly shareDigest: string;
  /** Hex SHA-256 of the one-use registration token, until the operator registers. */
  readonly registrationHash?: string;
  /** Hex SHA-256 of the operator credential, once registered. */
  readonly credentialHash?: string;
  readonly registeredAt?: number;
}

export interface SealRecord {
  readonly format: typeof SEAL_RECORD_FORMAT;
  /** Random id of the current split: new at init and at every quorum rotation. */
  readonly sealId: string;
  readonly threshold: number;
  /** checkValue(masterKey): proves a rebuilt master key is the right one. */
  readonly checkValue: string;
  /** Milliseconds since the epoch. */
  readonly initializedAt: number;
  readonly splitAt: number;
  readonly operators: readonly OperatorRecord[];
}

export class SealRecordError extends Error {
  override readonly name = "SealRecordError";
}

export function encodeSealRecord(record: SealRecord): string {
  return JSON.stringify(record);
}

/** Parses and checks a stored record; a damaged one is an error, never a guess. */
export function decodeSealRecord(body: string): SealRecord {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new SealRecordError("the seal record in signer_state is not JSON");
  }
  const fail = (what: string): never => {
    throw new SealRecordError(`the seal record in signer_state is damaged: ${what}`);
  };
  if (!isJsonObject(value)) return fail("not an object");
  if (value.format !== SEAL_RECORD_FORMAT) return fail(`unknown format ${String(value.format)}`);
  const { sealId, threshold, checkValue, initializedAt, splitAt, operators } = value;
  if (typeof sealId !== "string" || !/^[0-9a-f]{32}$/.test(sealId)) return fail("sealId");
  if (typeof checkValue !== "string" || !HEX64.test(checkValue)) return fail("checkValue");
  if (!isTime(initializedAt) || !isTime(splitAt)) return fail("timestamps");
  if (!Array.isArray(operators) || operators.length === 0 || operators.length > 255)
    return fail("operators");
  if (
    typeof threshold !== "number" ||
    !Number.isInteger(threshold) ||
    threshold < 1 ||
    threshold > operators.length
  )
    return fail("threshold");
  const parsed = operators.map((op, i) => decodeOperator(op) ?? fail(`operators[${i}]`));
  if (new Set(parsed.map((op) => op.id)).size !== parsed.length) fail("duplicate operator ids");
  return {
    format: SEAL_RECORD_FORMAT,
    sealId,
    threshold,
    checkValue,
    initializedAt,
    splitAt,
    operators: parsed,
  };
}

const HEX64 = /^[0-9a-f]{64}$/;

function decodeOperator(value: unknown): OperatorRecord | undefined {
  if (!isJsonObject(value)) return undefined;
  const { id, wrap, wrappedShare, shareDigest, registrationHash, credentialHash, registeredAt } =
    value;
  if (typeof id !== "string" || !/^operator-\d{1,3}$/.test(id)) return undefined;
  if (typeof wrap !== "string" || typeof wrappedShare !== "string") return undefined;
  if (typeof shareDigest !== "string" || !HEX64.test(shareDigest)) return undefined;
  if (
    registrationHash !== undefined &&
    (typeof registrationHash !== "string" || !HEX64.test(registrationHash))
  )
    return undefined;
  if (
    credentialHash !== undefined &&
    (typeof credentialHash !== "string" || !HEX64.test(credentialHash))
  )
    return undefined;
  if (registeredAt !== undefined && !isTime(registeredAt)) return undefined;
  return { id, wrap, wrappedShare, shareDigest, registrationHash, credentialHash, registeredAt };
}

function isTime(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
