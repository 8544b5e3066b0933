import { type FutureBound, firstRecordBeyond } from "../antislashing/future";
import {
  type CollectedInterchange,
  collectInterchange,
  interchangeSource,
  readInterchange,
  writeInterchange,
} from "../antislashing/interchange";
import {
  NothingToExportError,
  SlashingImportError,
  type SlashingStore,
} from "../antislashing/store";
import { SigilError } from "../errors";

/**
 * Slashing history that travels with keys (EIP-3076): imported before any key of the request
 * becomes active, exported when keys are deleted. Shared by the Key Manager API and cloud_kv.
 * An import's interchange is read whole (it came in the request body, which is bounded), so that
 * it is refused whole before anything is written.
 */

/** An import's interchange, parsed and checked for form; 400 when malformed. */
export async function readHistory(interchange: string): Promise<CollectedInterchange> {
  try {
    return await collectInterchange(await readInterchange(interchange));
  } catch (error) {
    throw refused(error);
  }
}

/** What an import's history may hold: records of the request's keys, within the future bound. */
export interface HistoryScope {
  /** The keys of the request: the pubkey of each keystore in it (decrypted, or as it claims). */
  readonly requested: ReadonlySet<string>;
  /** The route's key rule: why the caller may not import this key, or undefined. */
  readonly refusal: (pubkey: string) => string | undefined;
  /** `antislashing.max_future_epochs`; absent: no bound (future.ts). */
  readonly bound?: FutureBound;
}

/** How many keys a refusal names before it says how many more there are. */
const NAMED = 10;

/**
 * Imports the history of the request's keys, or refuses the whole request before anything is
 * written: 403 when it holds records of keys the caller may not import, 400 when it holds
 * records of keys none of the request's keystores is for, or a record beyond the future bound
 * (as a signing request for it would be refused). A validator entry without records changes
 * nothing and is skipped whoever it is for.
 */
export async function importHistory(
  slashing: SlashingStore,
  history: CollectedInterchange,
  scope: HistoryScope,
): Promise<void> {
  const withRecords = history.validators.filter(
    (v) => v.blocks.length > 0 || v.attestations.length > 0,
  );
  const outside = [...new Set(withRecords.map((v) => v.pubkey))].filter(
    (pubkey) => !scope.requested.has(pubkey) || scope.refusal(pubkey) !== undefined,
  );
  const forbidden = outside.filter((pubkey) => scope.refusal(pubkey) !== undefined);
  if (forbidden.length > 0)
    throw new SigilError(
      "forbidden",
      `slashing_protection refused, nothing was imported: it holds records of ${named(forbidden)}, which this token may not import (${scope.refusal(forbidden[0] as string)})`,
    );
  if (outside.length > 0)
    throw new SigilError(
      "invalid_request",
      `slashing_protection refused, nothing was imported: it holds records of ${named(outside)}, for which this request has no keystore; send a key's history with its keystore (a loaded key's answers duplicate and its history is still imported), or import it offline with sigil slashing import`,
    );
  const { bound } = scope;
  if (bound) {
    for (const validator of withRecords) {
      const beyond = firstRecordBeyond(validator, bound);
      if (beyond)
        throw new SigilError(
          "invalid_request",
          `slashing_protection refused, nothing was imported: ${beyond}, as a signing request for it would be`,
        );
    }
  }
  try {
    await slashing.importInterchange(interchangeSource(history.metadata, withRecords));
  } catch (error) {
    throw refused(error);
  }
}

function named(pubkeys: readonly string[]): string {
  const more = pubkeys.length - NAMED;
  const keys = pubkeys.slice(0, NAMED).join(", ");
  return `${pubkeys.length === 1 ? "key" : `${pubkeys.length} keys`} ${keys}${more > 0 ? ` and ${more} more` : ""}`;
}

/** A malformed interchange or another chain's: 400; anything else is the database's problem. */
function refused(error: unknown): unknown {
  if (!(error instanceof SlashingImportError)) return error;
  return new SigilError(
    "invalid_request",
    `slashing_protection refused, nothing was imported: ${error.message}`,
  );
}

/** The interchange of `pubkeys`, and which of them have any record (deleted vs never active). */
export async function exportHistory(
  slashing: SlashingStore,
  pubkeys: string[],
): Promise<{ interchange: string; withRecords: Set<string> }> {
  let chunks = "";
  const withRecords = new Set<string>();
  try {
    const source = await slashing.exportInterchange(pubkeys);
    const counted = {
      metadata: source.metadata,
      validators: async function* () {
        for await (const validator of source.validators()) {
          if (validator.blocks.length > 0 || validator.attestations.length > 0)
            withRecords.add(validator.pubkey);
          yield validator;
        }
      },
    };
    await writeInterchange(counted, (chunk: string) => {
      chunks += chunk;
    });
    return { interchange: chunks, withRecords };
  } catch (error) {
    if (!(error instanceof NothingToExportError)) throw error;
    // Nothing was ever signed or imported, so the history is empty; the root is unknown.
    const empty = {
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: `0x${"00".repeat(32)}`,
      },
      data: [],
    };
    return { interchange: JSON.stringify(empty), withRecords };
  }
}
