import { readInterchange, writeInterchange } from "../antislashing/interchange";
import {
  NothingToExportError,
  SlashingImportError,
  type SlashingStore,
} from "../antislashing/store";
import { SigilError } from "../errors";

/**
 * Slashing history that travels with keys (EIP-3076): imported before any key of the request
 * becomes active, exported when keys are deleted. Shared by the Key Manager API and cloud_kv.
 */
export async function importHistory(slashing: SlashingStore, interchange: string): Promise<void> {
  try {
    await slashing.importInterchange(await readInterchange(interchange));
  } catch (error) {
    if (error instanceof SlashingImportError) {
      throw new SigilError(
        "invalid_request",
        `slashing_protection refused, nothing was imported: ${error.message}`,
      );
    }
    throw error;
  }
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
