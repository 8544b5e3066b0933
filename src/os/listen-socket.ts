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
 * Bun offers no setting for it and does not expose the socket, so the listener is found by its
 * port in /proc and the option cleared through libc with bun:ffi. Errors are returned, not
 * thrown: the signer works without this, with the narrow window above.
 */
import { FFIType, ptr } from "bun:ffi";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { openLibc } from "./libc";

const IPPROTO_TCP = 6;
const TCP_DEFER_ACCEPT = 9;
const TCP_LISTEN = "0A";

/** Clears TCP_DEFER_ACCEPT on this process's listening sockets on `port`; the reason if it could not. */
export function acceptWithoutDefer(port: number): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const fds = listeningFds(port);
    if (fds.length === 0) return `no listening socket on port ${port} found in /proc`;
    const { setsockopt } = openLibc(SETSOCKOPT);
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

/** The file descriptors of this process that are listening TCP sockets on `port`. */
function listeningFds(port: number): number[] {
  const inodes = new Set<string>();
  const portHex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  // /proc/self/net, not /proc/net: systemd's ProcSubset=pid hides /proc's non-process entries.
  for (const table of ["/proc/self/net/tcp", "/proc/self/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue; // no IPv6 in this kernel
    }
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state, , , , , , inode] = fields;
      if (local?.endsWith(portHex) && state === TCP_LISTEN && inode) inodes.add(inode);
    }
  }
  const fds: number[] = [];
  for (const entry of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${entry}`);
    } catch {
      continue; // closed while listed
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode && inodes.has(inode)) fds.push(Number(entry));
  }
  return fds;
}

const SETSOCKOPT = {
  setsockopt: {
    args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32],
    returns: FFIType.i32,
  },
} as const;
