import type { SeccompArch } from "./arch";
import {
  and,
  DATA,
  errnoAction,
  jeq,
  jge,
  load,
  MAX_INSTRUCTIONS,
  MAX_JUMP,
  RET,
  ret,
  type SockFilter,
} from "./bpf";
import type { SeccompPolicy, SyscallRule } from "./policy";

export interface SeccompProgram {
  readonly instructions: readonly SockFilter[];
  /** System calls this architecture has that the policy allows, some only with certain arguments. */
  readonly allowed: number;
}

/**
 * Compiles a policy for one architecture:
 *
 *   1. a foreign architecture (a 32-bit compat call) kills the process: its numbers mean
 *      other calls, so no decision by number would be right;
 *   2. on x86_64, so does an x32 ABI call (nr >= 0x40000000);
 *   3. each rule: compare the number, then return its action (after checking an argument);
 *   4. anything else returns the policy's errno.
 *
 * Every rule is a compare followed by its own short block, so no jump is longer than the block
 * (a jump offset is one byte). Rules naming a call this architecture lacks are left out.
 */
export function buildProgram(policy: SeccompPolicy, arch: SeccompArch): SeccompProgram {
  const deny = ret(errnoAction(policy.defaultErrno));
  const instructions: SockFilter[] = [
    load(DATA.ARCH),
    jeq(arch.auditArch, 1, 0),
    ret(RET.KILL_PROCESS),
    load(DATA.NR),
  ];
  if (arch.x32Bit !== undefined) instructions.push(jge(arch.x32Bit, 0, 1), ret(RET.KILL_PROCESS));
  const seen = new Set<number>();
  let allowed = 0;
  for (const rule of policy.rules) {
    const nr = arch.syscalls[rule.syscall];
    if (nr === undefined) continue;
    if (seen.has(nr)) throw new Error(`seccomp policy names ${rule.syscall} twice`);
    seen.add(nr);
    if (rule.action !== "errno") allowed += 1;
    const block = actionBlock(rule, deny);
    instructions.push(jeq(nr, 0, block.length), ...block);
  }
  instructions.push(deny);
  check(instructions);
  return { instructions, allowed };
}

/** What runs once the number matched; it always ends in a return. */
function actionBlock(rule: SyscallRule, deny: SockFilter): SockFilter[] {
  switch (rule.action) {
    case "allow":
      return [ret(RET.ALLOW)];
    case "errno":
      return [ret(errnoAction(rule.errno))];
    case "allow-if-bits":
      return [
        load(DATA.argLow(rule.arg)),
        and(rule.bits),
        jeq(rule.bits, 0, 1),
        ret(RET.ALLOW),
        deny,
      ];
    case "allow-if-one-of": {
      const n = rule.values.length;
      // Value i jumps over the remaining compares and the deny, to the allow at the end.
      const compares = rule.values.map((value, i) => jeq(value, n - i, 0));
      return [load(DATA.argLow(rule.arg)), ...compares, deny, ret(RET.ALLOW)];
    }
  }
}

function check(instructions: readonly SockFilter[]): void {
  if (instructions.length > MAX_INSTRUCTIONS) {
    throw new Error(`seccomp program has ${instructions.length} instructions (kernel limit 4096)`);
  }
  for (const insn of instructions) {
    if (insn.jt > MAX_JUMP || insn.jf > MAX_JUMP) {
      throw new Error("seccomp program has a jump longer than 255 instructions");
    }
  }
}
