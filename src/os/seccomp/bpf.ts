/**
 * Classic BPF as seccomp runs it: the instruction encoding (struct sock_filter), the layout of
 * struct seccomp_data the program reads, and the return values. Values from the kernel's
 * include/uapi/linux/filter.h, bpf_common.h and seccomp.h.
 */

/** One instruction: struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }. */
export interface SockFilter {
  readonly code: number;
  /** Instructions to skip when the jump's condition holds. */
  readonly jt: number;
  /** Instructions to skip when it does not. */
  readonly jf: number;
  readonly k: number;
}

/** The opcodes the builder emits: class | operation | operand source. */
export const OP = {
  /** BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k of seccomp_data. */
  LD_W_ABS: 0x20,
  /** BPF_ALU | BPF_AND | BPF_K: A &= k. */
  ALU_AND_K: 0x54,
  /** BPF_JMP | BPF_JEQ | BPF_K. */
  JEQ_K: 0x15,
  /** BPF_JMP | BPF_JGE | BPF_K: unsigned A >= k. */
  JGE_K: 0x35,
  /** BPF_RET | BPF_K: return k. */
  RET_K: 0x06,
} as const;

/** Offsets in struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }. */
export const DATA = {
  NR: 0,
  ARCH: 4,
  /**
   * Low 32 bits of args[i]: both supported architectures are little-endian. The low word is all
   * the kernel reads for int-typed arguments (prctl's option, a pid), and holds every flag the
   * policy tests (CLONE_THREAD).
   */
  argLow: (index: number): number => 16 + 8 * index,
} as const;

/** seccomp return actions (the high 16 bits; ERRNO carries the errno in the low 16). */
export const RET = {
  KILL_PROCESS: 0x80000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

export const errnoAction = (errno: number): number => (RET.ERRNO | (errno & 0xffff)) >>> 0;

/** BPF_MAXINSNS: the kernel refuses longer programs. */
export const MAX_INSTRUCTIONS = 4096;
/** jt and jf are one byte each. */
export const MAX_JUMP = 255;

export const load = (offset: number): SockFilter => ({
  code: OP.LD_W_ABS,
  jt: 0,
  jf: 0,
  k: offset,
});
export const and = (mask: number): SockFilter => ({ code: OP.ALU_AND_K, jt: 0, jf: 0, k: mask });
export const ret = (action: number): SockFilter => ({ code: OP.RET_K, jt: 0, jf: 0, k: action });
export const jeq = (k: number, jt: number, jf: number): SockFilter => ({
  code: OP.JEQ_K,
  jt,
  jf,
  k,
});
export const jge = (k: number, jt: number, jf: number): SockFilter => ({
  code: OP.JGE_K,
  jt,
  jf,
  k,
});

/** The program as the kernel reads it: 8 bytes per instruction, native (little-endian) order. */
export function encodeProgram(program: readonly SockFilter[]): Uint8Array {
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach((insn, i) => {
    view.setUint16(i * 8, insn.code, true);
    view.setUint8(i * 8 + 2, insn.jt);
    view.setUint8(i * 8 + 3, insn.jf);
    view.setUint32(i * 8 + 4, insn.k >>> 0, true);
  });
  return bytes;
}
