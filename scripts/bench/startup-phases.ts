// Where the start-up time of raw keys goes, phase by phase, in-process (a fresh Bun process, as
// at start-up): each phase of loading `file-raw` descriptors run alone over the same files, so
// that its cost can be read apart from the others. `npm run bench startup` runs it on the
// raw-large key directory and prints its table next to the signer's own figures.
//
// Phases, each timed alone: wall ms, and the CPU of the whole process (workers included) meanwhile:
//   list         readdir of the key directory
//   read         reading every descriptor (synchronous reads, as the first load does)
//   parse        parseDescriptorFile: the YAML of each descriptor, with its checks
//   import       blst SecretKey.fromBytes of each secret (the scalar checked and loaded)
//   derive       the public key of each secret (sk.toPublicKey().toBytes(true))
//   cache-lookup the public-key cache's lookup of each secret (two HMAC-SHA256 and a map lookup)
//   hand-over/N  createPooledBackend with N workers, then importSecretKeys of every secret with
//                its cached public key, in batches of 256 as the loader does: wall time until
//                every worker answered (nothing derived, so this is the hand-over alone)
//   derive-in-workers/N  the same without cached public keys: the workers derive them
//
//   bun scripts/bench/startup-phases.ts <dir> <workers,…>   (prints JSON)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SecretKey } from "@chainsafe/blst";
import { createBlstBackend } from "../../src/bls/blst";
import { createPooledBackend } from "../../src/bls/pool";
import { parseDescriptorFile } from "../../src/keys/descriptor";
import { PubkeyCache } from "../../src/keys/pubkey-cache";
import { benchLogger, round } from "./support";

export interface PhaseRow {
  phase: string;
  ms: number;
  us_per_key: number;
  process_cpu_ms: number;
}

const BATCH = 256;

async function phases(dir: string, workerCounts: readonly number[]): Promise<PhaseRow[]> {
  const rows: PhaseRow[] = [];
  let keys = 0;
  const time = async <T>(phase: string, run: () => T | Promise<T>): Promise<T> => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const result = await run();
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    rows.push({
      phase,
      ms: round(ms, 1),
      us_per_key: keys > 0 ? round((ms * 1000) / keys, 2) : 0,
      process_cpu_ms: round((used.user + used.system) / 1000, 1),
    });
    return result;
  };
  const names = await time("list", () => readdirSync(dir).filter((n) => n.endsWith(".yaml")));
  keys = names.length;
  rows[0] = { ...(rows[0] as PhaseRow), us_per_key: round(((rows[0]?.ms ?? 0) * 1000) / keys, 2) };
  const files = await time("read", () => names.map((name) => readFileSync(join(dir, name))));
  const secrets = await time("parse", () =>
    files.map((bytes, i) => {
      const [doc] = parseDescriptorFile(bytes.toString("utf8"), join(dir, names[i] as string));
      if (!doc?.ok || doc.descriptor.type !== "file-raw") throw new Error("not a raw key");
      return doc.descriptor.privateKey;
    }),
  );
  const native = await time("import", () => secrets.map((secret) => SecretKey.fromBytes(secret)));
  const publicKeys = await time("derive", () => native.map((sk) => sk.toPublicKey().toBytes(true)));
  const logger = benchLogger();
  const cache = await PubkeyCache.open(join(dir, "..", "phases.pubkeys"), logger);
  if (cache === undefined) throw new Error("no public-key cache");
  secrets.forEach((secret, i) => {
    cache.put(secret, publicKeys[i] as Uint8Array);
  });
  cache.flush(false);
  const claimed = await time("cache-lookup", () => secrets.map((secret) => cache.lookup(secret)));
  if (claimed.some((claim) => claim === undefined)) throw new Error("a cache lookup missed");
  const blst = createBlstBackend();
  for (const workers of workerCounts) {
    for (const withClaims of [true, false]) {
      const pool = await createPooledBackend(blst, { workers, backendName: "blst", logger });
      try {
        const name = withClaims ? `hand-over/${workers}` : `derive-in-workers/${workers}`;
        const results = await time(name, async () => {
          const pending = [];
          for (let from = 0; from < secrets.length; from += BATCH) {
            const batch = secrets.slice(from, from + BATCH);
            pending.push(
              pool.importSecretKeys(
                batch,
                withClaims ? claimed.slice(from, from + BATCH) : undefined,
              ),
            );
          }
          return (await Promise.all(pending)).flat();
        });
        if (results.some((result) => !result.ok)) throw new Error("an import failed");
      } finally {
        await pool.close();
      }
    }
  }
  return rows;
}

if (import.meta.main) {
  const [dir, workers] = process.argv.slice(2);
  if (dir === undefined) throw new Error("usage: startup-phases.ts <dir> <workers,…>");
  const counts = (workers ?? "2").split(",").map(Number);
  process.stdout.write(JSON.stringify(await phases(dir, counts)));
  process.exit(0);
}
