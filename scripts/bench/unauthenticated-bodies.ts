// 16 clients at once POST (and DELETE) a 57 MiB body to /eth/v1/keystores with no token, or a
// wrong one, on a signer with static_auth: how long each waits for its answer, and how far the
// signer's resident memory rises above idle. Two runs: clients that stop sending once they have
// their answer (as curl does), and clients that send the whole body whatever the answer (as an
// attacker's would), which the signer must then skip without keeping it.
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  baseConfig,
  envInt,
  percentile,
  printTable,
  round,
  signerCommand,
  sortedCopy,
  startSigner,
  vm,
} from "./support";

const BODY_MIB = 57;
const CHUNK = Buffer.alloc(64 << 10, 0x61);

interface Outcome {
  status: number;
  ms: number;
  /** Body bytes the client got onto the socket before the answer or the close. */
  sentMiB: number;
}

function attack(
  port: number,
  method: string,
  token: string | undefined,
  whole: boolean,
): Promise<Outcome> {
  const bodyBytes = BODY_MIB << 20;
  const head =
    `${method} /eth/v1/keystores HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    "Content-Type: application/json\r\n" +
    (token ? `Authorization: Bearer ${token}\r\n` : "") +
    `Content-Length: ${bodyBytes}\r\n\r\n`;
  return new Promise((resolve) => {
    const started = performance.now();
    let sent = 0;
    let answered: { status: number; ms: number } | undefined;
    const socket = connect(port, "127.0.0.1");
    const pump = () => {
      while ((whole || !answered) && sent < bodyBytes) {
        sent += CHUNK.length;
        if (!socket.write(CHUNK)) return void socket.once("drain", pump);
      }
      if (whole && sent >= bodyBytes) socket.end();
    };
    socket.on("connect", () => {
      socket.write(head);
      pump();
    });
    let received = "";
    socket.on("data", (data: Buffer) => {
      received += data.toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (status && !answered) {
        answered = { status: Number(status[1]), ms: performance.now() - started };
        if (!whole) socket.destroy();
      }
    });
    const done = () =>
      resolve({
        status: answered?.status ?? 0,
        ms: answered?.ms ?? performance.now() - started,
        sentMiB: round(sent / (1 << 20), 1),
      });
    socket.on("close", done);
    socket.on("error", () => {});
  });
}

export async function unauthenticatedBodies(): Promise<Record<string, unknown>> {
  const clients = envInt("BENCH_UNAUTH_CLIENTS", 16);
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-unauth-"));
  const { command, label } = signerCommand();
  const signer = await startSigner(command, join(dir, "sigil.yaml"), {
    ...baseConfig(),
    key_sources: {
      filesystem: { paths: [join(dir, "keys")] },
      key_manager_api: { enabled: true },
    },
    antislashing: { backend: "sqlite", path: join(dir, "slashing.sqlite") },
    static_auth: {
      policies: [{ name: "keys", rules: [{ effect: "allow", scopes: ["import_keystores"] }] }],
      tokens: [{ secret: "right-token-0123456789abcdef", policies: ["keys"] }],
    },
  });
  try {
    const port = Number(new URL(signer.url).port);
    const pid = signer.proc.pid;
    await Bun.sleep(500);
    const idle = vm(pid).rss_mib;
    const rows: Record<string, unknown>[] = [];
    for (const whole of [false, true]) {
      const before = vm(pid).rss_mib;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, vm(pid).rss_mib);
      }, 5);
      const outcomes = await Promise.all(
        Array.from({ length: clients }, (_, i) =>
          attack(
            port,
            i % 2 === 0 ? "POST" : "DELETE",
            i % 4 < 2 ? undefined : "wrong-token-000000",
            whole,
          ),
        ),
      );
      clearInterval(sampler);
      await Bun.sleep(200);
      const ms = sortedCopy(outcomes.map((o) => o.ms));
      rows.push({
        clients: whole ? "send it all" : "stop at the answer",
        count: clients,
        body_mib: BODY_MIB,
        statuses: [...new Set(outcomes.map((o) => o.status))].sort().join(","),
        /** Clients that read an answer (0 = the connection was reset before they could). */
        answered: outcomes.filter((o) => o.status !== 0).length,
        answer_ms_median: round(percentile(ms, 0.5), 1),
        answer_ms_max: round(ms[ms.length - 1] ?? 0, 1),
        body_mib_sent_max: Math.max(...outcomes.map((o) => o.sentMiB)),
        rss_idle_mib: idle,
        rss_peak_over_idle_mib: round(peak - idle, 1),
        rss_after_mib: vm(pid).rss_mib,
      });
    }
    printTable(`unauthenticated 57 MiB bodies to /eth/v1/keystores (${label})`, rows);
    return { signer: label, runs: rows };
  } finally {
    await signer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
