/**
 * What Web3Signer would decide, computed from its own tables: an oracle for the migration tests
 * that shares no code with sigil. It follows Web3Signer's DbSlashingProtection.maySignBlock /
 * maySignAttestation with BlockValidator / AttestationValidator and the DAO queries behind them
 * (Consensys/web3signer, slashing-protection/src/main/java/…), minus the writes:
 *
 *   block (slot S, root R) is refused when the validator is disabled, or
 *     - a high watermark exists and S >= its slot,
 *     - the low watermark has a slot L and S < L (strict),
 *     - a record at S has another root or none (`signing_root <> R OR signing_root IS NULL`);
 *   attestation (source s, target t, root R) is refused when the validator is disabled, or
 *     - s > t,
 *     - a high watermark exists and s >= its epoch or t >= its epoch,
 *     - the low watermark has a source Ls and s < Ls (strict), or a target Lt and t < Lt (strict),
 *     - a record at t has another root or none,
 *     - a record surrounds it (source < s AND target > t), or it surrounds one (source > s AND
 *       target < t).
 *   Anything else is signed (and recorded unless an identical record exists).
 */
import type postgres from "postgres";

export interface Web3SignerRows {
  readonly pubkey: string;
  readonly enabled: boolean;
  readonly lowWatermark: {
    readonly slot: bigint | null;
    readonly sourceEpoch: bigint | null;
    readonly targetEpoch: bigint | null;
  } | null;
  readonly blocks: readonly { readonly slot: bigint; readonly root: string | null }[];
  readonly attestations: readonly {
    readonly sourceEpoch: bigint;
    readonly targetEpoch: bigint;
    readonly root: string | null;
  }[];
}

export interface Web3SignerHigh {
  readonly slot: bigint | null;
  readonly epoch: bigint | null;
}

/** A stored root conflicts unless it is there and equal (SQL: `<> R OR IS NULL`). */
const conflicts = (stored: string | null, requested: string) =>
  stored === null || stored !== requested;

export function web3signerMaySignBlock(
  v: Web3SignerRows,
  high: Web3SignerHigh | null,
  slot: bigint,
  root: string,
): boolean {
  if (!v.enabled) return false;
  // A high watermark without a slot makes Web3Signer's comparison throw: nothing is signed.
  if (high !== null && (high.slot === null || slot >= high.slot)) return false;
  const low = v.lowWatermark?.slot ?? null;
  if (low !== null && slot < low) return false;
  return !v.blocks.some((b) => b.slot === slot && conflicts(b.root, root));
}

export function web3signerMaySignAttestation(
  v: Web3SignerRows,
  high: Web3SignerHigh | null,
  source: bigint,
  target: bigint,
  root: string,
): boolean {
  if (!v.enabled) return false;
  if (source > target) return false;
  if (high !== null && (high.epoch === null || source >= high.epoch || target >= high.epoch)) {
    return false;
  }
  const lowSource = v.lowWatermark?.sourceEpoch ?? null;
  const lowTarget = v.lowWatermark?.targetEpoch ?? null;
  if (lowSource !== null && source < lowSource) return false;
  if (lowTarget !== null && target < lowTarget) return false;
  for (const a of v.attestations) {
    if (a.targetEpoch === target && conflicts(a.root, root)) return false;
    if (a.sourceEpoch < source && a.targetEpoch > target) return false;
    if (a.sourceEpoch > source && a.targetEpoch < target) return false;
  }
  return true;
}

const hex = (bytes: Buffer | null) => (bytes === null ? null : `0x${bytes.toString("hex")}`);
const big = (text: string | null) => (text === null ? null : BigInt(text));

type Block = Web3SignerRows["blocks"][number];
type Attestation = Web3SignerRows["attestations"][number];
type Collected = Web3SignerRows & { blocks: Block[]; attestations: Attestation[] };

/** Reads Web3Signer's tables back as they are, keyed by 0x-hex public key. */
export async function readWeb3SignerTables(sql: postgres.Sql): Promise<{
  validators: Map<string, Web3SignerRows>;
  high: Web3SignerHigh | null;
}> {
  const validators = new Map<string, Collected>();
  const byId = new Map<number, Collected>();
  const rows = await sql<
    {
      id: number;
      public_key: Buffer;
      enabled: boolean;
      slot: string | null;
      s: string | null;
      t: string | null;
    }[]
  >`SELECT v.id, v.public_key, v.enabled, w.slot::text AS slot, w.source_epoch::text AS s,
      w.target_epoch::text AS t
    FROM validators v LEFT JOIN low_watermarks w ON w.validator_id = v.id`;
  for (const row of rows) {
    const watermark = { slot: big(row.slot), sourceEpoch: big(row.s), targetEpoch: big(row.t) };
    const none = watermark.slot === null && watermark.sourceEpoch === null;
    const entry: Collected = {
      pubkey: hex(row.public_key) ?? "",
      enabled: row.enabled,
      lowWatermark: none ? null : watermark,
      blocks: [],
      attestations: [],
    };
    validators.set(entry.pubkey, entry);
    byId.set(row.id, entry);
  }
  const owner = (id: number): Collected => {
    const entry = byId.get(id);
    if (entry === undefined)
      throw new Error(`a record of validator id ${id}, which does not exist`);
    return entry;
  };
  for (const b of await sql<{ validator_id: number; slot: string; signing_root: Buffer | null }[]>`
    SELECT validator_id, slot::text AS slot, signing_root FROM signed_blocks`) {
    owner(b.validator_id).blocks.push({ slot: BigInt(b.slot), root: hex(b.signing_root) });
  }
  for (const a of await sql<
    { validator_id: number; s: string; t: string; signing_root: Buffer | null }[]
  >`SELECT validator_id, source_epoch::text AS s, target_epoch::text AS t, signing_root
    FROM signed_attestations`) {
    owner(a.validator_id).attestations.push({
      sourceEpoch: BigInt(a.s),
      targetEpoch: BigInt(a.t),
      root: hex(a.signing_root),
    });
  }
  const [meta] = await sql<{ slot: string | null; epoch: string | null }[]>`
    SELECT high_watermark_slot::text AS slot, high_watermark_epoch::text AS epoch
    FROM metadata WHERE id = 1`;
  const high =
    meta === undefined || (meta.slot === null && meta.epoch === null)
      ? null
      : { slot: big(meta.slot), epoch: big(meta.epoch) };
  return { validators, high };
}
