// The sqlite store's WAL sync, held at the IO edge (the store's `syncWal` option) so that a test
// decides when each sync runs, and whether it fails.
import { Database } from "bun:sqlite";
import { fdatasyncWal, type SyncWal } from "../../src/antislashing/backends/sqlite/wal-sync";

/** Blocks committed in the file, as another connection sees them. */
export function committedBlocks(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return Number((db.query("SELECT count(*) AS n FROM signed_blocks").get() as { n: number }).n);
  } finally {
    db.close();
  }
}

/**
 * A WAL sync each call of which waits for the test's release, then really fdatasyncs; released
 * with an error, it fails with that error instead. Each call records the blocks committed when it
 * started.
 */
export function heldWalSync(path: string) {
  const calls: { blocksAtStart: number; release: (failure?: Error) => void }[] = [];
  const syncWal: SyncWal = async (fd) => {
    const held = Promise.withResolvers<Error | undefined>();
    calls.push({
      blocksAtStart: committedBlocks(path),
      release: (failure) => held.resolve(failure),
    });
    const failure = await held.promise;
    if (failure) throw failure;
    await fdatasyncWal(fd);
  };
  return { calls, syncWal };
}
