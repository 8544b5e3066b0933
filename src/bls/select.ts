/**
 * Picks the BLS backend at start-up. blst (native) is loaded with a dynamic import inside
 * try/catch, so a missing or broken native module degrades to noble instead of crashing; before
 * blst is used it must reproduce a fixed public key and signature and tell a valid signature from
 * a tampered one (catches a miscompiled build). The expected answers are constants, computed once
 * with noble and checked against noble and blst by select.test.ts: the start-up does not run the
 * pure-TypeScript arithmetic of noble (about 30 ms of the main thread) unless it falls back to it.
 */
import type { LocalBlsBackend } from "./backend";
import { toHex } from "./key";

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
/** The compressed public key of SELF_TEST_KEY (noble and blst agree; select.test.ts checks). */
export const SELF_TEST_PUBKEY =
  "ae15ce4ecfe12f0dc1b90c932527451b9ec3c631c5c45124f684fbcfa96b066e94e297f1dfcec2792d82b9ecb6330e91";
/** SELF_TEST_KEY's signature of SELF_TEST_MESSAGE with the Ethereum POP DST, compressed. */
export const SELF_TEST_SIGNATURE =
  "a61c93bf0f778a25450cdf8f3f77351c612e6643a14881b4ed5d0fcdf055572b23ee2b4776d6f2d704a2cf67a1bc5e60150c02489f4d85f7470030c681ab575ce60c1e7b6b44912464b78dd729c2321506823e01e936e298f263c4abdf646ba1";

/** Loads the native backend; rejects when @chainsafe/blst (or its .node binding) cannot load. */
export async function loadBlstBackend(): Promise<LocalBlsBackend> {
  const { createBlstBackend } = await import("./blst");
  return createBlstBackend();
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Signs the fixed self-test message with `candidate` and compares the public key and signature
 * with the known answers; returns a description of the mismatch, or undefined when they agree and
 * `candidate` verifies the known signature and refuses it for another message.
 */
export function selfTestBackend(candidate: LocalBlsBackend): string | undefined {
  try {
    const got = candidate.importSecretKey(SELF_TEST_KEY);
    const gotPk = toHex(got.publicKey);
    if (gotPk !== SELF_TEST_PUBKEY) return `public key mismatch (got 0x${gotPk})`;
    const gotSig = toHex(candidate.sign(got, SELF_TEST_MESSAGE));
    candidate.forget(got);
    if (gotSig !== SELF_TEST_SIGNATURE) return `signature mismatch (got 0x${gotSig})`;
    const publicKey = Uint8Array.from(Buffer.from(SELF_TEST_PUBKEY, "hex"));
    const signature = Uint8Array.from(Buffer.from(SELF_TEST_SIGNATURE, "hex"));
    if (!candidate.verify(publicKey, SELF_TEST_MESSAGE, signature)) {
      return "rejects a valid signature";
    }
    const tampered = Uint8Array.from(SELF_TEST_MESSAGE);
    tampered[0] = (tampered[0] ?? 0) ^ 1;
    if (candidate.verify(publicKey, tampered, signature)) return "accepts a wrong signature";
    return undefined;
  } catch (error) {
    return `threw: ${reasonOf(error)}`;
  }
}

/** noble, loaded only when chosen or fallen back to. */
async function loadNobleBackend(): Promise<LocalBlsBackend> {
  const { createNobleBackend } = await import("./noble");
  return createNobleBackend();
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
  if (preference === "noble") return { backend: await loadNobleBackend() };

  let problem: string;
  try {
    const blst = await loadBlst();
    const failure = selfTestBackend(blst);
    if (failure === undefined) return { backend: blst };
    problem = `blst failed its self-test: ${failure}`;
  } catch (error) {
    problem = `blst could not be loaded: ${reasonOf(error)}`;
  }
  if (preference === "blst") throw new Error(`bls backend "blst" requested but ${problem}`);
  return {
    backend: await loadNobleBackend(),
    note: `using noble (pure TypeScript, slower): ${problem}`,
  };
}

export function loadBlsBackend(preference: BlsBackendPreference): Promise<BlsBackendSelection> {
  return chooseBackend(preference, loadBlstBackend);
}
