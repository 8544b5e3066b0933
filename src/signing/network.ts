import { fromHex } from "../wire/hex";
import { PRESETS, type Preset } from "./preset";

/**
 * Network constants that pin signing domains regardless of the `fork_info` a client sends:
 * VALIDATOR_REGISTRATION and BUILDER_REQUEST_AUTH (builder domains over the genesis fork version)
 * and VOLUNTARY_EXIT from Deneb on (Capella fork version, EIP-7044). The Gloas fork version and
 * epoch tell which container a bare AGGREGATE_AND_PROOF (no `version`) is hashed with. They also name the chain slashing protection is bound
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
  /** Unknown for a devnet whose spec config does not name it. */
  readonly gloasForkVersion: Uint8Array | undefined;
  /** FAR_FUTURE_EPOCH (2^64-1) until the network schedules Gloas. */
  readonly gloasForkEpoch: bigint;
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

/** A fork that is not scheduled (consensus-specs FAR_FUTURE_EPOCH). */
export const FAR_FUTURE_EPOCH = 2n ** 64n - 1n;

export const NETWORKS: Readonly<Record<NetworkName, NetworkConstants>> = {
  mainnet: {
    name: "mainnet",
    genesisForkVersion: version("0x00000000"),
    capellaForkVersion: version("0x03000000"),
    denebForkEpoch: 269568n,
    gloasForkVersion: version("0x07000000"),
    gloasForkEpoch: FAR_FUTURE_EPOCH,
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
    // ethereum/pm#2205; eth-clients/sepolia#126, Lodestar#10119, Teku#11308.
    gloasForkVersion: version("0x90000076"),
    gloasForkEpoch: 353024n,
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
    gloasForkVersion: version("0x80000910"),
    gloasForkEpoch: FAR_FUTURE_EPOCH,
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
  gloas_fork_version?: string;
  /** Until a release ships the schedule: an operator sets it as soon as the fork is announced. */
  gloas_fork_epoch?: number;
  genesis_validators_root?: string;
  genesis_time?: number;
  seconds_per_slot?: number;
}

/** network_config keys that schedule a fork of the named network rather than describe another chain. */
const FORK_SCHEDULE_KEYS: readonly string[] = [
  "gloas_fork_version",
  "gloas_fork_epoch",
] satisfies (keyof NetworkOverrides)[];

/**
 * The named network, or a devnet described by `network_config` on top of it. Keys that only
 * schedule a fork (`gloas_fork_epoch`, `gloas_fork_version`) keep the named network's identity. A devnet is another
 * chain: its genesis validators root and genesis time are never the named network's, so they are
 * unknown unless network_config sets them.
 */
export function resolveNetwork(name: NetworkName, overrides?: NetworkOverrides): NetworkConstants {
  const base = NETWORKS[name];
  if (!overrides) return base;
  const gloas = {
    gloasForkVersion: overrides.gloas_fork_version
      ? version(overrides.gloas_fork_version)
      : base.gloasForkVersion,
    gloasForkEpoch:
      overrides.gloas_fork_epoch === undefined
        ? base.gloasForkEpoch
        : BigInt(overrides.gloas_fork_epoch),
  };
  // Scheduling a fork that a release does not know yet keeps the chain: same root, same clock.
  const keys = Object.entries(overrides).filter(([, value]) => value !== undefined);
  if (keys.length > 0 && keys.every(([key]) => FORK_SCHEDULE_KEYS.includes(key))) {
    return { ...base, ...gloas, name: `${name} (fork schedule from network_config)` };
  }
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
    ...gloas,
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
