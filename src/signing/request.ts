import type { SigningOperation } from "./operations";

/** What anti-slashing needs to know about a request: only blocks and attestations carry it. */
export type SlashableMessage =
  | { readonly kind: "block"; readonly slot: bigint }
  | { readonly kind: "attestation"; readonly sourceEpoch: bigint; readonly targetEpoch: bigint };

/** A validated sign request: the operation, its computed signing root, and slashing facts. */
export interface SigningRequest {
  readonly operation: SigningOperation;
  /** 32 bytes, always computed from the payload, never taken from the client. */
  readonly signingRoot: Uint8Array;
  readonly slashable?: SlashableMessage;
  /** From fork_info; absent for VALIDATOR_REGISTRATION. */
  readonly genesisValidatorsRoot?: Uint8Array;
}
