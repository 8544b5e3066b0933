import { SqliteFileError } from "../storage/sqlite/file-problem";

/** A database file that cannot be opened, named by its option (`antislashing.path`, …). */
export class DatabaseFileError extends Error {
  override readonly name = "DatabaseFileError";
}

/**
 * `error`, with a sqlite file's failure reworded to name the database, its option and the
 * reason: "cannot open the slashing protection database X (antislashing.path): it is a directory".
 */
export function namingOption(error: unknown, database: string, option: string): unknown {
  if (!(error instanceof SqliteFileError)) return error;
  return new DatabaseFileError(
    `cannot open the ${database} ${error.path} (${option}): ${error.reason}`,
    { cause: error },
  );
}
