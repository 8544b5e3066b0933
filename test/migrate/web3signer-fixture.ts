/**
 * The Web3Signer database of the migration tests: validators in the states a real one holds
 * (signing since the start, pruned with the watermark below its oldest kept block, a watermark
 * raised above older records at a slot and epochs where no record is, a watermark and no records,
 * nothing at all, disabled, records imported without signing roots, legacy records without a
 * watermark, genesis, a slot-only and an epochs-only watermark), and probes over a grid of slots
 * and epochs around them.
 *
 * Probes must not see each other's effect (an accepted probe is recorded), so every scenario is
 * cloned: clone i of a scenario has the same watermark and records under its own public key and
 * takes the scenario's i-th block probe and i-th attestation probe (blocks and attestations do not
 * interact in either signer).
 */
import type postgres from "postgres";
import { pubkey, root } from "../antislashing/support";

export const MAINNET_GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";

type Watermark = { slot: bigint | null; sourceEpoch: bigint | null; targetEpoch: bigint | null };

export interface Scenario {
  readonly name: string;
  readonly enabled: boolean;
  readonly lowWatermark: Watermark | null;
  /** [slot, has a signing root] */
  readonly blocks: readonly (readonly [number, boolean])[];
  /** [source, target, has a signing root] */
  readonly attestations: readonly (readonly [number, number, boolean])[];
}

const mark = (slot: number | null, source: number | null, target: number | null): Watermark => ({
  slot: slot === null ? null : BigInt(slot),
  sourceEpoch: source === null ? null : BigInt(source),
  targetEpoch: target === null ? null : BigInt(target),
});

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "signing since the start",
    enabled: true,
    lowWatermark: mark(10, 2, 3),
    blocks: [
      [10, true],
      [20, true],
    ],
    attestations: [
      [2, 3, true],
      [3, 4, true],
      [4, 5, true],
      [5, 6, true],
      [6, 8, true],
    ],
  },
  {
    // Web3Signer's pruning: the watermark moves to newest - kept + 1 (source = target there) and
    // the records below it go; sparse blocks leave a gap between watermark and oldest block.
    name: "pruned",
    enabled: true,
    lowWatermark: mark(25, 6, 6),
    blocks: [[30, true]],
    attestations: [
      [5, 6, true],
      [6, 7, true],
      [7, 9, true],
    ],
  },
  {
    // An import raised the watermark above records it kept, to where no record is.
    name: "watermark above older records",
    enabled: true,
    lowWatermark: mark(20, 5, 6),
    blocks: [
      [5, true],
      [15, true],
      [40, true],
    ],
    attestations: [
      [1, 2, true],
      [2, 3, true],
      [8, 9, true],
      [9, 10, true],
    ],
  },
  {
    name: "watermark, no records",
    enabled: true,
    lowWatermark: mark(30, 7, 9),
    blocks: [],
    attestations: [],
  },
  { name: "nothing", enabled: true, lowWatermark: null, blocks: [], attestations: [] },
  {
    name: "disabled",
    enabled: false,
    lowWatermark: mark(10, 2, 3),
    blocks: [[10, true]],
    attestations: [
      [2, 3, true],
      [3, 4, true],
    ],
  },
  {
    name: "imported without signing roots",
    enabled: true,
    lowWatermark: mark(12, 3, 4),
    blocks: [
      [12, false],
      [18, false],
    ],
    attestations: [
      [3, 4, false],
      [4, 6, false],
    ],
  },
  {
    name: "legacy records, no watermark",
    enabled: true,
    lowWatermark: null,
    blocks: [[8, true]],
    attestations: [
      [3, 4, true],
      [4, 5, true],
    ],
  },
  {
    name: "genesis",
    enabled: true,
    lowWatermark: mark(0, 0, 0),
    blocks: [
      [0, true],
      [3, true],
    ],
    attestations: [
      [0, 0, true],
      [0, 1, true],
      [1, 2, true],
    ],
  },
  {
    name: "slot watermark only",
    enabled: true,
    lowWatermark: mark(14, null, null),
    blocks: [
      [14, true],
      [16, true],
    ],
    attestations: [],
  },
  {
    name: "epoch watermarks only",
    enabled: true,
    lowWatermark: mark(null, 4, 5),
    blocks: [],
    attestations: [
      [4, 5, true],
      [5, 6, true],
    ],
  },
];

/** The probe grid: every slot in 0..45, every source <= target in 0..14, a few source > target. */
const SLOTS = 45;
const EPOCHS = 14;

export const recordRoot = (scenario: string, ...at: number[]) => root("record", scenario, ...at);

export interface BlockProbe {
  readonly slot: bigint;
  readonly root: Uint8Array;
}

export interface AttestationProbe {
  readonly source: bigint;
  readonly target: bigint;
  readonly root: Uint8Array;
}

export interface Clone {
  readonly pubkey: string;
  readonly scenario: Scenario;
  readonly block?: BlockProbe;
  readonly attestation?: AttestationProbe;
}

function blockProbes(s: Scenario): BlockProbe[] {
  const probes: BlockProbe[] = [];
  for (let slot = 0; slot <= SLOTS; slot++) {
    probes.push({ slot: BigInt(slot), root: root("probe", s.name, slot) });
  }
  for (const [slot, rooted] of s.blocks) {
    if (rooted) probes.push({ slot: BigInt(slot), root: recordRoot(s.name, slot) });
  }
  return probes;
}

function attestationProbes(s: Scenario): AttestationProbe[] {
  const probes: AttestationProbe[] = [];
  const add = (source: number, target: number, r: Uint8Array) =>
    probes.push({ source: BigInt(source), target: BigInt(target), root: r });
  for (let target = 0; target <= EPOCHS; target++) {
    for (let source = 0; source <= target; source++) {
      add(source, target, root("probe", s.name, source, target));
    }
  }
  for (const [source, target, rooted] of s.attestations) {
    if (rooted) add(source, target, recordRoot(s.name, source, target));
  }
  for (const [source, target] of [
    [5, 4],
    [9, 2],
    [14, 13],
  ] as const) {
    add(source, target, root("probe", s.name, source, target));
  }
  return probes;
}

/** Every scenario's clones, each with its probes; pubkeys are distinct across the whole set. */
export function cloneScenarios(): Clone[] {
  const clones: Clone[] = [];
  SCENARIOS.forEach((scenario, index) => {
    const blocks = blockProbes(scenario);
    const attestations = attestationProbes(scenario);
    const count = Math.max(blocks.length, attestations.length);
    for (let i = 0; i < count; i++) {
      clones.push({
        pubkey: pubkey(i, 0x5300 + index),
        scenario,
        ...(i < blocks.length ? { block: blocks[i] } : {}),
        ...(i < attestations.length ? { attestation: attestations[i] } : {}),
      });
    }
  });
  return clones;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const text = (value: bigint | null | undefined) => (value == null ? null : value.toString());

/**
 * Writes validators with their watermarks and records, the way Web3Signer stores them, in bulk.
 * `high` sets metadata's high watermark (database_version 12 only).
 */
export async function populate(
  sql: postgres.Sql,
  validators: readonly { pubkey: string; scenario: Scenario }[],
  options: { gvr?: string; high?: { slot: bigint; epoch: bigint }; enabledColumn?: boolean } = {},
): Promise<void> {
  const gvr = (options.gvr ?? MAINNET_GVR).slice(2);
  if (options.high === undefined) {
    await sql`INSERT INTO metadata (id, genesis_validators_root) VALUES (1, decode(${gvr}, 'hex'))`;
  }
  const keys = validators.map((v) => v.pubkey.slice(2));
  const inserted =
    options.enabledColumn === false
      ? await sql<{ id: number; key: string }[]>`
          INSERT INTO validators (public_key)
          SELECT decode(k, 'hex') FROM unnest(${keys}::text[]) WITH ORDINALITY AS x (k, n) ORDER BY n
          RETURNING id, encode(public_key, 'hex') AS key`
      : await sql<{ id: number; key: string }[]>`
          INSERT INTO validators (public_key, enabled)
          SELECT decode(k, 'hex'), e::boolean
          FROM unnest(${keys}::text[], ${validators.map((v) => String(v.scenario.enabled))}::text[])
            WITH ORDINALITY AS x (k, e, n) ORDER BY n
          RETURNING id, encode(public_key, 'hex') AS key`;
  const ids = new Map(inserted.map((row) => [`0x${row.key}`, row.id]));
  const idOf = (pk: string) => ids.get(pk) ?? -1;
  const withMark = validators.filter((v) => v.scenario.lowWatermark !== null);
  await sql`
    INSERT INTO low_watermarks (validator_id, slot, source_epoch, target_epoch)
    SELECT v, s::numeric, se::numeric, te::numeric
    FROM unnest(${withMark.map((v) => idOf(v.pubkey))}::int[],
      ${withMark.map((v) => text(v.scenario.lowWatermark?.slot))}::text[],
      ${withMark.map((v) => text(v.scenario.lowWatermark?.sourceEpoch))}::text[],
      ${withMark.map((v) => text(v.scenario.lowWatermark?.targetEpoch))}::text[]) AS x (v, s, se, te)`;
  const blocks = validators.flatMap((v) =>
    v.scenario.blocks.map(([slot, rooted]) => ({
      id: idOf(v.pubkey),
      slot: String(slot),
      root: rooted ? hex(recordRoot(v.scenario.name, slot)) : null,
    })),
  );
  await sql`
    INSERT INTO signed_blocks (validator_id, slot, signing_root)
    SELECT v, s::numeric, decode(r, 'hex')
    FROM unnest(${blocks.map((b) => b.id)}::int[], ${blocks.map((b) => b.slot)}::text[],
      ${blocks.map((b) => b.root)}::text[]) AS x (v, s, r)`;
  const attestations = validators.flatMap((v) =>
    v.scenario.attestations.map(([source, target, rooted]) => ({
      id: idOf(v.pubkey),
      source: String(source),
      target: String(target),
      root: rooted ? hex(recordRoot(v.scenario.name, source, target)) : null,
    })),
  );
  await sql`
    INSERT INTO signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
    SELECT v, s::numeric, t::numeric, decode(r, 'hex')
    FROM unnest(${attestations.map((a) => a.id)}::int[], ${attestations.map((a) => a.source)}::text[],
      ${attestations.map((a) => a.target)}::text[], ${attestations.map((a) => a.root)}::text[])
      AS x (v, s, t, r)`;
  if (options.high !== undefined) {
    await sql`
      INSERT INTO metadata (id, genesis_validators_root, high_watermark_slot, high_watermark_epoch)
      VALUES (1, decode(${gvr}, 'hex'), ${options.high.slot.toString()}::numeric,
        ${options.high.epoch.toString()}::numeric)`;
  }
}
