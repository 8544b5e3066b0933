import { dlopen, type FFIFunction } from "bun:ffi";

/** glibc first; musl names its libc after the architecture. */
const LIBC_NAMES = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"];

/** The C library's functions named in `symbols`, from the first libc that loads. */
export function openLibc<Fns extends Record<string, FFIFunction>>(
  symbols: Fns,
): ReturnType<typeof dlopen<Fns>>["symbols"] {
  const failures: string[] = [];
  for (const name of LIBC_NAMES) {
    try {
      return dlopen(name, symbols).symbols;
    } catch (error) {
      failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(`cannot load the C library (${failures.join("; ")})`);
}
