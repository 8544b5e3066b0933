/**
 * The signing operations of the spec, as policies, metrics and traces name them: one per signed
 * message, aliases (BLOCK, AGGREGATE_AND_PROOF_V2, PAYLOAD_ATTESTATION, REQUEST_AUTH) folded into
 * their operation. The Gloas ones (BUILDER_REQUEST_AUTH … PROPOSER_PREFERENCES) carry no slashing
 * condition.
 */
export const SIGNING_OPERATIONS = [
  "AGGREGATION_SLOT",
  "AGGREGATE_AND_PROOF",
  "ATTESTATION",
  "BLOCK_V2",
  "BUILDER_REQUEST_AUTH",
  "EXECUTION_PAYLOAD_BID",
  "EXECUTION_PAYLOAD_ENVELOPE",
  "PAYLOAD_ATTESTATION_MESSAGE",
  "PROPOSER_PREFERENCES",
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
