/**
 * What a running signer may ask of the kernel once start-up is over (docs/seccomp.md explains
 * each group). The list comes from tracing the signer (source and compiled binary) through
 * start-up, signing, Key Manager imports and deletes, slashing protection on sqlite, PostgreSQL
 * and DynamoDB, metrics, tracing export and stop, plus what Bun needs to start a thread or a
 * worker later (a BLS worker that died is restarted). Everything else gets EPERM: an unexpected
 * call becomes an error the runtime reports, not a dead signer.
 */
import type { SyscallName } from "./syscalls-x86_64";

export type SyscallRule =
  | { readonly syscall: SyscallName; readonly action: "allow" }
  /** Allowed when every bit of `bits` is set in the low word of args[arg]. */
  | {
      readonly syscall: SyscallName;
      readonly action: "allow-if-bits";
      readonly arg: number;
      readonly bits: number;
    }
  /** Allowed when the low word of args[arg] is one of `values`. */
  | {
      readonly syscall: SyscallName;
      readonly action: "allow-if-one-of";
      readonly arg: number;
      readonly values: readonly number[];
    }
  | { readonly syscall: SyscallName; readonly action: "errno"; readonly errno: number };

export interface SeccompPolicy {
  readonly rules: readonly SyscallRule[];
  /** What every other system call returns. */
  readonly defaultErrno: number;
}

export const EPERM = 1;
export const ENOSYS = 38;

const CLONE_THREAD = 0x00010000;

/** prctl options the runtime uses: thread names (JSC, mimalloc, Bun's pools), mapping names, queries. */
const PR_SET_NAME = 15;
const PR_GET_NAME = 16;
const PR_GET_SECCOMP = 21;
const PR_SET_NO_NEW_PRIVS = 38;
const PR_GET_NO_NEW_PRIVS = 39;
const PR_SET_VMA = 0x53564d41;

interface SyscallGroup {
  readonly name: string;
  readonly allow: readonly SyscallName[];
}

/** Allowed whatever their arguments. The order puts the busiest calls first. */
export const ALLOWED_GROUPS: readonly SyscallGroup[] = [
  {
    name: "event loop (Bun's epoll loop, its wake-up eventfd and timers)",
    allow: [
      "futex",
      "epoll_pwait2",
      "epoll_pwait",
      "epoll_wait",
      "epoll_ctl",
      "epoll_create1",
      "epoll_create",
      "poll",
      "ppoll",
      "select",
      "pselect6",
      "eventfd2",
      "timerfd_create",
      "timerfd_settime",
      "timerfd_gettime",
      "sched_yield",
    ],
  },
  {
    name: "reading and writing open descriptors (sockets, files, pipes, the log on stderr)",
    allow: [
      "read",
      "write",
      "readv",
      "writev",
      "pread64",
      "pwrite64",
      "preadv",
      "pwritev",
      "preadv2",
      "pwritev2",
      "lseek",
      "close",
      "close_range",
      "dup",
      "dup2",
      "dup3",
      "fcntl",
      "ioctl",
      "pipe",
      "pipe2",
      "splice",
      "sendfile",
      "copy_file_range",
    ],
  },
  {
    name: "network clients and the bound listeners (accept, PostgreSQL, DynamoDB, KMS, OTLP, DNS)",
    allow: [
      "accept4",
      "accept",
      "socket",
      "socketpair",
      "connect",
      "bind",
      "getsockname",
      "getpeername",
      "getsockopt",
      "setsockopt",
      "sendto",
      "recvfrom",
      "sendmsg",
      "recvmsg",
      "sendmmsg",
      "recvmmsg",
      "shutdown",
    ],
  },
  {
    name: "files: sqlite and its WAL, Key Manager imports and deletes, the keystore cache, /proc reads",
    allow: [
      "openat",
      "open",
      "newfstatat",
      "fstat",
      "stat",
      "lstat",
      "statx",
      "statfs",
      "fstatfs",
      "access",
      "faccessat",
      "faccessat2",
      "readlink",
      "readlinkat",
      "getdents64",
      "getcwd",
      "flock",
      "fsync",
      "fdatasync",
      "sync_file_range",
      "ftruncate",
      "fallocate",
      "fadvise64",
      "rename",
      "renameat",
      "renameat2",
      "unlink",
      "unlinkat",
      "mkdir",
      "mkdirat",
      "rmdir",
      "chmod",
      "fchmod",
      "fchmodat",
      "fchown",
      "umask",
      "memfd_create",
    ],
  },
  {
    name: "memory (the JavaScript heap, the JIT, mimalloc, sqlite's shared-memory index)",
    allow: [
      "madvise",
      "mmap",
      "munmap",
      "mprotect",
      "mremap",
      "brk",
      "msync",
      "mincore",
      "mlock",
      "munlock",
      "membarrier",
    ],
  },
  {
    name: "threads (worker and pool threads: clone itself is checked below)",
    allow: [
      "set_robust_list",
      "rseq",
      "set_tid_address",
      "gettid",
      "sched_getaffinity",
      "sched_setaffinity",
      "sched_getparam",
      "sched_getscheduler",
      "sched_get_priority_max",
      "sched_get_priority_min",
      "getpriority",
      "setpriority",
      "arch_prctl",
      "exit",
      "exit_group",
    ],
  },
  {
    name: "signals (the runtime stops threads for garbage collection with tgkill; SIGTERM, SIGINT)",
    allow: [
      "rt_sigaction",
      "rt_sigprocmask",
      "rt_sigreturn",
      "rt_sigsuspend",
      "rt_sigtimedwait",
      "rt_sigpending",
      "sigaltstack",
      "restart_syscall",
      "tgkill",
      "tkill",
    ],
  },
  {
    name: "time, randomness and facts about this process",
    allow: [
      "clock_gettime",
      "clock_getres",
      "clock_nanosleep",
      "nanosleep",
      "gettimeofday",
      "time",
      "timer_create",
      "timer_settime",
      "timer_gettime",
      "timer_getoverrun",
      "timer_delete",
      "getrandom",
      "getpid",
      "getppid",
      "getuid",
      "geteuid",
      "getgid",
      "getegid",
      "getgroups",
      "getresuid",
      "getresgid",
      "getrlimit",
      "prlimit64",
      "getrusage",
      "sysinfo",
      "times",
      "getcpu",
      "uname",
    ],
  },
];

/** Allowed or answered depending on their arguments. */
export const CONDITIONAL_RULES: readonly SyscallRule[] = [
  // Threads, never processes: a thread shares the address space (CLONE_THREAD requires CLONE_VM).
  { syscall: "clone", action: "allow-if-bits", arg: 0, bits: CLONE_THREAD },
  // clone3 passes its flags in memory, out of BPF's reach. ENOSYS makes glibc fall back to clone.
  { syscall: "clone3", action: "errno", errno: ENOSYS },
  {
    syscall: "prctl",
    action: "allow-if-one-of",
    arg: 0,
    values: [
      PR_SET_NAME,
      PR_GET_NAME,
      PR_SET_VMA,
      PR_GET_SECCOMP,
      PR_SET_NO_NEW_PRIVS,
      PR_GET_NO_NEW_PRIVS,
    ],
  },
];

/**
 * Denied by leaving them out; listed so that a test keeps them out. Running programs, tracing or
 * reading other processes, signalling them, new listeners, kernel attack surface (bpf,
 * io_uring, perf, modules, keyrings, userfaultfd), namespaces, mounts, identities, links.
 */
export const DENIED_ON_PURPOSE: readonly SyscallName[] = [
  "execve",
  "execveat",
  "fork",
  "vfork",
  "wait4",
  "waitid",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "pidfd_open",
  "pidfd_getfd",
  "kill",
  "listen",
  "mount",
  "umount2",
  "pivot_root",
  "chroot",
  "unshare",
  "setns",
  "setuid",
  "setgid",
  "capset",
  "personality",
  "bpf",
  "perf_event_open",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "userfaultfd",
  "keyctl",
  "add_key",
  "request_key",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "seccomp",
  "link",
  "linkat",
  "symlink",
  "symlinkat",
  "mknod",
  "mknodat",
];

export const SIGIL_POLICY: SeccompPolicy = {
  rules: [
    ...ALLOWED_GROUPS.flatMap((group) =>
      group.allow.map((syscall): SyscallRule => ({ syscall, action: "allow" })),
    ),
    ...CONDITIONAL_RULES,
  ],
  defaultErrno: EPERM,
};
