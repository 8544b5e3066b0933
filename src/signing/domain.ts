/**
 * Signing domains and roots (consensus specs: compute_fork_data_root, compute_domain,
 * compute_signing_root, get_domain), plus the domains sigil pins to the network.
 */
import type { ValueOf } from "@chainsafe/ssz";
import type { NetworkConstants } from "./network";
import { forkDataRoot, signingDataRoot } from "./roots";
import { DOMAIN_VOLUNTARY_EXIT, type ForkInfo } from "./ssz";

export type ForkInfoValue = ValueOf<typeof ForkInfo>;
export type ForkValue = ForkInfoValue["fork"];

const ZERO_ROOT = new Uint8Array(32);

export function computeForkDataRoot(
  currentVersion: Uint8Array,
  genesisValidatorsRoot: Uint8Array,
): Uint8Array {
  return forkDataRoot(currentVersion, genesisValidatorsRoot);
}

/** domain_type (4 bytes) ‖ fork_data_root[:28]. */
export function computeDomain(
  domainType: Uint8Array,
  forkVersion: Uint8Array,
  genesisValidatorsRoot: Uint8Array,
): Uint8Array {
  const domain = new Uint8Array(32);
  domain.set(domainType.subarray(0, 4), 0);
  domain.set(computeForkDataRoot(forkVersion, genesisValidatorsRoot).subarray(0, 28), 4);
  return domain;
}

export function computeSigningRoot(objectRoot: Uint8Array, domain: Uint8Array): Uint8Array {
  return signingDataRoot(objectRoot, domain);
}

/**
 * get_domain's version choice. Works whether the client sends the fork's activation epoch
 * (Lighthouse, Teku, Prysm, Nimbus) or the message's own epoch (Lodestar) as `fork.epoch`.
 */
export function forkVersionAt(fork: ForkValue, messageEpoch: bigint): Uint8Array {
  return messageEpoch < fork.epoch ? fork.previous_version : fork.current_version;
}

export function forkDomain(
  domainType: Uint8Array,
  messageEpoch: bigint,
  forkInfo: ForkInfoValue,
): Uint8Array {
  return computeDomain(
    domainType,
    forkVersionAt(forkInfo.fork, messageEpoch),
    forkInfo.genesis_validators_root,
  );
}

/**
 * The builder API's messages (registrations, Gloas request auth): compute_domain over the
 * network's genesis fork version and a zero root, whatever fork_info says.
 */
export function builderDomain(domainType: Uint8Array, network: NetworkConstants): Uint8Array {
  return computeDomain(domainType, network.genesisForkVersion, ZERO_ROOT);
}

/**
 * EIP-7044: from Deneb on, the chain verifies every voluntary exit with the Capella fork version.
 * The fork_info epoch (activation or current epoch) or the exit epoch reaching Deneb means the
 * exit can only be processed after Deneb, so the Capella domain is the one that will verify.
 */
export function voluntaryExitDomain(
  exitEpoch: bigint,
  forkInfo: ForkInfoValue,
  network: NetworkConstants,
): Uint8Array {
  const latest = exitEpoch > forkInfo.fork.epoch ? exitEpoch : forkInfo.fork.epoch;
  if (latest >= network.denebForkEpoch) {
    return computeDomain(
      DOMAIN_VOLUNTARY_EXIT,
      network.capellaForkVersion,
      forkInfo.genesis_validators_root,
    );
  }
  return forkDomain(DOMAIN_VOLUNTARY_EXIT, exitEpoch, forkInfo);
}
