// A TCP proxy that delays every chunk by a fixed time in each direction: PostgreSQL on another
// host (slot-burst's BENCH_SLOT_PG_LATENCY_MS). Chunks keep their order: timers of one delay fire
// in the order they were set. Closing either side closes the other.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface DelayProxy {
  readonly port: number;
  close(): Promise<void>;
}

export async function startDelayProxy(
  host: string,
  port: number,
  oneWayMs: number,
): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) => {
    from.on("data", (chunk) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, oneWayMs);
    });
    from.on("close", () => setTimeout(() => to.destroy(), oneWayMs));
    from.on("error", () => to.destroy());
  };
  const server: Server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect(port, host);
    upstream.setNoDelay(true);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    port: address.port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
