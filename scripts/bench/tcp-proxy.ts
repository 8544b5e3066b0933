// A TCP proxy on a free loopback port, for the benchmarks that watch or slow the signer's traffic
// to PostgreSQL (pg-count-proxy.ts, pg-delay-proxy.ts). Each connection gets its own relay, which
// passes every chunk on; closing or failing either side closes the other.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  readonly port: number;
  close(): Promise<void>;
}

/** What one proxied connection does with its chunks; it writes each to the other side itself. */
export interface Relay {
  fromClient(chunk: Buffer, upstream: Socket): void;
  fromServer(chunk: Buffer, client: Socket): void;
  /** How long after one side closes the other is closed (default 0: at once). */
  readonly closeDelayMs?: number;
}

export async function startTcpProxy(
  host: string,
  port: number,
  relay: () => Relay,
): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    const connection = relay();
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      sockets.add(socket);
    }
    client.on("data", (chunk: Buffer) => connection.fromClient(chunk, upstream));
    upstream.on("data", (chunk: Buffer) => connection.fromServer(chunk, client));
    const end = () => {
      for (const socket of [client, upstream]) {
        socket.destroy();
        sockets.delete(socket);
      }
    };
    const endLater = () => setTimeout(end, connection.closeDelayMs ?? 0);
    for (const socket of [client, upstream]) {
      socket.on("close", endLater);
      socket.on("error", end);
    }
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
