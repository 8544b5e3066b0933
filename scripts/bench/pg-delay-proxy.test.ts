// The slot-burst benchmark's delay proxy: bytes pass both ways, in order, and a close on one side
// closes the other (no timing is asserted).
import { afterEach, expect, test } from "bun:test";
import { connect, createServer, type Server, type Socket } from "node:net";
import { type DelayProxy, startDelayProxy } from "./pg-delay-proxy";

let upstream: Server | undefined;
let proxy: DelayProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
  proxy = undefined;
  upstream = undefined;
});

/** An upstream that answers each chunk with it upper-cased, and reports its sockets' closing. */
async function startUpstream(onClose: () => void): Promise<number> {
  upstream = createServer((socket) => {
    socket.on("data", (chunk) => socket.write(chunk.toString().toUpperCase()));
    socket.on("close", onClose);
  });
  await new Promise<void>((resolve) => upstream?.listen(0, "127.0.0.1", () => resolve()));
  const address = upstream.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

test("every chunk arrives, in order, both ways; a client's close reaches the server", async () => {
  let closed!: () => void;
  const upstreamClosed = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const port = await startUpstream(() => closed());
  proxy = await startDelayProxy("127.0.0.1", port, 2);
  const client: Socket = connect(proxy.port, "127.0.0.1");
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  const words = Array.from({ length: 200 }, (_, i) => `w${i};`);
  const expected = words.join("").toUpperCase();
  let received = "";
  const all = new Promise<void>((resolve) => {
    client.on("data", (chunk) => {
      received += chunk.toString();
      if (received.length >= expected.length) resolve();
    });
  });
  for (const word of words) client.write(word);
  await all;
  expect(received).toBe(expected);
  client.end();
  await upstreamClosed;
});
