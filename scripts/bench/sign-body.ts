// The ATTESTATION request bodies of sign-http, as JSON text built without hashing (the load
// generator shares the 2 cores with the signer, so it must be cheap). Same shape and constants as
// test/support/slashing.ts's attestationRequest; sign-http checks that they agree before it runs.
//
// Request k goes to validator k mod V with source epoch floor(k / V) and target one above it
// (counted from FIRST_EPOCH): every validator's votes rise by one epoch per round, so no request
// is ever slashable, however many rounds a run makes.

export const FIRST_EPOCH = 370000;
const GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
const FORK = { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" };

/** The body for `source`/`target` epochs relative to FIRST_EPOCH, `salt` varying the block root. */
export function attestationBody(source: number, target: number, salt: number): string {
  const slot = (FIRST_EPOCH + target) * 32;
  return (
    `{"type":"ATTESTATION","fork_info":{"fork":{"previous_version":"${FORK.previous_version}",` +
    `"current_version":"${FORK.current_version}","epoch":"${FORK.epoch}"},` +
    `"genesis_validators_root":"${GVR}"},"attestation":{"slot":"${slot}","index":"0",` +
    `"beacon_block_root":"0x${salt.toString(16).padStart(64, "0")}",` +
    `"source":{"epoch":"${FIRST_EPOCH + source}","root":"0x${"22".repeat(32)}"},` +
    `"target":{"epoch":"${FIRST_EPOCH + target}","root":"0x${"33".repeat(32)}"}}}`
  );
}

/** Request number `k` of a run over `validators` validators: which validator, which body. */
export function requestFor(k: number, validators: number): { validator: number; body: string } {
  const round = Math.floor(k / validators);
  return { validator: k % validators, body: attestationBody(round, round + 1, k) };
}
