/** Builders shared by the slashing protection suites (conformance, vectors, properties). */
import { bytesToHex } from "../../src/antislashing/encoding";
import { collectInterchange, interchangeSource } from "../../src/antislashing/interchange";
import type {
  AttestationVote,
  BlockProposal,
  InterchangeAttestation,
  InterchangeBlock,
  InterchangeSource,
  InterchangeValidator,
  SlashingStore,
} from "../../src/antislashing/store";

export const GVR_A = new Uint8Array(32).fill(0xa1);
export const GVR_B = new Uint8Array(32).fill(0xb2);
export const ZERO_ROOT = new Uint8Array(32);

/** A well-formed, deterministic pubkey (not a valid BLS point: stores never check that). */
export function pubkey(n: number, salt = 0): string {
  const hex8 = (x: number) => (x >>> 0).toString(16).padStart(8, "0");
  const body = `${hex8(salt)}${hex8(n)}`;
  return `0x${body.repeat(6)}`;
}

/** A deterministic 32-byte root derived from its parts (sha256 of their text). */
export function root(...parts: (string | number | bigint)[]): Uint8Array {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(parts.map(String).join("/"));
  return new Uint8Array(hasher.digest());
}

export function block(pk: string, slot: number | bigint, signingRoot: Uint8Array): BlockProposal {
  return { pubkey: pk, slot: BigInt(slot), signingRoot };
}

export function vote(
  pk: string,
  source: number | bigint,
  target: number | bigint,
  signingRoot: Uint8Array,
): AttestationVote {
  return { pubkey: pk, sourceEpoch: BigInt(source), targetEpoch: BigInt(target), signingRoot };
}

export function iBlock(slot: number | bigint, signingRoot?: Uint8Array): InterchangeBlock {
  return signingRoot === undefined ? { slot: BigInt(slot) } : { slot: BigInt(slot), signingRoot };
}

export function iAtt(
  source: number | bigint,
  target: number | bigint,
  signingRoot?: Uint8Array,
): InterchangeAttestation {
  const base = { sourceEpoch: BigInt(source), targetEpoch: BigInt(target) };
  return signingRoot === undefined ? base : { ...base, signingRoot };
}

export function interchange(
  gvr: Uint8Array,
  validators: InterchangeValidator[],
): InterchangeSource {
  return interchangeSource(
    { interchange_format_version: "5", genesis_validators_root: bytesToHex(gvr) },
    validators,
  );
}

/** A source that yields `validators` and then fails, as a truncated or invalid file would. */
export function failingInterchange(
  gvr: Uint8Array,
  validators: InterchangeValidator[],
  error: Error,
): InterchangeSource {
  return interchangeSource(
    { interchange_format_version: "5", genesis_validators_root: bytesToHex(gvr) },
    async function* () {
      yield* validators;
      throw error;
    },
  );
}

export interface CanonicalRecords {
  blocks: string[];
  attestations: string[];
}

const rootText = (r: Uint8Array | undefined) => (r === undefined ? "-" : bytesToHex(r));

export function canonicalBlock(b: InterchangeBlock): string {
  return `${b.slot}@${rootText(b.signingRoot)}`;
}

export function canonicalAttestation(a: InterchangeAttestation): string {
  return `${a.sourceEpoch}->${a.targetEpoch}@${rootText(a.signingRoot)}`;
}

/** Records per pubkey as sorted strings; duplicates within one validator collapse. */
export function canonical(
  validators: readonly InterchangeValidator[],
): Map<string, CanonicalRecords> {
  const out = new Map<string, { blocks: Set<string>; attestations: Set<string> }>();
  for (const v of validators) {
    let entry = out.get(v.pubkey);
    if (entry === undefined) {
      entry = { blocks: new Set(), attestations: new Set() };
      out.set(v.pubkey, entry);
    }
    for (const b of v.blocks) entry.blocks.add(canonicalBlock(b));
    for (const a of v.attestations) entry.attestations.add(canonicalAttestation(a));
  }
  const sorted = new Map<string, CanonicalRecords>();
  for (const [pk, entry] of [...out].sort(([a], [b]) => (a < b ? -1 : 1))) {
    sorted.set(pk, {
      blocks: [...entry.blocks].sort(),
      attestations: [...entry.attestations].sort(),
    });
  }
  return sorted;
}

/** The store's export, canonicalised, dropping validators that have no records at all. */
export async function exported(
  store: SlashingStore,
  pubkeys?: readonly string[],
): Promise<Map<string, CanonicalRecords>> {
  const { validators } = await collectInterchange(await store.exportInterchange(pubkeys));
  return canonical(validators.filter((v) => v.blocks.length > 0 || v.attestations.length > 0));
}
