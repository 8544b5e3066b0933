/**
 * The eth-clients slashing-protection-interchange-tests (v5.3.0, test/vectors/...), run through a
 * SlashingStore exactly as their README prescribes:
 *   - a fresh, empty store per test file (`open()` must return a new empty store each call),
 *     bound to the file's top-level genesis_validators_root: an import with no validators under
 *     that root fixes it (the SlashingStore interface has no other way to create an empty store
 *     for a chain);
 *   - per step: import the interchange (parsed with readInterchange, so the reader is exercised
 *     too); it must fail iff `should_succeed` is false; then every block, then every attestation,
 *     each accepted ("new" or "same_data") iff `should_succeed_complete` (complete strategy) or
 *     `should_succeed` (minimal strategy).
 * Steps flagged `contains_slashable_data` MUST import successfully here: the README allows a
 * client to reject them (and skip the rest), but sigil's backends all choose to import them (see
 * rules.ts), and accepting a rejection would let a backend silently skip 21 steps.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { hexToBytes } from "../../src/antislashing/encoding";
import { readInterchange } from "../../src/antislashing/interchange";
import { SlashingImportError, type SlashingStore } from "../../src/antislashing/store";

export const VECTOR_DIR = join(import.meta.dir, "../vectors/slashing-protection-interchange/tests");

interface VectorBlock {
  pubkey: string;
  slot: string;
  signing_root?: string;
  should_succeed: boolean;
  should_succeed_complete: boolean;
}

interface VectorAttestation {
  pubkey: string;
  source_epoch: string;
  target_epoch: string;
  signing_root?: string;
  should_succeed: boolean;
  should_succeed_complete: boolean;
}

interface VectorStep {
  should_succeed: boolean;
  contains_slashable_data: boolean;
  interchange: unknown;
  blocks: VectorBlock[];
  attestations: VectorAttestation[];
}

export interface InterchangeVector {
  name: string;
  genesis_validators_root: string;
  steps: VectorStep[];
}

export function loadInterchangeVectors(): { file: string; vector: InterchangeVector }[] {
  return readdirSync(VECTOR_DIR)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((file) => ({
      file,
      vector: JSON.parse(readFileSync(join(VECTOR_DIR, file), "utf8")) as InterchangeVector,
    }));
}

const ZERO_ROOT_HEX = `0x${"00".repeat(32)}`;

export function interchangeVectorSuite(
  name: string,
  open: () => Promise<SlashingStore>,
  options: { strategy: "complete" | "minimal" },
): void {
  const vectors = loadInterchangeVectors();
  const flag = options.strategy === "complete" ? "should_succeed_complete" : "should_succeed";

  describe(`${name}: EIP-3076 interchange tests (${options.strategy}, ${flag})`, () => {
    test("all 38 vector files are present", () => {
      expect(vectors.length).toBe(38);
    });

    for (const { file, vector } of vectors) {
      test(vector.name, async () => {
        const gvr = hexToBytes(vector.genesis_validators_root);
        const store = await open();
        try {
          await store.importInterchange(
            await readInterchange(
              JSON.stringify({
                metadata: {
                  interchange_format_version: "5",
                  genesis_validators_root: vector.genesis_validators_root,
                },
                data: [],
              }),
            ),
          );
          for (const [i, step] of vector.steps.entries()) {
            const where = `${file} step ${i}`;
            let imported = true;
            try {
              await store.importInterchange(
                await readInterchange(JSON.stringify(step.interchange)),
              );
            } catch (error) {
              if (!(error instanceof SlashingImportError)) throw error;
              imported = false;
            }
            expect({ where, imported }).toEqual({ where, imported: step.should_succeed });
            for (const [j, b] of step.blocks.entries()) {
              const decision = await store.checkAndInsertBlock(gvr, {
                pubkey: b.pubkey,
                slot: BigInt(b.slot),
                signingRoot: hexToBytes(b.signing_root ?? ZERO_ROOT_HEX),
              });
              const accepted = decision.outcome !== "refused";
              expect({
                where: `${where} block ${j} (slot ${b.slot})`,
                accepted,
                decision,
              }).toMatchObject({
                accepted: b[flag],
              });
            }
            for (const [j, a] of step.attestations.entries()) {
              const decision = await store.checkAndInsertAttestation(gvr, {
                pubkey: a.pubkey,
                sourceEpoch: BigInt(a.source_epoch),
                targetEpoch: BigInt(a.target_epoch),
                signingRoot: hexToBytes(a.signing_root ?? ZERO_ROOT_HEX),
              });
              const accepted = decision.outcome !== "refused";
              expect({
                where: `${where} attestation ${j} (${a.source_epoch}→${a.target_epoch})`,
                accepted,
                decision,
              }).toMatchObject({ accepted: a[flag] });
            }
          }
        } finally {
          await store.close();
        }
      });
    }
  });
}
