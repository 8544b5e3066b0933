/** The signing operations of the spec, as policies and metrics name them. */
export const SIGNING_OPERATIONS = [
  "AGGREGATION_SLOT",
  "AGGREGATE_AND_PROOF",
  "ATTESTATION",
  "BLOCK_V2",
  "RANDAO_REVEAL",
  "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
  "SYNC_COMMITTEE_MESSAGE",
  "SYNC_COMMITTEE_SELECTION_PROOF",
  "VALIDATOR_REGISTRATION",
  "VOLUNTARY_EXIT",
] as const;

export type SigningOperation = (typeof SIGNING_OPERATIONS)[number];

export function isSigningOperation(name: string): name is SigningOperation {
  return (SIGNING_OPERATIONS as readonly string[]).includes(name);
}
