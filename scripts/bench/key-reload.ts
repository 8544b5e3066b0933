// 1,000 key reloads (POST /reload, the code path SIGHUP takes too) against one signer process, with
// descriptors changing between reloads: does the signer's memory stay flat (Web3Signer's #1073
// leaked keys on every reload)? A figure, not a pass/fail check.
//
// The key directory holds BENCH_RELOAD_KEYS raw keys and a few keystores (cheap PBKDF2) plus two
// keys imported through the Key Manager API. Between reloads one raw descriptor changes key and
// one descriptor comes and goes, so every reload opens new keys and lets old ones go. After a
// warm-up, the resident set (VmRSS) is read every 100 reloads.
//
//   BENCH_RELOAD_COUNT   reloads measured (default 1000)
//   BENCH_RELOAD_KEYS    raw keys in the directory (default 200)
//   SIGIL_BENCH_BINARY   a built binary to run instead of the sources (default: the sources)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@chainsafe/bls-keystore";
import { CHEAP_PBKDF2 } from "../../test/support/keystores";
import {
  baseConfig,
  benchSecret,
  envInt,
  load1,
  percentile,
  printTable,
  pubkeyHex,
  ROOT,
  round,
  sortedCopy,
  startSigner,
  vm,
  writeRawKeys,
} from "./support";

const WARM_UP = 50;
const SAMPLE_EVERY = 100;
const KEYSTORES = 5;
const PASSWORD = "bench-reload";
/** Key indexes of the descriptor that changes and of the one that comes and goes: far above the rest. */
const CHANGED = 1_000_000;
const CHURN = 2_000_000;

export async function keyReload(): Promise<Record<string, unknown>> {
  const reloads = envInt("BENCH_RELOAD_COUNT", 1000);
  const rawKeys = envInt("BENCH_RELOAD_KEYS", 200);
  const binary = process.env.SIGIL_BENCH_BINARY;
  const command = binary ? [binary] : [process.execPath, join(ROOT, "src/main.ts")];
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-reload-"));
  const managed = join(dir, "managed");
  const keys = join(dir, "keys");
  mkdirSync(managed);
  writeRawKeys(keys, rawKeys);
  for (let i = 0; i < KEYSTORES; i++) await writeKeystore(keys, `ks-${i}`, rawKeys + i);
  const base = baseConfig();
  const signer = await startSigner(
    command,
    join(dir, "sigil.yaml"),
    {
      ...base,
      // The reload lines carry the collection's time (after_ms).
      logging: { ...(base.logging as object), level: "warn,app=info,keys=info" },
      key_sources: {
        filesystem: { paths: [managed, keys] },
        key_manager_api: { enabled: true },
      },
      antislashing: { backend: "sqlite", path: join(dir, "slashing.sqlite") },
    },
    60_000,
    ["--init-slashing-protection"],
  );
  try {
    await importThroughKeyManager(signer.url, [rawKeys + KEYSTORES, rawKeys + KEYSTORES + 1]);
    const expected = rawKeys + KEYSTORES + 2;
    let churn = 0;
    /** One changed descriptor, one added or removed, then one reload, timed to completion. */
    const step = async (i: number): Promise<number> => {
      const changed = benchSecret(CHANGED + (i % 2));
      writeFileSync(
        join(keys, "raw-0.yaml"),
        `type: file-raw\nprivateKey: "0x${Buffer.from(changed).toString("hex")}"\n`,
      );
      const extra = join(keys, "churn.yaml");
      if (churn++ % 2 === 0)
        writeFileSync(
          extra,
          `type: file-raw\nprivateKey: "0x${Buffer.from(benchSecret(CHURN + i)).toString("hex")}"\n`,
        );
      else rmSync(extra, { force: true });
      const started = performance.now();
      await reload(signer.url);
      return performance.now() - started;
    };
    for (let i = 0; i < WARM_UP; i++) await step(i);
    const first = vm(signer.proc.pid);
    const samples: { reloads: number; rss_mib: number }[] = [
      { reloads: 0, rss_mib: first.rss_mib },
    ];
    const times: number[] = [];
    for (let i = 1; i <= reloads; i++) {
      times.push(await step(WARM_UP + i));
      if (i % SAMPLE_EVERY === 0)
        samples.push({ reloads: i, rss_mib: vm(signer.proc.pid).rss_mib });
    }
    const loaded = (await (await fetch(`${signer.url}/api/v1/eth2/publicKeys`)).json()) as string[];
    const collections = sortedCopy(
      signer.log
        .filter((line) => line.includes('"msg":"keys reloaded"'))
        .map((line) => Number((JSON.parse(line) as { after_ms?: number }).after_ms ?? 0)),
    );
    const last = vm(signer.proc.pid);
    const sorted = sortedCopy(times);
    const result = {
      signer: binary ?? "bun src/main.ts",
      keys_loaded: loaded.length,
      keys_expected: [expected, expected + 1],
      reloads,
      warm_up_reloads: WARM_UP,
      rss_start_mib: first.rss_mib,
      rss_end_mib: last.rss_mib,
      rss_change_pct: round(((last.rss_mib - first.rss_mib) / first.rss_mib) * 100, 1),
      rss_max_mib: Math.max(...samples.map((s) => s.rss_mib)),
      peak_rss_mib: last.peak_rss_mib,
      reload_p50_ms: round(percentile(sorted, 50), 1),
      reload_p99_ms: round(percentile(sorted, 99), 1),
      collect_p50_ms: round(percentile(collections, 50), 1),
      collect_max_ms: round(collections.at(-1) ?? 0, 1),
      load1: load1(),
    };
    printTable("RSS every 100 reloads", samples);
    printTable("key reload", [result]);
    return { ...result, samples };
  } finally {
    await signer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function writeKeystore(dir: string, name: string, index: number): Promise<void> {
  const secret = benchSecret(index);
  const pubkey = Buffer.from(pubkeyHex(secret).slice(2), "hex");
  const keystore = await create(PASSWORD, secret, pubkey, "m/12381/3600/0/0/0", "", CHEAP_PBKDF2);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(keystore));
  writeFileSync(join(dir, `${name}.txt`), PASSWORD, { mode: 0o600 });
  writeFileSync(
    join(dir, `${name}.yaml`),
    `type: file-keystore\nkeystoreFile: ${name}.json\nkeystorePasswordFile: ${name}.txt\n`,
  );
}

async function importThroughKeyManager(url: string, indexes: number[]): Promise<void> {
  const keystores = await Promise.all(
    indexes.map(async (index) => {
      const secret = benchSecret(index);
      const pubkey = Buffer.from(pubkeyHex(secret).slice(2), "hex");
      const made = await create(PASSWORD, secret, pubkey, "m/12381/3600/0/0/0", "", CHEAP_PBKDF2);
      return JSON.stringify(made);
    }),
  );
  const response = await fetch(`${url}/eth/v1/keystores`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ keystores, passwords: keystores.map(() => PASSWORD) }),
  });
  const body = (await response.json()) as { data: { status: string }[] };
  if (!body.data.every((d) => d.status === "imported"))
    throw new Error(`Key Manager import failed: ${JSON.stringify(body)}`);
}

/** POST /reload, then GET /reload until it is no longer running. */
async function reload(url: string): Promise<void> {
  const asked = await fetch(`${url}/reload`, { method: "POST" });
  if (asked.status !== 202) throw new Error(`POST /reload answered ${asked.status}`);
  for (;;) {
    const status = (await (await fetch(`${url}/reload`)).json()) as { status: string };
    if (status.status === "failed") throw new Error(`reload failed: ${JSON.stringify(status)}`);
    if (status.status !== "running") return;
    await Bun.sleep(1);
  }
}
