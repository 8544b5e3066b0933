import { SigilError } from "../../src/errors";

/** The SigilError a promise rejects with; fails the test if it resolves or rejects otherwise. */
export async function errorOf(promise: Promise<unknown>): Promise<SigilError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof SigilError) return err;
    throw err;
  }
  throw new Error("expected a rejection");
}
