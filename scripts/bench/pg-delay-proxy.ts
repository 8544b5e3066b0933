// A TCP proxy that delays every chunk by a fixed time in each direction: PostgreSQL on another
// host (slot-burst's BENCH_SLOT_PG_LATENCY_MS). Chunks keep their order: timers of one delay fire
// in the order they were set. Closing either side closes the other, as late as its data.
import type { Socket } from "node:net";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy";

export type DelayProxy = TcpProxy;

export function startDelayProxy(host: string, port: number, oneWayMs: number): Promise<DelayProxy> {
  const later = (chunk: Buffer, to: Socket) => {
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, oneWayMs);
  };
  return startTcpProxy(host, port, () => ({
    fromClient: later,
    fromServer: later,
    closeDelayMs: oneWayMs,
  }));
}
