// One POST /eth/v1/keystores importing 100 standard scrypt keystores (n=2^18, about 1 s of CPU
// each) while the bench polls GET /upcheck every 20 ms: how long a bulk import takes, how many
// cores it keeps busy, and whether the server stays responsive meanwhile.
//
// The keystores are slow to make, so they are generated once (in parallel processes: this file
// run directly, `bun keymanager-import.ts <count>`, prints that many) and cached under
// bench-results/cache/.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { create, defaultScryptModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";

const COUNT = 100;
const POLL_MS = 20;
const ROOT = join(import.meta.dir, "../..");
const CACHE = join(ROOT, "bench-results/cache/keymanager-100-scrypt.json");
const CURVE_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;

interface Keystores {
  keystores: string[];
  passwords: string[];
}

export async function keymanagerImport(): Promise<Record<string, unknown>> {
  const { keystores, passwords } = await cachedKeystores();
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-km-"));
  mkdirSync(join(dir, "keys"));
  const configPath = join(dir, "sigil.yaml");
  // JSON is valid YAML.
  writeFileSync(
    configPath,
    JSON.stringify({
      server: { listen_address: "127.0.0.1", listen_port: 0 },
      metrics: { listen_address: "127.0.0.1", listen_port: 0 },
      key_sources: {
        filesystem: { paths: [join(dir, "keys")] },
        key_manager_api: {
          enabled: true,
          request_timeout_seconds: 600,
          max_items_per_request: COUNT,
        },
      },
      antislashing: { backend: "sqlite", path: join(dir, "slashing_protection.sqlite") },
      logging: { level: "warn,app=info" },
    }),
  );
  const server = Bun.spawn(
    [
      process.execPath,
      join(ROOT, "src/main.ts"),
      "serve",
      "-c",
      configPath,
      "--init-slashing-protection",
    ],
    {
      stderr: "pipe",
      stdout: "ignore",
    },
  );
  try {
    const url = await listeningUrl(server.stderr);
    const clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString()) || 100;

    let importing = true;
    const latencies: number[] = [];
    let failures = 0;
    const poller = (async () => {
      while (importing) {
        const start = performance.now();
        try {
          const response = await fetch(`${url}/upcheck`, { signal: AbortSignal.timeout(5000) });
          await response.arrayBuffer();
          if (response.ok) latencies.push(performance.now() - start);
          else failures++;
        } catch {
          failures++;
        }
        await Bun.sleep(Math.max(0, POLL_MS - (performance.now() - start)));
      }
    })();

    const cpuBefore = cpuTicks(server.pid);
    const started = performance.now();
    const response = await fetch(`${url}/eth/v1/keystores`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ keystores, passwords }),
    });
    const body = (await response.json()) as { data?: { status: string; message?: string }[] };
    const wallS = (performance.now() - started) / 1000;
    const cpuS = (cpuTicks(server.pid) - cpuBefore) / clockTicks;
    importing = false;
    await poller;

    const imported = body.data?.filter((item) => item.status === "imported").length ?? 0;
    if (!response.ok || imported !== COUNT) {
      throw new Error(
        `import failed: HTTP ${response.status}, ${imported}/${COUNT} imported: ${JSON.stringify(body).slice(0, 2000)}`,
      );
    }

    const sorted = latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
    const result = {
      keystores: COUNT,
      wall_s: round(wallS, 2),
      keystores_per_s: round(COUNT / wallS, 2),
      cpu_s: round(cpuS, 2),
      avg_cores_used: round(cpuS / wallS, 2),
      cores: cpus().length,
      upcheck_samples: sorted.length,
      upcheck_p50_ms: round(pct(50), 2),
      upcheck_p99_ms: round(pct(99), 2),
      upcheck_max_ms: round(sorted.at(-1) ?? 0, 2),
      upcheck_failures: failures,
    };
    console.table([result]);
    return result;
  } finally {
    server.kill("SIGTERM");
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cachedKeystores(): Promise<Keystores> {
  if (existsSync(CACHE)) {
    const cached = JSON.parse(readFileSync(CACHE, "utf8")) as Keystores;
    if (cached.keystores.length === COUNT) return cached;
  }
  const processes = Math.min(cpus().length, COUNT);
  console.log(
    `generating ${COUNT} scrypt keystores in ${processes} processes (once; cached in ${relative(process.cwd(), CACHE)})`,
  );
  const parts = await Promise.all(
    Array.from({ length: processes }, async (_, i) => {
      const count = Math.floor(COUNT / processes) + (i < COUNT % processes ? 1 : 0);
      const child = Bun.spawn([process.execPath, import.meta.path, String(count)], {
        stdout: "pipe",
      });
      const text = await new Response(child.stdout).text();
      if ((await child.exited) !== 0) throw new Error("keystore generation failed");
      return JSON.parse(text) as Keystores;
    }),
  );
  const all = {
    keystores: parts.flatMap((part) => part.keystores),
    passwords: parts.flatMap((part) => part.passwords),
  };
  mkdirSync(dirname(CACHE), { recursive: true });
  writeFileSync(CACHE, JSON.stringify(all));
  return all;
}

async function generate(count: number): Promise<Keystores> {
  const out: Keystores = { keystores: [], passwords: [] };
  for (let i = 0; i < count; i++) {
    let secret = randomBytes(32);
    while (!isValidSecret(secret)) secret = randomBytes(32);
    const password = randomBytes(16).toString("hex");
    const pubkey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
    const keystore = await create(
      password,
      secret,
      pubkey,
      `m/12381/3600/${i}/0/0`,
      "sigil bench",
      defaultScryptModule(),
    );
    out.keystores.push(JSON.stringify(keystore));
    out.passwords.push(password);
  }
  return out;
}

function isValidSecret(secret: Uint8Array): boolean {
  const value = BigInt(`0x${Buffer.from(secret).toString("hex")}`);
  return value > 0n && value < CURVE_ORDER;
}

/** utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/<pid>/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** The server's url from its "sigil listening" line; stderr keeps being drained afterwards. */
function listeningUrl(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Promise((resolve, reject) => {
    (async () => {
      let text = "";
      const decoder = new TextDecoder();
      for await (const chunk of stream) {
        text += decoder.decode(chunk, { stream: true });
        const match = text.match(/sigil listening.*url=(\S+)/);
        if (match?.[1]) resolve(match[1]);
      }
      reject(new Error(`server did not start:\n${text}`));
    })();
  });
}

function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

if (import.meta.main) {
  process.stdout.write(JSON.stringify(await generate(Number(process.argv[2]))));
}
