/**
 * Where one operator's unseal share is wrapped (docs/architecture.md, "Seal lifecycle"): an AWS KMS
 * key or an age recipient.
 */
export type WrapSpec =
  | { readonly kind: "awskms"; readonly keyArn: string }
  | { readonly kind: "age"; readonly recipient: string };

/**
 * What a wrapped share is bound to. For KMS it becomes the encryption context (Decrypt must
 * present the same); age has no associated data, and the share digest check covers the binding.
 */
export interface ShareContext {
  readonly sealId: string;
  readonly operator: string;
}

/** A wrap or unwrap failure. The message is safe to show and log: it never contains a share. */
export class WrapError extends Error {
  override readonly name = "WrapError";
}
