// Unseal of a signer whose cloud_kv table holds 10,000 keys (dynalite, in this process): how long
// the 16-segment scan + decrypt + key import takes, and the signer process's peak RSS (VmHWM).
// The signer is a separate process (the sources under Bun, or SIGIL_BENCH_BINARY).
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type BatchWriteItemCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { SecretKey } from "@chainsafe/blst";
import { sealSecret } from "../../src/keys/cloud-kv/sealed-secret";
import { encodeItem, SCAN_SEGMENTS } from "../../src/keys/cloud-kv/table";
import { combineShares } from "../../src/seal/shares";
import { bootstrapStateful, submitShare, sys, unwrapOwnShare } from "../../test/support/ceremony";
import { startDynamo } from "../../test/support/dynamodb";

const KEYS = Number(process.env.BENCH_CLOUD_KV_KEYS ?? 10_000);
const ROOT = join(import.meta.dir, "../..");

export async function cloudKvLoad(): Promise<Record<string, unknown>> {
  const dynamo = await startDynamo();
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-kv-"));
  // SIGIL_BENCH_BINARY=dist/sigil measures the compiled binary (build it first).
  const binary = process.env.SIGIL_BENCH_BINARY;
  if (binary && !existsSync(binary)) throw new Error(`${binary} does not exist: npm run build`);
  const command = binary ? [binary] : [process.execPath, join(ROOT, "src/main.ts")];
  const config = join(dir, "sigil.yaml");
  writeFileSync(
    config,
    JSON.stringify({
      server: { listen_address: "127.0.0.1", listen_port: 0 },
      metrics: { listen_address: "127.0.0.1", listen_port: 0 },
      logging: { format: "json" },
      key_sources: { cloud_kv: { table: "bench", key_refresh_interval_minutes: 0 } },
      antislashing: { backend: "sqlite", path: join(dir, "slashing.sqlite") },
      signer_state: { backend: "sqlite", path: join(dir, "state.sqlite") },
    }),
  );
  await dynamo.createSlashingTable("bench");
  const proc = Bun.spawn([...command, "serve", "-c", config, "--init-slashing-protection"], {
    env: {
      ...process.env,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "AKIDTEST",
      AWS_SECRET_ACCESS_KEY: "test-secret",
    },
    stdout: "ignore",
    stderr: "pipe",
  });
  let log = "";
  const reader = proc.stderr.getReader();
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      log += new TextDecoder().decode(value);
    }
  })();
  try {
    let url = "";
    for (let i = 0; i < 300 && !url; i++) {
      url = log.match(/"msg":"sigil listening".*?"url":"([^"]+)"/)?.[1] ?? "";
      if (!url) await Bun.sleep(50);
    }
    if (!url) throw new Error(`signer did not start:\n${log}`);
    const { management, operator } = await bootstrapStateful(url, log.split("\n"));
    const share = new Uint8Array(Buffer.from(await unwrapOwnShare(url, operator), "base64"));
    const master = await combineShares([share]);

    const written = performance.now();
    await fillTable(dynamo.client(), master);
    const fillSeconds = (performance.now() - written) / 1000;
    await sys(url, "POST", "seal", {}, management);
    const before = vm(proc.pid);
    const started = performance.now();
    const unsealed = await submitShare(url, "unseal", operator);
    const seconds = (performance.now() - started) / 1000;
    if (unsealed.body.complete !== true) throw new Error(JSON.stringify(unsealed.body));
    const after = vm(proc.pid);
    const loaded = log.match(/"msg":"cloud_kv keys loaded".*?"loaded":(\d+)/g)?.at(-1);
    const result = {
      keys: KEYS,
      segments: SCAN_SEGMENTS,
      unseal_to_loaded_seconds: Number(seconds.toFixed(2)),
      signer_rss_mib_before: before.rss,
      signer_rss_mib_after: after.rss,
      signer_peak_rss_mib: after.hwm,
      loaded_line: loaded ?? "(none)",
      table_fill_seconds: Number(fillSeconds.toFixed(1)),
      signer: binary ?? "bun src/main.ts",
    };
    console.table(result);
    return result;
  } finally {
    proc.kill();
    await proc.exited;
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function fillTable(
  client: ReturnType<Awaited<ReturnType<typeof startDynamo>>["client"]>,
  master: Uint8Array,
) {
  const items: Record<string, AttributeValue>[] = [];
  while (items.length < KEYS) {
    const secret = randomBytes(32);
    let pubkey: string;
    try {
      pubkey = `0x${Buffer.from(SecretKey.fromBytes(secret).toPublicKey().toBytes()).toString("hex")}`;
    } catch {
      continue;
    }
    const now = Date.now();
    items.push(
      encodeItem({
        pubkey,
        ciphertext: sealSecret(master, pubkey, secret),
        status: "active",
        origin: "imported",
        createdAt: now,
        updatedAt: now,
      }),
    );
  }
  const batches: Record<string, AttributeValue>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < batches.length) {
        const batch = batches[next++] ?? [];
        let pending: Record<string, AttributeValue>[] = batch;
        while (pending.length > 0) {
          const requests = pending.map((Item) => ({ PutRequest: { Item } }));
          const answer: BatchWriteItemCommandOutput = await client.send(
            new BatchWriteItemCommand({ RequestItems: { bench: requests } }),
          );
          pending = (answer.UnprocessedItems?.bench ?? []).flatMap((r) =>
            r.PutRequest?.Item ? [r.PutRequest.Item] : [],
          );
        }
      }
    }),
  );
}

/** Current and peak resident set of a process, MiB (Linux /proc). */
function vm(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) =>
    Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1] ?? 0);
  return { rss: Math.round(kib("VmRSS") / 1024), hwm: Math.round(kib("VmHWM") / 1024) };
}

if (import.meta.main) await cloudKvLoad();
