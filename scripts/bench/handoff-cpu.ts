// CPU time of the calling thread alone, in µs: getrusage(RUSAGE_THREAD) through libc (Linux).
import { FFIType, ptr } from "bun:ffi";
import { openLibc } from "../../src/os/libc";

const RUSAGE_THREAD = 1;
const { getrusage } = openLibc({
  getrusage: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
});
/** struct rusage: ru_utime and ru_stime (struct timeval: two 64-bit fields each) come first. */
const usage = new BigInt64Array(18);

export function threadCpuMicros(): number {
  if (getrusage(RUSAGE_THREAD, ptr(usage)) !== 0) throw new Error("getrusage failed");
  const [userS = 0n, userUs = 0n, systemS = 0n, systemUs = 0n] = usage;
  return Number((userS + systemS) * 1_000_000n + userUs + systemUs);
}
