/**
 * The one impure part: hands a compiled program to the kernel through libc, with bun:ffi.
 *
 * 1. prctl(PR_SET_NO_NEW_PRIVS): an unprivileged process may install a filter only once it has
 *    promised never to gain privileges (no setuid binaries; it cannot execute any anyway).
 * 2. seccomp(SECCOMP_SET_MODE_FILTER, TSYNC | LOG): TSYNC puts every thread of the process under
 *    the filter, not only the calling one (prctl(PR_SET_SECCOMP) would filter this thread
 *    alone, leaving Bun's worker, JIT and pool threads free). LOG has the kernel log each
 *    denied call (audit type 1326, "seccomp"), which is how an operator finds out what was
 *    refused. Threads started later inherit the filter.
 * 3. prctl(PR_GET_SECCOMP) must now say 2 (filter mode).
 *
 * Any failure throws: the caller must not carry on unprotected.
 */
import { FFIType, ptr, read } from "bun:ffi";
import { constants } from "node:os";
import { openLibc as loadLibc } from "../libc";
import type { SeccompArch } from "./arch";
import { encodeProgram, type SockFilter } from "./bpf";

const PR_SET_NO_NEW_PRIVS = 38;
const PR_GET_SECCOMP = 21;
const SECCOMP_MODE_FILTER = 2;
const SECCOMP_SET_MODE_FILTER = 1;
const SECCOMP_FILTER_FLAG_TSYNC = 1;
const SECCOMP_FILTER_FLAG_LOG = 2;

const SYMBOLS = {
  prctl: {
    args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64],
    returns: FFIType.i32,
  },
  // long syscall(long number, ...): every argument here is an integer or a pointer, which the
  // variadic convention passes in the same registers as a fixed one on x86_64 and aarch64.
  syscall: {
    args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.ptr],
    returns: FFIType.i64_fast,
  },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const;

type Libc = ReturnType<typeof loadLibc<typeof SYMBOLS>>;

const openLibc = (): Libc => loadLibc(SYMBOLS);

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, value]) => [value, name]));

function lastError(libc: Libc): string {
  const where = libc.__errno_location();
  if (where === null) return "unknown error";
  const errno = read.i32(where, 0);
  return ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
}

const installedBuffers: Uint8Array[] = [];

/** Installs `program` on every thread of this process. Irreversible; throws on any failure. */
export function installFilter(program: readonly SockFilter[], arch: SeccompArch): void {
  const seccompNr = arch.syscalls.seccomp;
  if (seccompNr === undefined) throw new Error(`no seccomp system call number for ${arch.name}`);
  const libc = openLibc();

  if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) !== 0) {
    throw new Error(`prctl(PR_SET_NO_NEW_PRIVS) failed: ${lastError(libc)}`);
  }

  // struct sock_fprog { unsigned short len; struct sock_filter *filter; }: the pointer at offset 8.
  const filter = encodeProgram(program);
  const fprog = new Uint8Array(16);
  const view = new DataView(fprog.buffer);
  view.setUint16(0, program.length, true);
  view.setBigUint64(8, BigInt(ptr(filter)), true);
  // Kept for the life of the process: no collection can free them under the call, at 16 bytes
  // and 8 per instruction.
  installedBuffers.push(filter, fprog);
  const flags = SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG;
  const result = Number(libc.syscall(seccompNr, SECCOMP_SET_MODE_FILTER, flags, ptr(fprog)));
  if (result < 0) throw new Error(`seccomp(SECCOMP_SET_MODE_FILTER) failed: ${lastError(libc)}`);
  if (result > 0) {
    throw new Error(`seccomp: thread ${result} could not be put under the filter (TSYNC)`);
  }

  const mode = libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (mode !== SECCOMP_MODE_FILTER) {
    throw new Error(`seccomp filter not in force after installing it (mode ${mode})`);
  }
}
