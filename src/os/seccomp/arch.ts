import { AARCH64_SYSCALLS } from "./syscalls-aarch64";
import { type SyscallName, X86_64_SYSCALLS } from "./syscalls-x86_64";

/** An architecture the filter knows: how seccomp_data names it and its system call numbers. */
export interface SeccompArch {
  readonly name: "x86_64" | "aarch64";
  /** AUDIT_ARCH_* (include/uapi/linux/audit.h): what seccomp_data.arch holds. */
  readonly auditArch: number;
  readonly syscalls: Partial<Record<SyscallName, number>>;
  /**
   * x86_64 only: numbers with this bit set come from the x32 ABI, a second table of system calls
   * in the same process that an allow-list by number would otherwise let through.
   */
  readonly x32Bit?: number;
}

export const X86_64: SeccompArch = {
  name: "x86_64",
  auditArch: 0xc000003e,
  syscalls: X86_64_SYSCALLS,
  x32Bit: 0x40000000,
};

export const AARCH64: SeccompArch = {
  name: "aarch64",
  auditArch: 0xc00000b7,
  syscalls: AARCH64_SYSCALLS,
};

/**
 * The filter for this host, or why there is none. `platform` and `arch` are Node's names
 * (process.platform, process.arch), passed in so that other hosts can be tested here.
 */
export function seccompArchFor(
  platform: string,
  arch: string,
): { arch: SeccompArch } | { unsupported: string } {
  if (platform !== "linux") {
    return { unsupported: `seccomp exists only on Linux (this host is ${platform})` };
  }
  if (arch === "x64") return { arch: X86_64 };
  if (arch === "arm64") return { arch: AARCH64 };
  return { unsupported: `the syscall filter knows x64 and arm64, not ${arch}` };
}
