import { FFIType, ptr } from "bun:ffi";
import { afterAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { openLibc } from "./libc";
import { acceptWithoutDefer, listeningFds } from "./listen-socket";

const IPPROTO_TCP = 6;
const TCP_DEFER_ACCEPT = 9;
const { getsockopt } = openLibc({
  getsockopt: {
    args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr],
    returns: FFIType.i32,
  },
});

/** TCP_DEFER_ACCEPT of a socket, as the kernel reports it (seconds, rounded). */
function deferAccept(fd: number): number {
  const value = new Int32Array(1);
  const length = new Uint32Array([value.byteLength]);
  if (getsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, ptr(value), ptr(length)) !== 0) {
    throw new Error(`getsockopt failed on fd ${fd}`);
  }
  return value[0] ?? -1;
}

/** Whether this machine can listen on ::1 (CI containers may have no IPv6). */
function hasIpv6(): boolean {
  try {
    Bun.serve({ hostname: "::1", port: 0, fetch: () => new Response("") }).stop();
    return true;
  } catch {
    return false;
  }
}

const servers: { stop(): void }[] = [];
afterAll(() => {
  for (const server of servers) server.stop();
});

describe.skipIf(process.platform !== "linux")("acceptWithoutDefer", () => {
  test("finds Bun's listener among this process's sockets and turns TCP_DEFER_ACCEPT off", () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    servers.push(server);
    const port = server.port as number;
    const fds = listeningFds(port);
    expect(fds.length).toBe(1);
    const [fd] = fds as [number];
    expect(deferAccept(fd)).toBeGreaterThan(0); // Bun's own setting, which this undoes
    expect(acceptWithoutDefer(port)).toBeUndefined();
    expect(deferAccept(fd)).toBe(0);
  });

  test.skipIf(!hasIpv6())(
    "an IPv6 listener is found too; a client connection on the same port is not a listener",
    async () => {
      const server = Bun.serve({ hostname: "::1", port: 0, fetch: () => new Response("") });
      servers.push(server);
      const port = server.port as number;
      const before = listeningFds(port);
      expect(before.length).toBe(1);
      const response = await fetch(`http://[::1]:${port}/`, { keepalive: true });
      await response.text();
      expect(listeningFds(port)).toEqual(before);
    },
  );

  test("a port nothing here listens on gives a reason instead of throwing", async () => {
    // A port another listener held a moment ago, now free.
    const other = createServer();
    const port = await new Promise<number>((resolve) =>
      other.listen(0, "127.0.0.1", () => resolve((other.address() as { port: number }).port)),
    );
    await new Promise<void>((resolve) => other.close(() => resolve()));
    expect(listeningFds(port)).toEqual([]);
    expect(acceptWithoutDefer(port)).toContain(`no listening socket on port ${port}`);
  });
});
