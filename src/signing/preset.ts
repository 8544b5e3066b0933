/**
 * Consensus-spec presets: the compile-time constants (`PRESET_BASE` of a chain's config) that
 * shape the SSZ containers sigil hashes and the length of an epoch. Every constant any signed
 * container reaches, with the values of consensus-specs `presets/mainnet` and `presets/minimal`
 * (checked against @lodestar/params in tests). The containers of each preset are built once
 * (ssz.ts, `presetTypes`); a network names its preset (network.ts).
 */
export type PresetName = "mainnet" | "minimal";

export interface Preset {
  readonly PRESET_BASE: PresetName;
  readonly SLOTS_PER_EPOCH: number;
  readonly MAX_COMMITTEES_PER_SLOT: number;
  readonly MAX_VALIDATORS_PER_COMMITTEE: number;
  readonly MAX_PROPOSER_SLASHINGS: number;
  readonly MAX_ATTESTER_SLASHINGS: number;
  readonly MAX_ATTESTATIONS: number;
  readonly MAX_DEPOSITS: number;
  readonly MAX_VOLUNTARY_EXITS: number;
  readonly SYNC_COMMITTEE_SIZE: number;
}

/** The preset constants a container uses, by their spec names (also the keys a spec config may repeat). */
export const PRESET_KEYS = [
  "SLOTS_PER_EPOCH",
  "MAX_COMMITTEES_PER_SLOT",
  "MAX_VALIDATORS_PER_COMMITTEE",
  "MAX_PROPOSER_SLASHINGS",
  "MAX_ATTESTER_SLASHINGS",
  "MAX_ATTESTATIONS",
  "MAX_DEPOSITS",
  "MAX_VOLUNTARY_EXITS",
  "SYNC_COMMITTEE_SIZE",
] as const satisfies readonly (keyof Preset)[];

export const PRESETS: Readonly<Record<PresetName, Preset>> = {
  mainnet: {
    PRESET_BASE: "mainnet",
    SLOTS_PER_EPOCH: 32,
    MAX_COMMITTEES_PER_SLOT: 64,
    MAX_VALIDATORS_PER_COMMITTEE: 2048,
    MAX_PROPOSER_SLASHINGS: 16,
    MAX_ATTESTER_SLASHINGS: 2,
    MAX_ATTESTATIONS: 128,
    MAX_DEPOSITS: 16,
    MAX_VOLUNTARY_EXITS: 16,
    SYNC_COMMITTEE_SIZE: 512,
  },
  minimal: {
    PRESET_BASE: "minimal",
    SLOTS_PER_EPOCH: 8,
    MAX_COMMITTEES_PER_SLOT: 4,
    MAX_VALIDATORS_PER_COMMITTEE: 2048,
    MAX_PROPOSER_SLASHINGS: 16,
    MAX_ATTESTER_SLASHINGS: 2,
    MAX_ATTESTATIONS: 128,
    MAX_DEPOSITS: 16,
    MAX_VOLUNTARY_EXITS: 16,
    SYNC_COMMITTEE_SIZE: 32,
  },
};

/**
 * Spec constants (the same in every preset) that containers use; a spec config answered by a
 * beacon node's /eth/v1/config/spec repeats them too.
 */
export const SPEC_CONSTANTS: {
  readonly DEPOSIT_CONTRACT_TREE_DEPTH: number;
  readonly SYNC_COMMITTEE_SUBNET_COUNT: number;
} = {
  DEPOSIT_CONTRACT_TREE_DEPTH: 32,
  SYNC_COMMITTEE_SUBNET_COUNT: 4,
};

export function isPresetName(value: string): value is PresetName {
  return value === "mainnet" || value === "minimal";
}

/**
 * `build` memoized per preset: what a preset shapes (its containers, its request types) is built
 * on first use and shared afterwards, one set per preset.
 */
export function perPreset<T>(build: (preset: Preset) => T): (preset: Preset) => T {
  const built = new Map<Preset, T>();
  return (preset) => {
    let value = built.get(preset);
    if (value === undefined) {
      value = build(preset);
      built.set(preset, value);
    }
    return value;
  };
}
