import type { ConfigProblem } from "../config/problems";
import type { Config } from "../config/schema";
import type { Logger } from "../observability/log";
import { seccompArchFor } from "../os/seccomp/arch";
import { installFilter } from "../os/seccomp/install";
import { SIGIL_POLICY } from "../os/seccomp/policy";
import { buildProgram } from "../os/seccomp/program";
import type { RunningSigner } from "./signer";

/** Node's names for the host (process.platform, process.arch); tests pass other hosts. */
export interface Host {
  readonly platform: string;
  readonly arch: string;
}

const THIS_HOST: Host = { platform: process.platform, arch: process.arch };

/**
 * `server.seccomp` on a host the filter cannot protect is a configuration problem: refused
 * before anything starts, rather than a signer that runs without the protection it was told to have.
 */
export function seccompProblems(config: Config, host: Host = THIS_HOST): ConfigProblem[] {
  if (!config.server.seccomp) return [];
  const found = seccompArchFor(host.platform, host.arch);
  if ("arch" in found) return [];
  return [{ where: "server.seccomp", message: `${found.unsupported}; set it to false` }];
}

/**
 * Puts this whole process (every thread, and threads started later) under sigil's syscall
 * allow-list, for good. Returns how many system calls stay allowed; throws when it could not.
 */
export function lockDown(logger: Logger): number {
  const found = seccompArchFor(THIS_HOST.platform, THIS_HOST.arch);
  if (!("arch" in found)) throw new Error(found.unsupported);
  const program = buildProgram(SIGIL_POLICY, found.arch);
  installFilter(program.instructions, found.arch);
  logger.child("app").info(`seccomp filter installed (${program.allowed} syscalls allowed)`, {
    arch: found.arch.name,
    instructions: program.instructions.length,
  });
  return program.allowed;
}

/**
 * The last step of start-up when `server.seccomp` is set: keys are loaded, workers started and
 * listeners bound, so what follows needs no new kind of system call. A filter that cannot be
 * installed stops the signer: it must not serve unprotected.
 */
export async function applySeccomp(
  config: Config,
  signer: RunningSigner,
  logger: Logger,
): Promise<void> {
  if (!config.server.seccomp) return;
  try {
    lockDown(logger);
  } catch (error) {
    await signer.stop().catch(() => {});
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`server.seccomp: cannot install the syscall filter: ${reason}`);
  }
}
