/**
 * Turns off TCP_DEFER_ACCEPT on a listener Bun has opened (Linux).
 *
 * Bun.serve sets TCP_DEFER_ACCEPT on its listening socket: a connection the client has opened
 * but sent nothing on yet stays in the kernel, unseen by the server, for up to a second. When
 * the signer stops in that second, the kernel drops it without a word (no FIN, no RST), so a
 * client that pooled the connection (reqwest/hyper, Lighthouse's HTTP stack, dials ahead of
 * need) sends its next request down it after the restart and gets a reset. Without the option,
 * the connection is accepted at once, and a graceful stop closes it like any other idle one.
 *
 * Bun offers no setting for it and does not expose the socket, so the listener is found among
 * this process's own sockets (/proc/self/fd) by asking each, through libc with bun:ffi, whether
 * it listens (SO_ACCEPTCONN) and on which port (getsockname), and the option is cleared there.
 * Not from /proc/self/net/tcp: that table lists every TCP socket of the network namespace, and on
 * a host with thousands of connections (7,400 on the shared test VM) generating and parsing it
 * took about 25 ms of CPU per listener at every start. Errors are returned, not thrown: the
 * signer works without this, with the narrow window above.
 */
import { FFIType, ptr } from "bun:ffi";
import { readdirSync, readlinkSync } from "node:fs";
import { openLibc } from "./libc";

const IPPROTO_TCP = 6;
const TCP_DEFER_ACCEPT = 9;
const SOL_SOCKET = 1;
const SO_ACCEPTCONN = 30;
const AF_INET = 2;
const AF_INET6 = 10;
/** Room for a sockaddr_in6 (28 bytes) and more. */
const SOCKADDR_BYTES = 128;

/** Clears TCP_DEFER_ACCEPT on this process's listening sockets on `port`; the reason if it could not. */
export function acceptWithoutDefer(port: number): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const fds = listeningFds(port);
    if (fds.length === 0) return `no listening socket on port ${port} found in /proc/self/fd`;
    const { setsockopt } = openLibc(SOCKET_CALLS);
    const off = new Int32Array([0]);
    for (const fd of fds) {
      if (setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, ptr(off), off.byteLength) !== 0) {
        return `setsockopt(TCP_DEFER_ACCEPT) failed on fd ${fd}`;
      }
    }
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The file descriptors of this process that are listening TCP sockets on `port` (Linux). */
export function listeningFds(port: number): number[] {
  const libc = openLibc(SOCKET_CALLS);
  const fds: number[] = [];
  const flag = new Int32Array(1);
  const flagBytes = new Uint32Array(1);
  const address = new Uint8Array(SOCKADDR_BYTES);
  const addressBytes = new Uint32Array(1);
  for (const entry of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${entry}`);
    } catch {
      continue; // closed while listed
    }
    if (!target.startsWith("socket:")) continue;
    const fd = Number(entry);
    flagBytes[0] = flag.byteLength;
    if (libc.getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, ptr(flag), ptr(flagBytes)) !== 0) continue;
    if (flag[0] !== 1) continue; // not listening (only stream sockets listen)
    addressBytes[0] = address.byteLength;
    if (libc.getsockname(fd, ptr(address), ptr(addressBytes)) !== 0) continue;
    // sa_family in host order (little-endian on every target), then the port in network order.
    const family = (address[0] ?? 0) | ((address[1] ?? 0) << 8);
    const boundPort = ((address[2] ?? 0) << 8) | (address[3] ?? 0);
    if ((family === AF_INET || family === AF_INET6) && boundPort === port) fds.push(fd);
  }
  return fds;
}

const SOCKET_CALLS = {
  setsockopt: {
    args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32],
    returns: FFIType.i32,
  },
  getsockopt: {
    args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr],
    returns: FFIType.i32,
  },
  getsockname: {
    args: [FFIType.i32, FFIType.ptr, FFIType.ptr],
    returns: FFIType.i32,
  },
} as const;
