/**
 * A devnet described by the consensus-spec config a beacon node is started with (`network: <path
 * to config.yaml>`, as Web3Signer's `--network <file>`): the chain's preset (PRESET_BASE), genesis
 * fork version, fork versions and epochs (Gloas' unscheduled when the file does not name it), slot length and earliest genesis time. The same keys as
 * a beacon node's /eth/v1/config/spec, whose JSON answer (`{"data": {…}}`) is accepted too.
 *
 * A spec config names no genesis validators root and no exact genesis time: `network_config`
 * gives them (`genesis_validators_root`, `genesis_time`), and only them, since everything else is
 * the file's. Unknown keys are ignored (a config.yaml has a hundred that signing never reads); a
 * key sigil reads with a bad value is refused, named. A preset constant the file repeats (the
 * spec endpoint lists them) must be the preset's own: a chain with a customized preset would hash
 * containers sigil does not build.
 */
import { readFileSync } from "node:fs";
import { parseDocument, type YAMLError } from "yaml";
import { fromHex } from "../wire/hex";
import { describeYamlError } from "../wire/yaml-error";
import { forkOrderProblems } from "./fork-order";
import {
  FAR_FUTURE_EPOCH,
  isNetworkName,
  type NetworkConstants,
  type NetworkOverrides,
  resolveNetwork,
} from "./network";
import { isPresetName, PRESET_KEYS, PRESETS, SPEC_CONSTANTS } from "./preset";

/** One problem: where ("network" for the file, "network_config.<key>") and what. */
export interface SpecConfigProblem {
  readonly where: string;
  readonly message: string;
}

export type SpecConfigResult =
  | { readonly ok: true; readonly network: NetworkConstants }
  | { readonly ok: false; readonly problems: readonly SpecConfigProblem[] };

const MAX_UINT64 = 2n ** 64n - 1n;

/** network_config keys a spec config cannot give; any other is the file's to set. */
const OVERRIDABLE: readonly (keyof NetworkOverrides)[] = [
  "genesis_validators_root",
  "genesis_time",
];

/**
 * The configured network: `network` names one (mainnet, hoodi, sepolia; `network_config`
 * overrides on top) or is the path of a spec config (relative to the working directory).
 */
export function configuredNetworkOf(
  network: string,
  overrides?: NetworkOverrides,
): SpecConfigResult {
  if (isNetworkName(network)) return { ok: true, network: resolveNetwork(network, overrides) };
  return readSpecConfig(network, overrides);
}

/** Reads and checks the spec config at `path` (relative to the working directory). */
export function readSpecConfig(path: string, overrides?: NetworkOverrides): SpecConfigResult {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? "unreadable";
    return fail(
      "network",
      `must be one of mainnet, hoodi, sepolia, or the path of a consensus-spec config.yaml; cannot read ${JSON.stringify(path)} (${reason})`,
    );
  }
  return parseSpecConfig(text, path, overrides);
}

/** A spec config's text → the network it describes, or every problem found in it. */
export function parseSpecConfig(
  text: string,
  source: string,
  overrides: NetworkOverrides = {},
): SpecConfigResult {
  // failsafe: every scalar stays the text it is written as, so 0x00000001 is not the integer 1.
  const doc = parseDocument(text, { schema: "failsafe", uniqueKeys: true });
  if (doc.errors.length > 0) {
    const { where, reason } = describeYamlError(doc.errors[0] as YAMLError, source);
    return fail("network", `${where}: YAML: ${reason}`);
  }
  let spec: unknown = doc.toJS();
  // /eth/v1/config/spec answers {"data": {...}}.
  if (isMapping(spec) && spec.PRESET_BASE === undefined && isMapping(spec.data)) spec = spec.data;
  if (!isMapping(spec)) {
    return fail("network", `${source}: expected a mapping of spec keys (PRESET_BASE: …)`);
  }
  const reader = new SpecReader(spec, source);

  const presetName = reader.text("PRESET_BASE", true);
  let preset = PRESETS.mainnet;
  if (presetName !== undefined) {
    if (isPresetName(presetName)) preset = PRESETS[presetName];
    else
      reader.problem(
        "PRESET_BASE",
        `sigil signs for the mainnet and minimal presets, got ${JSON.stringify(presetName)}`,
      );
  }
  for (const key of PRESET_KEYS) reader.same(key, preset[key], `the ${preset.PRESET_BASE} preset`);
  for (const [key, value] of Object.entries(SPEC_CONSTANTS)) reader.same(key, value, "the spec");

  const genesisForkVersion = reader.version("GENESIS_FORK_VERSION", true);
  const capellaForkVersion = reader.version("CAPELLA_FORK_VERSION", true);
  const denebForkEpoch = reader.uint64("DENEB_FORK_EPOCH", true);
  const gloasForkVersion = reader.version("GLOAS_FORK_VERSION", false);
  const gloasForkEpoch = reader.uint64("GLOAS_FORK_EPOCH", false) ?? FAR_FUTURE_EPOCH;
  // The other forks are not read for signing (fork_info names them), but a bad value is refused.
  const read = [
    "GENESIS_FORK_VERSION",
    "CAPELLA_FORK_VERSION",
    "DENEB_FORK_EPOCH",
    "GLOAS_FORK_VERSION",
    "GLOAS_FORK_EPOCH",
  ];
  for (const key of Object.keys(spec)) {
    if (read.includes(key)) continue;
    if (/^[A-Z0-9]+_FORK_VERSION$/.test(key)) reader.version(key, false);
    else if (/^[A-Z0-9]+_FORK_EPOCH$/.test(key)) reader.uint64(key, false);
  }
  reader.problems.push(...forkOrderProblems(spec, source));
  const secondsPerSlot = slotSeconds(reader);
  const minGenesisTime = reader.uint64("MIN_GENESIS_TIME", false);
  const configName = reader.text("CONFIG_NAME", false);
  const depositChainId = reader.uint64("DEPOSIT_CHAIN_ID", false);

  const problems = [...reader.problems];
  for (const key of Object.keys(overrides) as (keyof NetworkOverrides)[]) {
    if (overrides[key] === undefined || OVERRIDABLE.includes(key)) continue;
    problems.push({
      where: `network_config.${key}`,
      message: `comes from the spec config ${source} (${key.toUpperCase()}) when network names one; network_config may only add genesis_validators_root and genesis_time`,
    });
  }
  if (
    problems.length > 0 ||
    genesisForkVersion === undefined ||
    capellaForkVersion === undefined ||
    denebForkEpoch === undefined ||
    secondsPerSlot === undefined
  ) {
    return { ok: false, problems };
  }

  const exactGenesis = overrides.genesis_time;
  return {
    ok: true,
    network: {
      name: `${configName ?? "devnet"} (${source}, ${preset.PRESET_BASE} preset)`,
      genesisForkVersion,
      capellaForkVersion,
      denebForkEpoch,
      gloasForkVersion,
      gloasForkEpoch,
      genesisValidatorsRoot:
        overrides.genesis_validators_root === undefined
          ? undefined
          : fromHex(overrides.genesis_validators_root),
      genesisTime: exactGenesis === undefined ? minGenesisTime : BigInt(exactGenesis),
      ...(exactGenesis === undefined && minGenesisTime !== undefined
        ? { genesisTimeIsLowerBound: true }
        : {}),
      secondsPerSlot,
      preset,
      ...(depositChainId === undefined ? {} : { depositChainId }),
    },
  };
}

/** SECONDS_PER_SLOT, or SLOT_DURATION_MS in whole seconds; both when given must agree. */
function slotSeconds(reader: SpecReader): bigint | undefined {
  const hasMs = reader.has("SLOT_DURATION_MS");
  const seconds = reader.uint64("SECONDS_PER_SLOT", !hasMs);
  const ms = reader.uint64("SLOT_DURATION_MS", false);
  if (seconds !== undefined && (seconds < 1n || seconds > 3600n)) {
    reader.problem("SECONDS_PER_SLOT", `expected 1 to 3600 seconds, got ${seconds}`);
    return undefined;
  }
  if (ms === undefined) return seconds;
  if (seconds !== undefined) {
    if (ms === seconds * 1000n) return seconds;
    reader.problem(
      "SLOT_DURATION_MS",
      `${ms} ms disagrees with SECONDS_PER_SLOT ${seconds}; set one, or both to the same length`,
    );
    return undefined;
  }
  if (ms % 1000n !== 0n || ms < 1000n || ms > 3_600_000n) {
    reader.problem(
      "SLOT_DURATION_MS",
      `expected whole seconds from 1000 to 3600000 ms (sigil's slot clock counts seconds), got ${ms}`,
    );
    return undefined;
  }
  return ms / 1000n;
}

/** Reads keys of a spec mapping, collecting a problem per bad or missing key. */
class SpecReader {
  readonly problems: SpecConfigProblem[] = [];
  constructor(
    private readonly spec: Record<string, unknown>,
    private readonly source: string,
  ) {}

  has(key: string): boolean {
    return this.spec[key] !== undefined && this.spec[key] !== null;
  }

  problem(key: string, message: string): void {
    this.problems.push({ where: "network", message: `${this.source}: ${key}: ${message}` });
  }

  text(key: string, required: boolean): string | undefined {
    const value = this.spec[key];
    if (value === undefined || value === null || value === "") {
      if (required) this.problem(key, "required");
      return undefined;
    }
    if (typeof value !== "string") {
      this.problem(
        key,
        `expected a single value, got ${Array.isArray(value) ? "a list" : "a mapping"}`,
      );
      return undefined;
    }
    return value.trim();
  }

  uint64(key: string, required: boolean): bigint | undefined {
    const value = this.text(key, required);
    if (value === undefined) return undefined;
    if (!/^[0-9]{1,20}$/.test(value) || BigInt(value) > MAX_UINT64) {
      this.problem(key, `expected an unsigned 64-bit integer, got ${show(value)}`);
      return undefined;
    }
    return BigInt(value);
  }

  version(key: string, required: boolean): Uint8Array | undefined {
    const value = this.text(key, required);
    if (value === undefined) return undefined;
    if (!/^0x[0-9a-fA-F]{8}$/.test(value)) {
      this.problem(
        key,
        `expected a fork version of 4 bytes of hex, like 0x00000001, got ${show(value)}`,
      );
      return undefined;
    }
    return fromHex(value);
  }

  /** A preset or spec constant the file repeats must be sigil's value. */
  same(key: string, expected: number, of: string): void {
    if (!this.has(key)) return;
    const value = this.uint64(key, false);
    if (value !== undefined && value !== BigInt(expected)) {
      this.problem(
        key,
        `${value}, but ${of} has ${expected}; sigil builds the containers of the mainnet and minimal presets as the spec defines them`,
      );
    }
  }
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
}

function fail(where: string, message: string): SpecConfigResult {
  return { ok: false, problems: [{ where, message }] };
}
