import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AARCH64, seccompArchFor, X86_64 } from "./arch";
import { ALLOWED_GROUPS, DENIED_ON_PURPOSE, SIGIL_POLICY } from "./policy";
import { buildProgram } from "./program";
import { AARCH64_SYSCALLS } from "./syscalls-aarch64";
import { X86_64_SYSCALLS } from "./syscalls-x86_64";

const policyNames = SIGIL_POLICY.rules.map((r) => r.syscall);

describe("system call tables", () => {
  test("agree with the kernel's tables on a sample", () => {
    // arch/x86/entry/syscalls/syscall_64.tbl
    expect(X86_64_SYSCALLS).toMatchObject({
      read: 0,
      write: 1,
      open: 2,
      mmap: 9,
      clone: 56,
      fork: 57,
      vfork: 58,
      execve: 59,
      kill: 62,
      ptrace: 101,
      prctl: 157,
      futex: 202,
      openat: 257,
      execveat: 322,
      seccomp: 317,
      clone3: 435,
      epoll_pwait2: 441,
      futex_waitv: 449,
    });
    // include/uapi/asm-generic/unistd.h
    expect(AARCH64_SYSCALLS).toMatchObject({
      io_uring_setup: 425,
      fcntl: 25,
      openat: 56,
      read: 63,
      newfstatat: 79,
      fstat: 80,
      futex: 98,
      ptrace: 117,
      prctl: 167,
      clone: 220,
      execve: 221,
      mmap: 222,
      seccomp: 277,
      execveat: 281,
      clone3: 435,
    });
  });

  test("no number appears twice in a table", () => {
    for (const table of [X86_64_SYSCALLS, AARCH64_SYSCALLS]) {
      const numbers = Object.values(table);
      expect(new Set(numbers).size).toBe(numbers.length);
    }
  });

  test("aarch64 lacks exactly the legacy calls its generic table dropped", () => {
    const missing = Object.keys(X86_64_SYSCALLS).filter((name) => !(name in AARCH64_SYSCALLS));
    expect(missing.sort()).toEqual(
      [
        "access",
        "arch_prctl",
        "chmod",
        "dup2",
        "epoll_create",
        "epoll_wait",
        "fork",
        "link",
        "lstat",
        "mkdir",
        "mknod",
        "open",
        "pipe",
        "poll",
        "readlink",
        "rename",
        "rmdir",
        "select",
        "stat",
        "symlink",
        "time",
        "unlink",
        "vfork",
      ].sort(),
    );
  });
});

describe("sigil's policy", () => {
  test("allows none of the calls it denies on purpose", () => {
    expect(policyNames.filter((name) => DENIED_ON_PURPOSE.includes(name))).toEqual([]);
  });

  test("names each call once", () => {
    expect(new Set(policyNames).size).toBe(policyNames.length);
  });

  test("clone is conditional on CLONE_THREAD and clone3 is answered ENOSYS", () => {
    const clone = SIGIL_POLICY.rules.find((r) => r.syscall === "clone");
    expect(clone).toEqual({ syscall: "clone", action: "allow-if-bits", arg: 0, bits: 0x10000 });
    const clone3 = SIGIL_POLICY.rules.find((r) => r.syscall === "clone3");
    expect(clone3).toEqual({ syscall: "clone3", action: "errno", errno: 38 });
    expect(SIGIL_POLICY.defaultErrno).toBe(1);
  });
});

describe("docs/seccomp.md", () => {
  const doc = readFileSync(join(import.meta.dir, "../../../docs/seccomp.md"), "utf8");

  test("lists every call the policy allows unconditionally, in its group's row", () => {
    const rows = doc.split("\n").filter((line) => line.startsWith("| "));
    for (const group of ALLOWED_GROUPS) {
      const row = rows.find((line) => line.includes(`| \`${group.allow[0]}\``));
      expect(row).toBeDefined();
      const cells = (row ?? "").split("|");
      const listed = [...(cells.at(-2) ?? "").matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]);
      expect(listed).toEqual([...group.allow]);
    }
  });

  test("gives the counts the policy compiles to", () => {
    const x86 = buildProgram(SIGIL_POLICY, X86_64).allowed;
    const arm = buildProgram(SIGIL_POLICY, AARCH64).allowed;
    expect(doc).toContain(`(${x86} syscalls allowed)`);
    expect(doc).toContain(`allows ${arm} calls instead of ${x86}`);
  });
});

describe("seccompArchFor", () => {
  test("Linux on x64 and arm64", () => {
    expect(seccompArchFor("linux", "x64")).toEqual({ arch: X86_64 });
    expect(seccompArchFor("linux", "arm64")).toEqual({ arch: AARCH64 });
  });

  test("other platforms and architectures are refused with the reason", () => {
    expect(seccompArchFor("darwin", "arm64")).toEqual({
      unsupported: "seccomp exists only on Linux (this host is darwin)",
    });
    expect(seccompArchFor("win32", "x64")).toHaveProperty("unsupported");
    expect(seccompArchFor("linux", "ia32")).toEqual({
      unsupported: "the syscall filter knows x64 and arm64, not ia32",
    });
    expect(seccompArchFor("linux", "riscv64")).toHaveProperty("unsupported");
  });
});
