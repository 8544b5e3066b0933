// Checks on what signers returned, made without sigil's own code: slashability by the reference
// model written from EIP-3076 (test/antislashing/model.ts), records by reading an exported
// interchange. Signatures are checked by verifiesAgainstOracle (test/support/oracle.ts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CompleteModel } from "../antislashing/model";
import { runSigilAsync } from "../support/cli";
import { type SignedMessage, slashablePairs } from "../support/slashing";

export interface Exported {
  data: {
    pubkey: string;
    signed_blocks: { slot: string; signing_root?: string }[];
    signed_attestations: { source_epoch: string; target_epoch: string; signing_root?: string }[];
  }[];
}

/** Full history (sqlite, postgres) or watermarks only (dynamodb, EIP-3076's minimal strategy). */
export type Strategy = "complete" | "minimal";

/** `sigil slashing export` into a fresh file under `dir`, parsed. Async: dynalite lives in this process. */
export async function exportRecords(
  dir: string,
  configFile: string,
  env: Record<string, string>,
): Promise<Exported> {
  const file = join(dir, `export-${crypto.randomUUID()}.json`);
  const exported = await runSigilAsync(
    ["slashing", "export", "-c", configFile, "--file", file],
    env,
  );
  if (exported.code !== 0) throw new Error(`slashing export failed: ${exported.stderr}`);
  return JSON.parse(readFileSync(file, "utf8")) as Exported;
}

/**
 * Whether the export still refuses anything slashable with `message`: its exact record (complete
 * history), or watermarks at or above it (minimal: nothing at or below them is signed again).
 */
export function isCovered(exported: Exported, message: SignedMessage, strategy: Strategy): boolean {
  const validator = exported.data.find((v) => v.pubkey === message.pubkey);
  if (!validator) return false;
  if (message.kind === "block") {
    const slot = message.slot ?? -1;
    return validator.signed_blocks.some((b) =>
      strategy === "minimal"
        ? Number(b.slot) >= slot
        : Number(b.slot) === slot && b.signing_root === message.signingRoot,
    );
  }
  const [source, target] = [message.source ?? -1, message.target ?? -1];
  return validator.signed_attestations.some((a) =>
    strategy === "minimal"
      ? Number(a.source_epoch) >= source && Number(a.target_epoch) >= target
      : Number(a.source_epoch) === source &&
        Number(a.target_epoch) === target &&
        a.signing_root === message.signingRoot,
  );
}

/** The returned signatures whose message the export does not cover: records lost. */
export function lostRecords(
  exported: Exported,
  messages: readonly SignedMessage[],
  strategy: Strategy,
): SignedMessage[] {
  return messages.filter((message) => !isCovered(exported, message, strategy));
}

/**
 * The messages slashable together with another message of the list, by the reference model:
 * holding every message, it must see each one as a repeat of itself (same_data) and nothing else.
 * Applied to what was sent, it counts the conflicting requests; to what was signed, the
 * conflicting signatures (which must be none).
 */
export function slashableAmong(messages: readonly SignedMessage[]): SignedMessage[] {
  const model = new CompleteModel();
  for (const m of messages) {
    model.import([
      m.kind === "block"
        ? {
            pubkey: m.pubkey,
            blocks: [{ slot: BigInt(m.slot ?? 0), root: m.signingRoot }],
            attestations: [],
          }
        : {
            pubkey: m.pubkey,
            blocks: [],
            attestations: [
              { source: BigInt(m.source ?? 0), target: BigInt(m.target ?? 0), root: m.signingRoot },
            ],
          },
    ]);
  }
  return messages.filter((m) => {
    const decision =
      m.kind === "block"
        ? model.decideBlock(m.pubkey, BigInt(m.slot ?? 0), m.signingRoot)
        : model.decideAttestation(
            m.pubkey,
            BigInt(m.source ?? 0),
            BigInt(m.target ?? 0),
            m.signingRoot,
          );
    return decision.outcome !== "same_data";
  });
}

/**
 * Returned signatures that conflict, two independent ways: the reference model (slashableAmong)
 * and the pairwise EIP-3076 conditions of test/support/slashing.ts. Both must find nothing.
 */
export function conflictingSignatures(signed: readonly SignedMessage[]): {
  byModel: number;
  pairs: number;
} {
  return { byModel: slashableAmong(signed).length, pairs: slashablePairs(signed).length };
}
