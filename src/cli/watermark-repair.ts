import { bytesToHex, isUint64 } from "../antislashing/encoding";
import { wallClockEpoch } from "../antislashing/future";
import { interchangeSource } from "../antislashing/interchange";
import type { SlashingStore } from "../antislashing/store";
import {
  type DatabaseWatermarks,
  describeWatermark,
  highWatermarkProblem,
  highWatermarkRaiseProblem,
  requestedLowWatermark,
  type Watermark,
  type WatermarkChange,
} from "../antislashing/watermarks";
import { configuredNetwork } from "../app/slashing";
import type { Config } from "../config/schema";
import { floorsOf } from "../migrate/web3signer/convert";
import type { NetworkConstants } from "../signing/network";
import { counted } from "../wire/count";
import { isPubkeyHex, normalizePubkey } from "../wire/pubkey";
import { defineCommand } from "./command";
import { configArgs, loadConfigOrExit, SLASHING_SCOPE } from "./config-args";
import { EXIT_USAGE, fail } from "./exit";
import { withStore } from "./slashing";

const FLAGS = {
  epoch: { type: "string" },
  slot: { type: "string" },
  "set-high-watermark": { type: "boolean" },
  "remove-high-watermark": { type: "boolean" },
  "validator-ids": { type: "string", multiple: true },
} as const;

/** What the command line asks for, checked; a usage error exits 2 before anything is opened. */
type Request =
  | { readonly kind: "remove_high" }
  | { readonly kind: "set_high"; readonly high: Watermark }
  | {
      readonly kind: "raise_low";
      readonly given: { epoch?: bigint; slot?: bigint };
      /** Only these validators (Web3Signer's --validator-ids): their own floors, not the database's. */
      readonly validators?: readonly string[];
    };

function uint64Flag(name: string, value: unknown): bigint | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  const parsed = /^(0|[1-9][0-9]*)$/.test(text) ? BigInt(text) : -1n;
  if (!isUint64(parsed)) fail(`--${name}: "${text}" is not a decimal uint64`, EXIT_USAGE);
  return parsed;
}

function parseRequest(extras: Record<string, unknown>): Request {
  const epoch = uint64Flag("epoch", extras.epoch);
  const slot = uint64Flag("slot", extras.slot);
  const ids = extras["validator-ids"] as string[] | undefined;
  if (extras["remove-high-watermark"] === true) {
    if (extras["set-high-watermark"] === true || epoch !== undefined || slot !== undefined || ids) {
      fail("--remove-high-watermark takes no other option; nothing was changed", EXIT_USAGE);
    }
    return { kind: "remove_high" };
  }
  if (extras["set-high-watermark"] === true) {
    if (epoch === undefined || slot === undefined) {
      fail("--set-high-watermark needs both --epoch and --slot; nothing was changed", EXIT_USAGE);
    }
    if (ids) fail("--set-high-watermark holds for every validator: no --validator-ids", EXIT_USAGE);
    return { kind: "set_high", high: { epoch, slot } };
  }
  const validators = ids
    ?.flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
  for (const key of validators ?? []) {
    if (!isPubkeyHex(key))
      fail(`--validator-ids: "${key}" is not 0x + 96 hex characters`, EXIT_USAGE);
  }
  return {
    kind: "raise_low",
    given: { ...(epoch !== undefined && { epoch }), ...(slot !== undefined && { slot }) },
    ...(validators && { validators: validators.map(normalizePubkey) }),
  };
}

/** The epoch of the network's clock now; undefined when the configuration gives no genesis time. */
function currentEpoch(network: NetworkConstants): bigint | undefined {
  if (network.genesisTime === undefined) return undefined;
  return wallClockEpoch(clockOf(network, network.genesisTime), Date.now());
}

function clockOf(network: NetworkConstants, genesisTime: bigint) {
  return {
    genesisTime,
    secondsPerSlot: network.secondsPerSlot,
    slotsPerEpoch: BigInt(network.preset.SLOTS_PER_EPOCH),
  };
}

/** The latest epoch a signer may sign now (antislashing.max_future_epochs ahead of the clock). */
function latestSignableEpoch(config: Config, network: NetworkConstants): bigint | undefined {
  const current = currentEpoch(network);
  return current === undefined
    ? undefined
    : current + BigInt(config.antislashing.max_future_epochs);
}

/** The change to make, or the one-line reason it is refused (exit 2, nothing opened). */
function changeFor(request: Request, config: Config, network: NetworkConstants): WatermarkChange {
  const slotsPerEpoch = BigInt(network.preset.SLOTS_PER_EPOCH);
  if (request.kind === "remove_high") return request;
  if (request.kind === "set_high") {
    if (network.genesisTime === undefined) {
      fail(
        "cannot tell whether the high watermark lies in the future: the network's genesis time is unknown (network_config.genesis_time); nothing was changed",
        EXIT_USAGE,
      );
    }
    const problem = highWatermarkProblem(
      request.high,
      clockOf(network, network.genesisTime),
      BigInt(config.antislashing.max_future_epochs),
      Date.now(),
    );
    if (problem !== null) fail(`${problem}; nothing was changed`, EXIT_USAGE);
    return request;
  }
  const low = requestedLowWatermark(request.given, slotsPerEpoch, currentEpoch(network));
  if (typeof low === "string") fail(`${low}; nothing was changed`, EXIT_USAGE);
  return { kind: "raise_low", low };
}

/**
 * --validator-ids: Web3Signer's per-validator low watermark, as floors an import raises (never
 * lowers) in one step, with the floors its migration gives a Web3Signer watermark (floorsOf).
 */
async function raiseValidatorFloors(
  store: SlashingStore,
  validators: readonly string[],
  low: Watermark,
): Promise<void> {
  const gvr = await store.storedGenesisValidatorsRoot();
  if (gvr === null)
    fail("the database has no genesis validators root yet: run `sigil slashing init` first");
  const floors = floorsOf({ slot: low.slot, sourceEpoch: low.epoch, targetEpoch: low.epoch });
  await store.importInterchange(
    interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: bytesToHex(gvr) },
      [...new Set(validators)].map((pubkey) => ({
        pubkey,
        blocks: [],
        attestations: [],
        ...(floors && { floors }),
      })),
    ),
  );
}

function summary(location: string, after: DatabaseWatermarks): string {
  return `slashing protection database ${location}: low watermark ${describeWatermark(after.low)}; high watermark ${describeWatermark(after.high)}`;
}

export const watermarkRepairCommand = defineCommand({
  meta: {
    name: "watermark-repair",
    description:
      "Raise the low watermark of every validator, or set or remove the database's high watermark (Web3Signer's watermark-repair)",
    examples: [
      "sigil slashing watermark-repair -c /etc/sigil/config.yaml",
      "sigil slashing watermark-repair -c /etc/sigil/config.yaml --epoch 350000 --slot 11200000",
      "sigil slashing watermark-repair -c old-cluster.yaml --set-high-watermark --epoch 350000 --slot 11200000",
      "sigil slashing watermark-repair -c old-cluster.yaml --remove-high-watermark",
    ],
    notes: [
      "Low watermark (default): nothing below --slot / --epoch is signed, for every validator, also one added later; it only rises. Without --epoch and --slot: the next epoch of the network's clock and its first slot.",
      'High watermark: nothing at or beyond --slot / --epoch is signed; it must lie a whole epoch beyond the latest epoch a signer may sign now (antislashing.max_future_epochs). Moving validators to another signer: docs/antislashing.md, "Moving validators between clusters".',
      "Stop the signer first when the database is sqlite (one process writes the file).",
    ],
  },
  args: {
    ...configArgs(SLASHING_SCOPE),
    epoch: {
      type: "string",
      valueHint: "n",
      description: "Low watermark epoch; the high one with --set-high-watermark",
    },
    slot: {
      type: "string",
      valueHint: "n",
      description: "Low watermark slot; the high one with --set-high-watermark",
    },
    "set-high-watermark": {
      type: "boolean",
      description: "Set the high watermark to --epoch and --slot",
    },
    "remove-high-watermark": {
      type: "boolean",
      description: "Remove the high watermark (no other option)",
    },
    "validator-ids": {
      type: "string",
      valueHint: "0x…,0x…",
      description:
        "Raise the low watermark of these validators only (their own floors; comma-separated, repeatable)",
    },
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      extraFlags: FLAGS,
      scope: SLASHING_SCOPE,
    });
    const request = parseRequest(extras);
    if (config.antislashing.backend === "noop") {
      fail("antislashing.backend is noop: it keeps no watermarks; nothing was changed", EXIT_USAGE);
    }
    const network = configuredNetwork(config);
    const change = changeFor(request, config, network);
    const line = await withStore(
      config,
      async (store) => {
        if (request.kind === "raise_low" && request.validators && change.kind === "raise_low") {
          await raiseValidatorFloors(store, request.validators, change.low);
          return `slashing protection database ${store.location}: low watermark of ${counted(request.validators.length, "validator")} raised to ${describeWatermark(change.low)} (never lowered)`;
        }
        if (change.kind === "set_high") {
          const stored = (await store.databaseWatermarks()).high;
          const latest = latestSignableEpoch(config, network);
          const problem =
            latest === undefined ? null : highWatermarkRaiseProblem(stored, change.high, latest);
          if (problem !== null) fail(`${problem}; nothing was changed`, EXIT_USAGE);
        }
        return summary(store.location, await store.changeWatermarks(change));
      },
      { access: "write", argv: rawArgs },
    );
    process.stdout.write(`${line}\n`);
  },
});
