/**
 * Picks the BLS backend at start-up. blst (native) is loaded with a dynamic import inside
 * try/catch, so a missing or broken native module degrades to noble instead of crashing; before
 * blst is used it must sign a fixed message exactly as noble does (catches a miscompiled build).
 */
import type { LocalBlsBackend } from "./backend";
import { toHex } from "./key";
import { createNobleBackend } from "./noble";

export type BlsBackendPreference = "auto" | "blst" | "noble";

export interface BlsBackendSelection {
  backend: LocalBlsBackend;
  /** Why the preferred backend was not used (only for "auto" falling back to noble). */
  note?: string;
}

// Fixed self-test input: a valid, non-secret scalar and a 32-byte message (the worker pool uses
// them too, to check each worker it starts).
export const SELF_TEST_KEY = Uint8Array.from({ length: 32 }, (_, i) => (i === 0 ? 0x2a : i));
export const SELF_TEST_MESSAGE = Uint8Array.from({ length: 32 }, (_, i) => 0xa0 ^ i);

/** Loads the native backend; rejects when @chainsafe/blst (or its .node binding) cannot load. */
export async function loadBlstBackend(): Promise<LocalBlsBackend> {
  const { createBlstBackend } = await import("./blst");
  return createBlstBackend();
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Signs the fixed self-test message with `candidate` and with `reference`; returns a description of
 * the mismatch, or undefined when the public keys and signatures agree and verify both ways.
 */
export function selfTestBackend(
  candidate: LocalBlsBackend,
  reference: LocalBlsBackend,
): string | undefined {
  try {
    const got = candidate.importSecretKey(SELF_TEST_KEY);
    const want = reference.importSecretKey(SELF_TEST_KEY);
    const gotPk = toHex(got.publicKey);
    if (gotPk !== toHex(want.publicKey)) return `public key mismatch (got 0x${gotPk})`;
    const gotSig = candidate.sign(got, SELF_TEST_MESSAGE);
    const wantSig = reference.sign(want, SELF_TEST_MESSAGE);
    if (toHex(gotSig) !== toHex(wantSig)) return `signature mismatch (got 0x${toHex(gotSig)})`;
    if (!candidate.verify(want.publicKey, SELF_TEST_MESSAGE, wantSig)) {
      return "rejects a valid signature";
    }
    const tampered = Uint8Array.from(SELF_TEST_MESSAGE);
    tampered[0] = (tampered[0] ?? 0) ^ 1;
    if (candidate.verify(want.publicKey, tampered, wantSig)) return "accepts a wrong signature";
    return undefined;
  } catch (error) {
    return `threw: ${reasonOf(error)}`;
  }
}

/**
 * The selection logic, with the blst loader injectable so tests can exercise the fallback paths.
 * "blst" throws when blst cannot be loaded or fails the self-test; "auto" falls back to noble with
 * a note in both cases.
 */
export async function chooseBackend(
  preference: BlsBackendPreference,
  loadBlst: () => Promise<LocalBlsBackend>,
): Promise<BlsBackendSelection> {
  const noble = createNobleBackend();
  if (preference === "noble") return { backend: noble };

  let problem: string;
  try {
    const blst = await loadBlst();
    const failure = selfTestBackend(blst, noble);
    if (failure === undefined) return { backend: blst };
    problem = `blst failed its self-test against noble: ${failure}`;
  } catch (error) {
    problem = `blst could not be loaded: ${reasonOf(error)}`;
  }
  if (preference === "blst") throw new Error(`bls backend "blst" requested but ${problem}`);
  return { backend: noble, note: `using noble (pure TypeScript, slower): ${problem}` };
}

export function loadBlsBackend(preference: BlsBackendPreference): Promise<BlsBackendSelection> {
  return chooseBackend(preference, loadBlstBackend);
}
