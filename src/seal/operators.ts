import { hashToken } from "../auth/tokens";
import { SigilError } from "../errors";
import { invalid } from "./errors";
import type { OperatorRecord, SealRecord } from "./record";
import { MASTER_KEY_BYTES, shareDigest } from "./shares";

/** Operators as the seal routes see them: by credential, and their shares checked on arrival. */

export function operatorByCredential(record: SealRecord, credential: string): OperatorRecord {
  const hash = hashToken(credential);
  const operator = record.operators.find((op) => op.credentialHash === hash);
  if (!operator)
    throw new SigilError(
      "invalid_token",
      "invalid operator credential (unknown, or replaced by a quorum rotation)",
    );
  return operator;
}

/** Names the problem before anything is combined: another operator's share, or a bad one. */
export function checkShareBelongs(
  record: SealRecord,
  operator: OperatorRecord,
  share: Uint8Array,
): void {
  if (shareDigest(record.sealId, operator.id, share) === operator.shareDigest) return;
  const owner = record.operators.find(
    (op) => op.id !== operator.id && shareDigest(record.sealId, op.id, share) === op.shareDigest,
  );
  share.fill(0);
  if (owner) {
    throw new SigilError(
      "invalid_share",
      `this share belongs to ${owner.id}, not to ${operator.id}: each operator submits their own share; nothing was recorded`,
    );
  }
  throw new SigilError(
    "invalid_share",
    `this share does not match ${operator.id}'s check value (corrupted, unwrapped with the wrong key, or from an earlier split); nothing was recorded`,
  );
}

/** A share as the body carries it (base64, checked by ShareRequest), decoded and sized. */
export function decodeShare(base64: string): Uint8Array {
  const bytes = new Uint8Array(Buffer.from(base64, "base64"));
  if (bytes.length !== MASTER_KEY_BYTES + 1) {
    bytes.fill(0);
    throw invalid(`share: must be ${MASTER_KEY_BYTES + 1} bytes once base64-decoded`);
  }
  return bytes;
}

export function replaceOperator(record: SealRecord, operator: OperatorRecord): SealRecord {
  return {
    ...record,
    operators: record.operators.map((op) => (op.id === operator.id ? operator : op)),
  };
}
