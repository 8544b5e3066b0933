import { fromHex } from "../wire/hex";

/**
 * Network constants that pin two signing domains regardless of the `fork_info` a client sends:
 * VALIDATOR_REGISTRATION (builder domain over the genesis fork version) and VOLUNTARY_EXIT from
 * Deneb on (Capella fork version, EIP-7044). Values are checked against @lodestar/config in tests.
 */
export type NetworkName = "mainnet" | "hoodi" | "sepolia";

export interface NetworkConstants {
  readonly name: string;
  readonly genesisForkVersion: Uint8Array;
  readonly capellaForkVersion: Uint8Array;
  readonly denebForkEpoch: bigint;
}

const version = fromHex;

export const NETWORKS: Readonly<Record<NetworkName, NetworkConstants>> = {
  mainnet: {
    name: "mainnet",
    genesisForkVersion: version("0x00000000"),
    capellaForkVersion: version("0x03000000"),
    denebForkEpoch: 269568n,
  },
  sepolia: {
    name: "sepolia",
    genesisForkVersion: version("0x90000069"),
    capellaForkVersion: version("0x90000072"),
    denebForkEpoch: 132608n,
  },
  hoodi: {
    name: "hoodi",
    genesisForkVersion: version("0x10000910"),
    capellaForkVersion: version("0x40000910"),
    denebForkEpoch: 0n,
  },
};

/** Overrides from `network_config`, for devnets whose constants differ from the named network. */
export interface NetworkOverrides {
  genesis_fork_version?: string;
  capella_fork_version?: string;
  deneb_fork_epoch?: number;
}

export function resolveNetwork(name: NetworkName, overrides?: NetworkOverrides): NetworkConstants {
  const base = NETWORKS[name];
  if (!overrides) return base;
  return {
    name: `${name} (with network_config)`,
    genesisForkVersion: overrides.genesis_fork_version
      ? version(overrides.genesis_fork_version)
      : base.genesisForkVersion,
    capellaForkVersion: overrides.capella_fork_version
      ? version(overrides.capella_fork_version)
      : base.capellaForkVersion,
    denebForkEpoch:
      overrides.deneb_fork_epoch === undefined
        ? base.denebForkEpoch
        : BigInt(overrides.deneb_fork_epoch),
  };
}
