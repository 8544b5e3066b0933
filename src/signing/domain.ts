/**
 * Signing domains and roots (consensus specs: compute_fork_data_root, compute_domain,
 * compute_signing_root, get_domain), plus the domains sigil pins to the network.
 */
import type { ValueOf } from "@chainsafe/ssz";
import { bytesEqual } from "../wire/hex";
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

/**
 * domain_type (4 bytes) ‖ fork_data_root[:28]. A validator client asks for a handful of domains
 * (one per message type and fork), so the last few are remembered: the fork data root is a
 * SHA-256 per request otherwise. Compared byte for byte, so a different input never shares an
 * entry; the returned bytes are shared, and every caller only reads them.
 */
export function computeDomain(
  domainType: Uint8Array,
  forkVersion: Uint8Array,
  genesisValidatorsRoot: Uint8Array,
): Uint8Array {
  for (const entry of recentDomains) {
    if (
      bytesEqual(entry.domainType, domainType) &&
      bytesEqual(entry.forkVersion, forkVersion) &&
      bytesEqual(entry.genesisValidatorsRoot, genesisValidatorsRoot)
    ) {
      return entry.domain;
    }
  }
  const domain = new Uint8Array(32);
  domain.set(domainType.subarray(0, 4), 0);
  domain.set(computeForkDataRoot(forkVersion, genesisValidatorsRoot).subarray(0, 28), 4);
  if (recentDomains.length >= RECENT_DOMAINS) recentDomains.pop();
  recentDomains.unshift({
    domainType: domainType.slice(),
    forkVersion: forkVersion.slice(),
    genesisValidatorsRoot: genesisValidatorsRoot.slice(),
    domain,
  });
  return domain;
}

const RECENT_DOMAINS = 16;
const recentDomains: {
  domainType: Uint8Array;
  forkVersion: Uint8Array;
  genesisValidatorsRoot: Uint8Array;
  domain: Uint8Array;
}[] = [];

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
