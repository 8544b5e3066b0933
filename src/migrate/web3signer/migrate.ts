/**
 * Moves a Web3Signer slashing protection database into sigil's configured store: checks that the
 * two are for the same chain, refuses what it does not carry over (a high watermark, unless the
 * operator accepts leaving it behind), then imports every validator's records and low watermark in one
 * `importInterchange` — all or nothing, as `sigil slashing import` is.
 */
import { bytesToHex } from "../../antislashing/encoding";
import { type FutureBound, FutureRecordError, withinBound } from "../../antislashing/future";
import {
  type InterchangeSource,
  type InterchangeValidator,
  NothingToExportError,
  type PubkeyHex,
  SlashingImportError,
  type SlashingStore,
} from "../../antislashing/store";
import {
  hasHighWatermark,
  toInterchangeValidator,
  unvouchedHistory,
  type Web3SignerHighWatermark,
} from "./convert";
import type { Web3SignerSnapshot } from "./reader";

export interface MigrationOptions {
  /** The network sigil is configured for, when its root is known (no custom network_config). */
  readonly network?: { readonly name: string; readonly genesisValidatorsRoot: string };
  /** Migrate although Web3Signer has a high watermark, which the migration does not carry over. */
  readonly ignoreHighWatermark: boolean;
  /**
   * The future-epoch bound, as for an interchange import: a record beyond it refuses the whole
   * migration. Undefined: no bound (allowed by the operator, or no known genesis time).
   */
  readonly futureBound?: FutureBound;
  /** Read and check everything, write nothing. */
  readonly dryRun: boolean;
}

export interface MigrationReport {
  readonly genesisValidatorsRoot: string;
  readonly databaseVersion: number;
  readonly validators: number;
  readonly blocks: number;
  readonly attestations: number;
  /** Validators whose low watermark became floors. */
  readonly watermarks: number;
  /** Disabled in Web3Signer; sigil signs for them once their keys are loaded. */
  readonly disabled: readonly PubkeyHex[];
  /** Legacy records without a watermark: sigil refuses what is older (unvouchedHistory). */
  readonly unvouched: readonly PubkeyHex[];
  /** The high watermark the operator chose to leave behind, if any. */
  readonly droppedHighWatermark: Web3SignerHighWatermark | null;
  readonly dryRun: boolean;
}

/** The migration cannot go ahead; nothing was written. */
export class MigrationRefusedError extends Error {
  override readonly name = "MigrationRefusedError";
  constructor(
    message: string,
    /** Refused by the future-epoch bound, which the operator may lift. */
    readonly future = false,
  ) {
    super(message);
  }
}

export async function migrateWeb3Signer(
  snapshot: Web3SignerSnapshot,
  store: SlashingStore,
  options: MigrationOptions,
): Promise<MigrationReport> {
  if (store.backend === "noop") {
    throw new MigrationRefusedError(
      "antislashing.backend is noop, which keeps nothing: configure the backend sigil will run with",
    );
  }
  if (snapshot.genesisValidatorsRoot === null) {
    throw new MigrationRefusedError(
      `${snapshot.display} has no genesis validators root: Web3Signer never signed or imported ` +
        "anything with it, so there is nothing to migrate",
    );
  }
  const gvr = bytesToHex(snapshot.genesisValidatorsRoot);
  const network = options.network;
  if (network !== undefined && network.genesisValidatorsRoot !== gvr) {
    throw new MigrationRefusedError(
      `the Web3Signer database is for genesis validators root ${gvr}, but sigil is configured for ` +
        `network ${network.name} (${network.genesisValidatorsRoot})`,
    );
  }
  const stored = await storedGenesisValidatorsRoot(store);
  if (stored !== null && stored !== gvr) {
    throw new MigrationRefusedError(
      `the Web3Signer database is for genesis validators root ${gvr}, sigil's database for ` +
        `${stored} (one database serves one chain)`,
    );
  }
  const high = snapshot.highWatermark;
  if (hasHighWatermark(high) && !options.ignoreHighWatermark) {
    throw new MigrationRefusedError(
      `Web3Signer has a high watermark (${describeHigh(high)}): it refuses to sign at or beyond ` +
        "it, and the migration does not carry it over. Remove it (Web3Signer's watermark-repair " +
        "--remove-high-watermark), or pass --ignore-high-watermark to migrate without it; where " +
        "sigil takes over from that Web3Signer at it, raise sigil's low watermark there " +
        "(sigil slashing watermark-repair --epoch E --slot S, docs/antislashing.md)",
    );
  }

  const counts = { validators: 0, blocks: 0, attestations: 0, watermarks: 0 };
  const disabled: PubkeyHex[] = [];
  const unvouched: PubkeyHex[] = [];
  const source: InterchangeSource = {
    metadata: { interchange_format_version: "5", genesis_validators_root: gvr },
    async *validators(): AsyncGenerator<InterchangeValidator> {
      for await (const validator of snapshot.validators()) {
        counts.validators += 1;
        counts.blocks += validator.blocks.length;
        counts.attestations += validator.attestations.length;
        const converted = toInterchangeValidator(validator);
        if (converted.floors !== undefined) counts.watermarks += 1;
        if (!validator.enabled) disabled.push(validator.pubkey);
        if (unvouchedHistory(converted)) unvouched.push(validator.pubkey);
        yield converted;
      }
    },
  };
  const bounded = options.futureBound ? withinBound(source, options.futureBound) : source;
  try {
    if (options.dryRun) {
      for await (const _ of bounded.validators()) {
        // Reading is the check: every row is parsed and validated on the way.
      }
    } else {
      await store.importInterchange(bounded);
    }
  } catch (error) {
    if (error instanceof SlashingImportError) {
      throw new MigrationRefusedError(
        `import refused, nothing was changed: ${error.message}`,
        error instanceof FutureRecordError,
      );
    }
    throw error;
  }
  return {
    genesisValidatorsRoot: gvr,
    databaseVersion: snapshot.databaseVersion,
    ...counts,
    disabled,
    unvouched,
    droppedHighWatermark: hasHighWatermark(high) ? high : null,
    dryRun: options.dryRun,
  };
}

/** The store's root, read through an export of no validators (which writes nothing). */
async function storedGenesisValidatorsRoot(store: SlashingStore): Promise<string | null> {
  try {
    const empty = await store.exportInterchange([]);
    return empty.metadata.genesis_validators_root.toLowerCase();
  } catch (error) {
    if (error instanceof NothingToExportError) return null;
    throw error;
  }
}

export function describeHigh(high: Web3SignerHighWatermark | null): string {
  return `slot ${high?.slot ?? "none"}, epoch ${high?.epoch ?? "none"}`;
}
