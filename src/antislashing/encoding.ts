/**
 * Small, dependency-free helpers shared by the slashing protection rules, the interchange codec and
 * the backends: hex <-> bytes, uint64 range checks and the validation of check-and-insert inputs.
 */

import type { AttestationVote, BlockProposal, InterchangeValidator } from "./store";
import { SlashingImportError } from "./store";

export const UINT64_MAX = (1n << 64n) - 1n;

/** 0x + 96 lower-case hex (a compressed BLS12-381 G1 public key), as store.ts defines PubkeyHex. */
export const PUBKEY_HEX = /^0x[0-9a-f]{96}$/;

export function isUint64(value: bigint): boolean {
  return value >= 0n && value <= UINT64_MAX;
}

/** 0x + lower-case hex, its parser and byte comparison (wire/hex.ts), as this feature names them. */
export { bytesEqual, fromHex as hexToBytes, toHex as bytesToHex } from "../wire/hex";

function assertUint64(what: string, value: bigint): void {
  if (typeof value !== "bigint" || !isUint64(value)) {
    throw new RangeError(`${what} must be a uint64 bigint, got ${String(value)}`);
  }
}

export function assertRoot(what: string, root: Uint8Array): void {
  if (!(root instanceof Uint8Array) || root.length !== 32) {
    throw new TypeError(`${what} must be 32 bytes`);
  }
}

export function assertPubkey(pubkey: string): void {
  if (typeof pubkey !== "string" || !PUBKEY_HEX.test(pubkey)) {
    throw new TypeError(
      `validator pubkey must be 0x + 96 lower-case hex, got ${JSON.stringify(pubkey)}`,
    );
  }
}

/** Throws (TypeError/RangeError) on a malformed request; a store never records one. */
export function assertBlockProposal(gvr: Uint8Array, proposal: BlockProposal): void {
  assertRoot("genesis validators root", gvr);
  assertPubkey(proposal.pubkey);
  assertUint64("slot", proposal.slot);
  assertRoot("block signing root", proposal.signingRoot);
}

/** Throws (TypeError/RangeError) on a malformed request; a store never records one. */
export function assertAttestationVote(gvr: Uint8Array, vote: AttestationVote): void {
  assertRoot("genesis validators root", gvr);
  assertPubkey(vote.pubkey);
  assertUint64("source epoch", vote.sourceEpoch);
  assertUint64("target epoch", vote.targetEpoch);
  assertRoot("attestation signing root", vote.signingRoot);
}

/** Every field of an imported validator, checked before anything is written. */
export function checkImportedValidator(v: InterchangeValidator, index: number): void {
  const at = `data[${index}]`;
  if (typeof v.pubkey !== "string" || !PUBKEY_HEX.test(v.pubkey)) {
    throw new SlashingImportError(
      `${at}.pubkey: ${JSON.stringify(v.pubkey)} is not 0x + 96 lower-case hex`,
    );
  }
  for (const b of v.blocks) {
    if (!isUint64(b.slot)) throw new SlashingImportError(`${at}: slot ${b.slot} is not a uint64`);
    if (b.signingRoot !== undefined && b.signingRoot.length !== 32) {
      throw new SlashingImportError(`${at}: block signing root is not 32 bytes`);
    }
  }
  for (const a of v.attestations) {
    if (!isUint64(a.sourceEpoch) || !isUint64(a.targetEpoch)) {
      throw new SlashingImportError(
        `${at}: epochs ${a.sourceEpoch}/${a.targetEpoch} are not uint64`,
      );
    }
    if (a.signingRoot !== undefined && a.signingRoot.length !== 32) {
      throw new SlashingImportError(`${at}: attestation signing root is not 32 bytes`);
    }
  }
  for (const [name, value] of Object.entries(v.floors ?? {})) {
    if (value !== undefined && (typeof value !== "bigint" || !isUint64(value))) {
      throw new SlashingImportError(`${at}: floor ${name} ${String(value)} is not a uint64`);
    }
  }
}
