/**
 * Lodestar as an independent oracle for signing roots: its own container definitions (ssz.gloas'
 * progressive ones included), hashed by the @chainsafe/ssz release sigil uses too (1.9: the
 * first with the progressive types Lodestar 1.50 needs). Test-only: src/ never imports Lodestar.
 */
import { ssz } from "@lodestar/types";

export const toHex = (bytes: Uint8Array): string => `0x${Buffer.from(bytes).toString("hex")}`;
export const fromHex = (hex: string): Uint8Array =>
  new Uint8Array(Buffer.from(hex.replace(/^0x/, ""), "hex"));

/** compute_domain with Lodestar's ForkData container. */
export function lodestarDomain(
  domainType: Uint8Array,
  forkVersion: Uint8Array,
  genesisValidatorsRoot: Uint8Array,
): Uint8Array {
  const forkDataRoot = ssz.phase0.ForkData.hashTreeRoot({
    currentVersion: forkVersion,
    genesisValidatorsRoot,
  });
  const domain = new Uint8Array(32);
  domain.set(domainType.subarray(0, 4), 0);
  domain.set(forkDataRoot.subarray(0, 28), 4);
  return domain;
}

/** compute_signing_root with Lodestar's SigningData container. */
export function lodestarSigningRoot(objectRoot: Uint8Array, domain: Uint8Array): Uint8Array {
  return ssz.phase0.SigningData.hashTreeRoot({ objectRoot, domain });
}

/** A sign request's `fork_info`, as clients send it. */
export function forkInfoJson(
  previous: Uint8Array,
  current: Uint8Array,
  epoch: number,
  genesisValidatorsRoot: string,
) {
  return {
    fork: {
      previous_version: toHex(previous),
      current_version: toHex(current),
      epoch: String(epoch),
    },
    genesis_validators_root: genesisValidatorsRoot,
  };
}
