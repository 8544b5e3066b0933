import { fromHex } from "../wire/hex";
import { PRESETS, type Preset } from "./preset";

/**
 * Network constants that pin two signing domains regardless of the `fork_info` a client sends:
 * VALIDATOR_REGISTRATION (builder domain over the genesis fork version) and VOLUNTARY_EXIT from
 * Deneb on (Capella fork version, EIP-7044). They also name the chain slashing protection is bound
 * to: its genesis validators root (written into the database at creation, checked at every start)
 * and its genesis time, slot length and epoch length (the wall-clock epoch behind the future-epoch
 * bound). And they carry the chain's preset, whose containers and slots per epoch every request is
 * decoded with. Values are checked against @lodestar/config in tests. A devnet is a named network
 * with `network_config` overrides, or a consensus-spec config.yaml (spec-config.ts).
 */
export type NetworkName = "mainnet" | "hoodi" | "sepolia";

export interface NetworkConstants {
  readonly name: string;
  readonly genesisForkVersion: Uint8Array;
  readonly capellaForkVersion: Uint8Array;
  readonly denebForkEpoch: bigint;
  /** The chain's identity; unknown for a custom network whose network_config does not set it. */
  readonly genesisValidatorsRoot: Uint8Array | undefined;
  /** Unix seconds of slot 0; unknown for a custom network whose network_config does not set it. */
  readonly genesisTime: bigint | undefined;
  /**
   * Set when genesisTime is only the earliest genesis the chain's spec config allows
   * (MIN_GENESIS_TIME), not its genesis: the wall-clock epoch is then at or after the chain's.
   */
  readonly genesisTimeIsLowerBound?: boolean;
  readonly secondsPerSlot: bigint;
  /** The consensus-spec preset (PRESET_BASE): containers and SLOTS_PER_EPOCH. */
  readonly preset: Preset;
  /**
   * The execution chain id (DEPOSIT_CHAIN_ID), signed into Commit-Boost requests; unknown for a
   * devnet whose spec config does not give it.
   */
  readonly depositChainId?: bigint;
}

const version = fromHex;

export const NETWORKS: Readonly<Record<NetworkName, NetworkConstants>> = {
  mainnet: {
    name: "mainnet",
    genesisForkVersion: version("0x00000000"),
    capellaForkVersion: version("0x03000000"),
    denebForkEpoch: 269568n,
    genesisValidatorsRoot: version(
      "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95",
    ),
    genesisTime: 1606824023n,
    secondsPerSlot: 12n,
    preset: PRESETS.mainnet,
    depositChainId: 1n,
  },
  sepolia: {
    name: "sepolia",
    genesisForkVersion: version("0x90000069"),
    capellaForkVersion: version("0x90000072"),
    denebForkEpoch: 132608n,
    genesisValidatorsRoot: version(
      "0xd8ea171f3c94aea21ebc42a1ed61052acf3f9209c00e4efbaaddac09ed9b8078",
    ),
    genesisTime: 1655733600n,
    secondsPerSlot: 12n,
    preset: PRESETS.mainnet,
    depositChainId: 11155111n,
  },
  hoodi: {
    name: "hoodi",
    genesisForkVersion: version("0x10000910"),
    capellaForkVersion: version("0x40000910"),
    denebForkEpoch: 0n,
    genesisValidatorsRoot: version(
      "0x212f13fc4df078b6cb7db228f1c8307566dcecf900867401a92023d7ba99cb5f",
    ),
    genesisTime: 1742213400n,
    secondsPerSlot: 12n,
    preset: PRESETS.mainnet,
    depositChainId: 560048n,
  },
};

/** Overrides from `network_config`, for devnets whose constants differ from the named network. */
export interface NetworkOverrides {
  genesis_fork_version?: string;
  capella_fork_version?: string;
  deneb_fork_epoch?: number;
  genesis_validators_root?: string;
  genesis_time?: number;
  seconds_per_slot?: number;
}

/**
 * The named network, or a devnet described by `network_config` on top of it. A devnet is another
 * chain: its genesis validators root and genesis time are never the named network's, so they are
 * unknown unless network_config sets them.
 */
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
    genesisValidatorsRoot:
      overrides.genesis_validators_root === undefined
        ? undefined
        : version(overrides.genesis_validators_root),
    genesisTime: overrides.genesis_time === undefined ? undefined : BigInt(overrides.genesis_time),
    secondsPerSlot: BigInt(overrides.seconds_per_slot ?? 12),
    preset: base.preset,
    // Another genesis fork version is another chain, whose id is not the named network's.
    ...(overrides.genesis_fork_version === undefined && base.depositChainId !== undefined
      ? { depositChainId: base.depositChainId }
      : {}),
  };
}

export function isNetworkName(value: string): value is NetworkName {
  return Object.hasOwn(NETWORKS, value);
}
