/**
 * A minimal-preset devnet for tests: its consensus-spec config.yaml (as Kurtosis' ethereum-package
 * writes network-configs/config.yaml for a minimal devnet, and as `lodestar dev` runs), and the
 * Lodestar oracle for it, run in a child process with LODESTAR_PRESET=minimal
 * (lodestar-minimal.ts says why).
 */
import { join } from "node:path";
import type { OracleInput, OracleOutput } from "./lodestar-minimal";

export type { OracleCase, OracleOutput } from "./lodestar-minimal";

/** Fork epochs one apart, so that an epoch counted with 32 slots instead of 8 picks another fork. */
export const DEVNET_FORK_EPOCHS = {
  ALTAIR: 1,
  BELLATRIX: 2,
  CAPELLA: 3,
  DENEB: 4,
  ELECTRA: 5,
  FULU: 6,
} as const;

export const DEVNET_SECONDS_PER_SLOT = 6;

/** The devnet's config.yaml, with the keys and layout of a real one (most of them unread by sigil). */
export function devnetConfigYaml(
  options: {
    minGenesisTime: number;
    extra?: string;
    /** minimal unless told; mainnet for a mainnet-preset devnet. */
    preset?: "mainnet" | "minimal";
    /** Unscheduled (2^64-1) unless told. */
    gloasForkEpoch?: number;
  } = { minGenesisTime: 1_700_000_000 },
): string {
  const e = DEVNET_FORK_EPOCHS;
  const preset = options.preset ?? "minimal";
  return `# Extends the ${preset} preset
PRESET_BASE: '${preset}'
CONFIG_NAME: 'sigil-devnet'

# Transition
TERMINAL_TOTAL_DIFFICULTY: 0
TERMINAL_BLOCK_HASH: 0x0000000000000000000000000000000000000000000000000000000000000000
TERMINAL_BLOCK_HASH_ACTIVATION_EPOCH: 18446744073709551615

# Genesis
MIN_GENESIS_ACTIVE_VALIDATOR_COUNT: 64
MIN_GENESIS_TIME: ${options.minGenesisTime}
GENESIS_FORK_VERSION: 0x10000038
GENESIS_DELAY: 20

# Forking
ALTAIR_FORK_VERSION: 0x20000038
ALTAIR_FORK_EPOCH: ${e.ALTAIR}
BELLATRIX_FORK_VERSION: 0x30000038
BELLATRIX_FORK_EPOCH: ${e.BELLATRIX}
CAPELLA_FORK_VERSION: 0x40000038
CAPELLA_FORK_EPOCH: ${e.CAPELLA}
DENEB_FORK_VERSION: 0x50000038
DENEB_FORK_EPOCH: ${e.DENEB}
ELECTRA_FORK_VERSION: 0x60000038
ELECTRA_FORK_EPOCH: ${e.ELECTRA}
FULU_FORK_VERSION: 0x70000038
FULU_FORK_EPOCH: ${e.FULU}
GLOAS_FORK_VERSION: 0x80000038
GLOAS_FORK_EPOCH: ${options.gloasForkEpoch ?? "18446744073709551615"}

# Time parameters
SECONDS_PER_SLOT: ${DEVNET_SECONDS_PER_SLOT}
SLOT_DURATION_MS: ${DEVNET_SECONDS_PER_SLOT * 1000}
SECONDS_PER_ETH1_BLOCK: 14
MIN_VALIDATOR_WITHDRAWABILITY_DELAY: 256
SHARD_COMMITTEE_PERIOD: 64
ETH1_FOLLOW_DISTANCE: 16

# Validator cycle
INACTIVITY_SCORE_BIAS: 4
INACTIVITY_SCORE_RECOVERY_RATE: 16
EJECTION_BALANCE: 16000000000
MIN_PER_EPOCH_CHURN_LIMIT: 2
CHURN_LIMIT_QUOTIENT: 32
MAX_PER_EPOCH_ACTIVATION_CHURN_LIMIT: 4

# Fork choice
PROPOSER_SCORE_BOOST: 40
REORG_HEAD_WEIGHT_THRESHOLD: 20
REORG_PARENT_WEIGHT_THRESHOLD: 160
REORG_MAX_EPOCHS_SINCE_FINALIZATION: 2

# Deposit contract
DEPOSIT_CHAIN_ID: 3151908
DEPOSIT_NETWORK_ID: 3151908
DEPOSIT_CONTRACT_ADDRESS: 0x4242424242424242424242424242424242424242

# Networking
MAX_PAYLOAD_SIZE: 10485760
MAX_REQUEST_BLOCKS: 1024
EPOCHS_PER_SUBNET_SUBSCRIPTION: 256
MIN_EPOCHS_FOR_BLOCK_REQUESTS: 272
ATTESTATION_PROPAGATION_SLOT_RANGE: 32
MAXIMUM_GOSSIP_CLOCK_DISPARITY: 500
MESSAGE_DOMAIN_INVALID_SNAPPY: 0x00000000
MESSAGE_DOMAIN_VALID_SNAPPY: 0x01000000
SUBNETS_PER_NODE: 2
ATTESTATION_SUBNET_COUNT: 64

# Deneb
MAX_REQUEST_BLOCKS_DENEB: 128
MAX_BLOBS_PER_BLOCK: 6
MIN_EPOCHS_FOR_BLOB_SIDECARS_REQUESTS: 4096
BLOB_SIDECAR_SUBNET_COUNT: 6
MAX_REQUEST_BLOB_SIDECARS: 768

# Electra
MIN_PER_EPOCH_CHURN_LIMIT_ELECTRA: 64000000000
MAX_PER_EPOCH_ACTIVATION_EXIT_CHURN_LIMIT: 128000000000
BLOB_SIDECAR_SUBNET_COUNT_ELECTRA: 9
MAX_BLOBS_PER_BLOCK_ELECTRA: 9
MAX_REQUEST_BLOB_SIDECARS_ELECTRA: 1152

# Fulu
NUMBER_OF_CUSTODY_GROUPS: 128
DATA_COLUMN_SIDECAR_SUBNET_COUNT: 128
SAMPLES_PER_SLOT: 8
CUSTODY_REQUIREMENT: 4
VALIDATOR_CUSTODY_REQUIREMENT: 8
BALANCE_PER_ADDITIONAL_CUSTODY_GROUP: 32000000000

# Blob scheduling
BLOB_SCHEDULE:
  - EPOCH: ${e.FULU}
    MAX_BLOBS_PER_BLOCK: 12
${options.extra ?? ""}`;
}

/** Lodestar's minimal-preset answers for the devnet whose config.yaml is at `configPath`. */
export async function minimalOracle(input: OracleInput): Promise<OracleOutput> {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, "lodestar-minimal.ts"), JSON.stringify(input)],
    {
      env: { ...process.env, LODESTAR_PRESET: "minimal" },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`the minimal-preset oracle exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as OracleOutput;
}
