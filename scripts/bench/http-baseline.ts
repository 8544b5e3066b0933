// Cost of the HTTP layer alone (server wrapper, dispatcher and routing), measured on GET /upcheck
// with keep-alive connections from a separate load process. Signing benchmarks compare
// against this: it is the ceiling no signing route can exceed.
import { cpus } from "node:os";
import { join } from "node:path";

const DURATION_MS = 5000;
const CONNECTIONS = 32;

export async function httpBaseline(): Promise<Record<string, unknown>> {
  const root = join(import.meta.dir, "../..");
  const server = Bun.spawn(
    [
      process.execPath,
      join(root, "src/main.ts"),
      "serve",
      "--server-listen-address",
      "127.0.0.1",
      "--server-listen-port",
      "0",
      "--metrics-listen-port",
      "0",
    ],
    {
      stderr: "pipe",
      stdout: "ignore",
      // /upcheck never reaches slashing protection: no database file for it.
      env: {
        ...process.env,
        SIGNER_LOGGING__LEVEL: "warn,app=info",
        SIGNER_ANTISLASHING__BACKEND: "noop",
      },
    },
  );
  const url = await listeningUrl(server.stderr);
  const load = Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "load-upcheck.ts"),
      url,
      String(CONNECTIONS),
      String(DURATION_MS),
    ],
    {
      stdout: "pipe",
    },
  );
  const stats = JSON.parse(await new Response(load.stdout).text()) as {
    requests: number;
    latenciesMs: number[];
    errors: number;
  };
  server.kill("SIGTERM");
  await server.exited;
  const sorted = stats.latenciesMs.sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
  const result = {
    cores: cpus().length,
    connections: CONNECTIONS,
    duration_s: DURATION_MS / 1000,
    requests_per_s: Math.round(stats.requests / (DURATION_MS / 1000)),
    p50_ms: Number(pct(50).toFixed(3)),
    p99_ms: Number(pct(99).toFixed(3)),
    errors: stats.errors,
  };
  console.table([result]);
  return result;
}

async function listeningUrl(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream) {
    text += decoder.decode(chunk);
    const match = text.match(/sigil listening .*?url=(\S+)/);
    if (match?.[1]) return match[1];
  }
  throw new Error(`server did not start:\n${text}`);
}
