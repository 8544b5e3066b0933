import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { AARCH64, X86_64 } from "./arch";
import { encodeProgram } from "./bpf";
import { type SeccompPolicy, SIGIL_POLICY } from "./policy";
import { buildProgram } from "./program";

// Written from the kernel's uapi headers (filter.h, seccomp.h, audit.h), not from bpf.ts, so
// that the interpreter below checks the builder instead of agreeing with it by construction.
const KILL_PROCESS = 0x80000000;
const ALLOW = 0x7fff0000;
const ERRNO_EPERM = 0x00050001;
const ERRNO_ENOSYS = 0x00050026;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_ARM = 0x40000028;
const X32_SYSCALL_BIT = 0x40000000;
const CLONE_THREAD = 0x00010000;
/** What glibc's pthread_create passes to clone. */
const PTHREAD_CLONE_FLAGS = 0x003d0f00;
/** fork() as glibc implements it: clone(CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD). */
const FORK_CLONE_FLAGS = 0x01200011;
/** posix_spawn and vfork: CLONE_VM | CLONE_VFORK | SIGCHLD. */
const VFORK_CLONE_FLAGS = 0x00004111;

interface SeccompData {
  nr: number;
  arch: number;
  args?: readonly bigint[];
}

/**
 * A classic-BPF interpreter for the instructions a seccomp filter may use here, over the encoded
 * bytes the kernel would receive. Unknown opcodes, reads outside seccomp_data, running off the
 * end and backward or endless execution all throw.
 */
function runFilter(bytes: Uint8Array, data: SeccompData): number {
  const program = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = bytes.byteLength / 8;
  const input = new DataView(new ArrayBuffer(64));
  input.setInt32(0, data.nr, true);
  input.setUint32(4, data.arch, true);
  (data.args ?? []).forEach((arg, i) => {
    input.setBigUint64(16 + 8 * i, BigInt.asUintN(64, arg), true);
  });
  let a = 0;
  let pc = 0;
  for (let steps = 0; steps <= length; steps++) {
    if (pc >= length) throw new Error(`ran off the end at ${pc}`);
    const code = program.getUint16(pc * 8, true);
    const jt = program.getUint8(pc * 8 + 2);
    const jf = program.getUint8(pc * 8 + 3);
    const k = program.getUint32(pc * 8 + 4, true);
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`load outside seccomp_data: ${k}`);
        a = input.getUint32(k, true);
        pc += 1;
        break;
      case 0x54: // BPF_ALU | BPF_AND | BPF_K
        a = (a & k) >>> 0;
        pc += 1;
        break;
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        pc += 1 + (a === k ? jt : jf);
        break;
      case 0x35: // BPF_JMP | BPF_JGE | BPF_K
        pc += 1 + (a >= k ? jt : jf);
        break;
      case 0x06: // BPF_RET | BPF_K
        return k;
      default:
        throw new Error(`unexpected opcode 0x${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error("did not return");
}

const x86 = encodeProgram(buildProgram(SIGIL_POLICY, X86_64).instructions);
const arm = encodeProgram(buildProgram(SIGIL_POLICY, AARCH64).instructions);
const onX86 = (nr: number, args?: readonly bigint[]) =>
  runFilter(x86, { nr, arch: AUDIT_ARCH_X86_64, args });
const onArm = (nr: number, args?: readonly bigint[]) =>
  runFilter(arm, { nr, arch: AUDIT_ARCH_AARCH64, args });

// System call numbers from arch/x86/entry/syscalls/syscall_64.tbl and the generic table.
const X86 = {
  read: 0,
  write: 1,
  mmap: 9,
  openat: 257,
  futex: 202,
  epoll_pwait2: 441,
  fsync: 74,
  rename: 82,
  accept4: 288,
  connect: 42,
  getrandom: 318,
  tgkill: 234,
  clone: 56,
  clone3: 435,
  fork: 57,
  vfork: 58,
  execve: 59,
  execveat: 322,
  kill: 62,
  ptrace: 101,
  process_vm_readv: 310,
  listen: 50,
  mount: 165,
  bpf: 321,
  io_uring_setup: 425,
  kexec_load: 246,
  prctl: 157,
};
const ARM = { read: 63, openat: 56, futex: 98, clone: 220, clone3: 435, execve: 221, ptrace: 117 };

describe("the program's structure", () => {
  const instructions = buildProgram(SIGIL_POLICY, X86_64).instructions;

  test("checks the architecture first, then the x32 ABI, and denies with EPERM last", () => {
    expect(instructions.slice(0, 6)).toEqual([
      { code: 0x20, jt: 0, jf: 0, k: 4 },
      { code: 0x15, jt: 1, jf: 0, k: AUDIT_ARCH_X86_64 },
      { code: 0x06, jt: 0, jf: 0, k: KILL_PROCESS },
      { code: 0x20, jt: 0, jf: 0, k: 0 },
      { code: 0x35, jt: 0, jf: 1, k: X32_SYSCALL_BIT },
      { code: 0x06, jt: 0, jf: 0, k: KILL_PROCESS },
    ]);
    expect(instructions.at(-1)).toEqual({ code: 0x06, jt: 0, jf: 0, k: ERRNO_EPERM });
  });

  test("aarch64 has no x32 check", () => {
    const arm64 = buildProgram(SIGIL_POLICY, AARCH64).instructions;
    expect(arm64[1]).toEqual({ code: 0x15, jt: 1, jf: 0, k: AUDIT_ARCH_AARCH64 });
    expect(arm64[4]?.code).toBe(0x15);
  });

  test("encodes each instruction as struct sock_filter, little-endian", () => {
    // code (u16), jt, jf, k (u32): load word 4; jump over the next one if A == AUDIT_ARCH_X86_64.
    expect([...x86.subarray(0, 16)]).toEqual([
      0x20, 0x00, 0, 0, 0x04, 0x00, 0x00, 0x00, 0x15, 0x00, 1, 0, 0x3e, 0x00, 0x00, 0xc0,
    ]);
    expect(x86.byteLength).toBe(instructions.length * 8);
  });

  test("fits the kernel's limit with room to spare", () => {
    expect(instructions.length).toBeLessThan(1024);
  });
});

describe("decisions on x86_64", () => {
  test("the signer's everyday calls are allowed", () => {
    for (const nr of [
      X86.read,
      X86.write,
      X86.mmap,
      X86.openat,
      X86.futex,
      X86.epoll_pwait2,
      X86.fsync,
      X86.rename,
      X86.accept4,
      X86.connect,
      X86.getrandom,
      X86.tgkill,
    ]) {
      expect(onX86(nr)).toBe(ALLOW);
    }
  });

  test("process creation, tracing, signalling others and kernel attack surface get EPERM", () => {
    for (const nr of [
      X86.execve,
      X86.execveat,
      X86.fork,
      X86.vfork,
      X86.kill,
      X86.ptrace,
      X86.process_vm_readv,
      X86.listen,
      X86.mount,
      X86.bpf,
      X86.io_uring_setup,
      X86.kexec_load,
    ]) {
      expect(onX86(nr)).toBe(ERRNO_EPERM);
    }
  });

  test("clone makes threads only", () => {
    expect(onX86(X86.clone, [BigInt(PTHREAD_CLONE_FLAGS)])).toBe(ALLOW);
    expect(onX86(X86.clone, [BigInt(CLONE_THREAD)])).toBe(ALLOW);
    // A set high word changes nothing: the flag is in the low one.
    expect(onX86(X86.clone, [(1n << 40n) | BigInt(PTHREAD_CLONE_FLAGS)])).toBe(ALLOW);
    expect(onX86(X86.clone, [BigInt(FORK_CLONE_FLAGS)])).toBe(ERRNO_EPERM);
    expect(onX86(X86.clone, [BigInt(VFORK_CLONE_FLAGS)])).toBe(ERRNO_EPERM);
    expect(onX86(X86.clone, [0n])).toBe(ERRNO_EPERM);
    expect(onX86(X86.clone, [BigInt(PTHREAD_CLONE_FLAGS & ~CLONE_THREAD)])).toBe(ERRNO_EPERM);
  });

  test("clone3 answers ENOSYS whatever its arguments, so that libc falls back to clone", () => {
    expect(onX86(X86.clone3, [0n, 88n])).toBe(ERRNO_ENOSYS);
    expect(onX86(X86.clone3, [123456n, 0n])).toBe(ERRNO_ENOSYS);
  });

  test("prctl: thread names and queries, not dumpability or ptracer changes", () => {
    expect(onX86(X86.prctl, [15n])).toBe(ALLOW); // PR_SET_NAME
    expect(onX86(X86.prctl, [0x53564d41n])).toBe(ALLOW); // PR_SET_VMA
    expect(onX86(X86.prctl, [21n])).toBe(ALLOW); // PR_GET_SECCOMP
    expect(onX86(X86.prctl, [4n])).toBe(ERRNO_EPERM); // PR_SET_DUMPABLE
    expect(onX86(X86.prctl, [0x59616d61n])).toBe(ERRNO_EPERM); // PR_SET_PTRACER
    expect(onX86(X86.prctl, [22n])).toBe(ERRNO_EPERM); // PR_SET_SECCOMP
  });

  test("an x32 call or another architecture kills the process", () => {
    expect(onX86(X32_SYSCALL_BIT | X86.read)).toBe(KILL_PROCESS);
    expect(onX86(X32_SYSCALL_BIT | 520)).toBe(KILL_PROCESS); // x32 execve
    expect(runFilter(x86, { nr: X86.read, arch: AUDIT_ARCH_I386 })).toBe(KILL_PROCESS);
    expect(runFilter(x86, { nr: X86.read, arch: AUDIT_ARCH_AARCH64 })).toBe(KILL_PROCESS);
  });

  test("numbers nobody assigned get EPERM", () => {
    expect(onX86(999)).toBe(ERRNO_EPERM);
    expect(onX86(-1)).toBe(KILL_PROCESS); // 0xffffffff is in the x32 range
  });
});

describe("decisions on aarch64", () => {
  test("same policy, the generic numbers", () => {
    expect(onArm(ARM.read)).toBe(ALLOW);
    expect(onArm(ARM.openat)).toBe(ALLOW);
    expect(onArm(ARM.futex)).toBe(ALLOW);
    expect(onArm(ARM.execve)).toBe(ERRNO_EPERM);
    expect(onArm(ARM.ptrace)).toBe(ERRNO_EPERM);
    expect(onArm(ARM.clone, [BigInt(PTHREAD_CLONE_FLAGS)])).toBe(ALLOW);
    expect(onArm(ARM.clone, [BigInt(FORK_CLONE_FLAGS)])).toBe(ERRNO_EPERM);
    expect(onArm(ARM.clone3)).toBe(ERRNO_ENOSYS);
  });

  test("x86_64 numbers mean other calls here: 59 (execve there) is allowed only as what it is here", () => {
    // 59 is pipe2 on aarch64; 0 is io_setup, which the policy does not allow.
    expect(onArm(59)).toBe(ALLOW);
    expect(onArm(0)).toBe(ERRNO_EPERM);
  });

  test("a 32-bit ARM call or an x86_64 one kills the process", () => {
    expect(runFilter(arm, { nr: ARM.read, arch: AUDIT_ARCH_ARM })).toBe(KILL_PROCESS);
    expect(runFilter(arm, { nr: ARM.read, arch: AUDIT_ARCH_X86_64 })).toBe(KILL_PROCESS);
  });
});

describe("the compiled program decides as the policy says", () => {
  /** The policy read directly: what each (nr, args) should get. */
  function expected(policy: SeccompPolicy, nr: number, args: readonly bigint[]): number {
    const table = X86_64.syscalls;
    const rule = policy.rules.find((r) => table[r.syscall] === nr);
    if (!rule) return 0x00050000 | policy.defaultErrno;
    const low = (i: number) => Number(BigInt.asUintN(32, args[i] ?? 0n));
    switch (rule.action) {
      case "allow":
        return ALLOW;
      case "errno":
        return 0x00050000 | rule.errno;
      case "allow-if-bits":
        return (low(rule.arg) & rule.bits) >>> 0 === rule.bits
          ? ALLOW
          : 0x00050000 | policy.defaultErrno;
      case "allow-if-one-of":
        return rule.values.includes(low(rule.arg)) ? ALLOW : 0x00050000 | policy.defaultErrno;
    }
  }

  test("for every number below 512, and random arguments", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 511 }),
        fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: 6, maxLength: 6 }),
        (nr, args) => {
          expect(onX86(nr, args)).toBe(expected(SIGIL_POLICY, nr, args));
        },
      ),
      { numRuns: 3000 },
    );
  });

  test("every number below 512 with all-zero arguments", () => {
    for (let nr = 0; nr < 512; nr++) expect(onX86(nr)).toBe(expected(SIGIL_POLICY, nr, []));
  });
});

describe("building", () => {
  test("a policy naming a call twice is refused", () => {
    const policy: SeccompPolicy = {
      defaultErrno: 1,
      rules: [
        { syscall: "read", action: "allow" },
        { syscall: "read", action: "errno", errno: 38 },
      ],
    };
    expect(() => buildProgram(policy, X86_64)).toThrow("names read twice");
  });

  test("a rule whose jump would not fit in a byte is refused", () => {
    const policy: SeccompPolicy = {
      defaultErrno: 1,
      rules: [
        {
          syscall: "prctl",
          action: "allow-if-one-of",
          arg: 0,
          values: Array.from({ length: 300 }, (_, i) => i),
        },
      ],
    };
    expect(() => buildProgram(policy, X86_64)).toThrow("jump longer than 255");
  });

  test("counts the calls it lets through on each architecture", () => {
    const x86Program = buildProgram(SIGIL_POLICY, X86_64);
    const armProgram = buildProgram(SIGIL_POLICY, AARCH64);
    // clone3 is answered, not allowed; aarch64 lacks the legacy calls.
    expect(x86Program.allowed).toBe(SIGIL_POLICY.rules.length - 1);
    expect(armProgram.allowed).toBeLessThan(x86Program.allowed);
    let allowedByInterpreter = 0;
    for (let nr = 0; nr < 512; nr++) {
      if (onX86(nr, [BigInt(PTHREAD_CLONE_FLAGS)]) === ALLOW) allowedByInterpreter += 1;
    }
    // prctl is allowed for some options only, and option 0x3d0f00 is not one of them.
    expect(allowedByInterpreter).toBe(x86Program.allowed - 1);
  });
});
