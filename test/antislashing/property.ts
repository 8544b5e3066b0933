/**
 * Model-based property test: random sequences of block proposals, attestations and small imports
 * over 3 validators, in tight slot/epoch ranges so that double votes, surrounds, repeats and
 * watermark hits are frequent. Every decision of the store must equal the reference model's
 * (model.ts, written from the EIP, independent of src/antislashing/rules.ts):
 *   - complete stores: exactly CompleteModel (outcome and refusal reason);
 *   - minimal stores: exactly MinimalModel, AND never more permissive than the complete strategy:
 *     whatever the minimal store accepts, a CompleteModel holding the same history (everything the
 *     minimal store accepted, plus every import) accepts too.
 * Signing roots are derived from the message (validator, slot or epochs, and a variant bit), like
 * real signing roots: the same root always means the same message.
 *
 *   slashingPropertySuite("sqlite", () => openSqliteStore(path, { create: true }), { strategy: "complete" });
 *
 * One store is opened for the whole property (`open` is called once); every generated sequence
 * uses 3 fresh pubkeys, so sequences cannot see each other's records, and starts by removing the
 * database-wide high watermark an earlier one may have set. (The low watermark is left out: it
 * only rises, so one sequence's would bound every later one.)
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { bytesToHex } from "../../src/antislashing/encoding";
import type { Decision, InterchangeValidator, SlashingStore } from "../../src/antislashing/store";
import {
  boundRefusal,
  CompleteModel,
  MinimalModel,
  type ModelBounds,
  type ModelDecision,
  type ModelImport,
} from "./model";
import { GVR_A, interchange, pubkey, root } from "./support";

type Op =
  | { kind: "block"; v: number; slot: number; variant: number }
  | { kind: "attestation"; v: number; source: number; target: number; variant: number }
  | {
      kind: "import";
      v: number;
      blocks: { slot: number; rooted: boolean; variant: number }[];
      attestations: { source: number; target: number; rooted: boolean; variant: number }[];
    }
  /** watermark-repair's high watermark: database-wide, so each sequence starts without one. */
  | { kind: "set_high"; epoch: number; slot: number }
  | { kind: "remove_high" };

const validatorArb = fc.integer({ min: 0, max: 2 });
const variantArb = fc.integer({ min: 0, max: 1 });
const slotArb = fc.integer({ min: 0, max: 12 });
const sourceArb = fc.integer({ min: 0, max: 6 });
const targetArb = fc.integer({ min: 0, max: 8 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant("block" as const),
      v: validatorArb,
      slot: slotArb,
      variant: variantArb,
    }),
  },
  {
    weight: 11,
    arbitrary: fc.record({
      kind: fc.constant("attestation" as const),
      v: validatorArb,
      source: sourceArb,
      target: targetArb,
      variant: variantArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("import" as const),
      v: validatorArb,
      blocks: fc.array(fc.record({ slot: slotArb, rooted: fc.boolean(), variant: variantArb }), {
        maxLength: 3,
      }),
      attestations: fc.array(
        fc.record({
          source: sourceArb,
          target: targetArb,
          rooted: fc.boolean(),
          variant: variantArb,
        }),
        { maxLength: 3 },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("set_high" as const),
      epoch: fc.integer({ min: 0, max: 9 }),
      slot: fc.integer({ min: 0, max: 13 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove_high" as const) }) },
);

const blockRoot = (v: number, slot: number, variant: number) => root("block", v, slot, variant);
const voteRoot = (v: number, s: number, t: number, variant: number) =>
  root("attestation", v, s, t, variant);

function strip(decision: Decision): ModelDecision {
  return decision.outcome === "refused"
    ? { outcome: "refused", reason: decision.reason }
    : { outcome: decision.outcome };
}

export function slashingPropertySuite(
  name: string,
  open: () => Promise<SlashingStore>,
  options: { strategy: "complete" | "minimal"; runs?: number },
): void {
  // Generous explicit timeout (bun's default is 5 s): network backends take a few ms per check.
  const runs = options.runs ?? 100;
  const minimal = options.strategy === "minimal";

  describe(`${name}: decisions match the reference model (${options.strategy})`, () => {
    test(`${runs} random sequences of up to 30 operations over 3 validators`, async () => {
      const store = await open();
      const base = Math.floor(Math.random() * 0xffff) * 0x10000;
      let sequence = 0;
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
            sequence += 1;
            const pks = [0, 1, 2].map((i) => pubkey(i, base + sequence));
            const pk = (v: number) => pks[v] ?? "";
            const complete = new CompleteModel();
            const watermarks = new MinimalModel();
            let bounds: ModelBounds = {};
            await store.changeWatermarks({ kind: "remove_high" });
            for (const [index, op] of ops.entries()) {
              if (op.kind === "set_high" || op.kind === "remove_high") {
                const high = { epoch: BigInt(op.kind === "set_high" ? op.epoch : 0), slot: 0n };
                if (op.kind === "set_high") high.slot = BigInt(op.slot);
                await store.changeWatermarks(
                  op.kind === "set_high" ? { kind: "set_high", high } : { kind: "remove_high" },
                );
                bounds = op.kind === "set_high" ? { high } : {};
                continue;
              }
              if (op.kind === "import") {
                const entry: ModelImport = {
                  pubkey: pk(op.v),
                  blocks: op.blocks.map((b) => ({
                    slot: BigInt(b.slot),
                    root: b.rooted ? bytesToHex(blockRoot(op.v, b.slot, b.variant)) : null,
                  })),
                  attestations: op.attestations.map((a) => ({
                    source: BigInt(a.source),
                    target: BigInt(a.target),
                    root: a.rooted
                      ? bytesToHex(voteRoot(op.v, a.source, a.target, a.variant))
                      : null,
                  })),
                };
                const validator: InterchangeValidator = {
                  pubkey: pk(op.v),
                  blocks: op.blocks.map((b) =>
                    b.rooted
                      ? { slot: BigInt(b.slot), signingRoot: blockRoot(op.v, b.slot, b.variant) }
                      : { slot: BigInt(b.slot) },
                  ),
                  attestations: op.attestations.map((a) => {
                    const epochs = { sourceEpoch: BigInt(a.source), targetEpoch: BigInt(a.target) };
                    return a.rooted
                      ? { ...epochs, signingRoot: voteRoot(op.v, a.source, a.target, a.variant) }
                      : epochs;
                  }),
                };
                await store.importInterchange(interchange(GVR_A, [validator]));
                complete.import([entry]);
                watermarks.import([entry]);
                continue;
              }
              let actual: ModelDecision;
              let expected: ModelDecision;
              let completeView: ModelDecision;
              if (op.kind === "block") {
                const r = blockRoot(op.v, op.slot, op.variant);
                actual = strip(
                  await store.checkAndInsertBlock(GVR_A, {
                    pubkey: pk(op.v),
                    slot: BigInt(op.slot),
                    signingRoot: r,
                  }),
                );
                const bound = boundRefusal(bounds, { slot: BigInt(op.slot) });
                completeView =
                  bound ?? complete.decideBlock(pk(op.v), BigInt(op.slot), bytesToHex(r));
                expected =
                  bound ??
                  (minimal
                    ? watermarks.block(pk(op.v), BigInt(op.slot), bytesToHex(r))
                    : completeView);
                if (actual.outcome === "new")
                  complete.block(pk(op.v), BigInt(op.slot), bytesToHex(r));
              } else {
                const r = voteRoot(op.v, op.source, op.target, op.variant);
                const [s, t] = [BigInt(op.source), BigInt(op.target)];
                actual = strip(
                  await store.checkAndInsertAttestation(GVR_A, {
                    pubkey: pk(op.v),
                    sourceEpoch: s,
                    targetEpoch: t,
                    signingRoot: r,
                  }),
                );
                const bound = boundRefusal(bounds, { source: s, target: t });
                completeView = bound ?? complete.decideAttestation(pk(op.v), s, t, bytesToHex(r));
                expected =
                  bound ??
                  (minimal ? watermarks.attestation(pk(op.v), s, t, bytesToHex(r)) : completeView);
                if (actual.outcome === "new") complete.attestation(pk(op.v), s, t, bytesToHex(r));
              }
              expect({ op: index, ...op, decision: actual }).toEqual({
                op: index,
                ...op,
                decision: expected,
              });
              if (minimal && actual.outcome !== "refused") {
                expect({ op: index, ...op, complete: completeView.outcome !== "refused" }).toEqual({
                  op: index,
                  ...op,
                  complete: true,
                });
              }
            }
          }),
          { numRuns: runs },
        );
      } finally {
        await store.close();
      }
    }, 120_000);
  });
}
