/**
 * Runs `sigil version` from a fresh release binary wherever this machine can: natively on its own
 * architecture, under qemu user-mode emulation otherwise (Debian: apt-get install qemu-user
 * libc6-arm64-cross). A binary that runs must start and pick blst, the native backend it embeds.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Arch, hostArch, type ReleaseTarget } from "./targets";

export interface RunReport {
  readonly ran: boolean;
  /** "natively", "under qemu-aarch64", or why it was not run. */
  readonly how: string;
  readonly output?: string;
}

const QEMU: Record<Arch, { command: string; sysroot: string }> = {
  x64: { command: "qemu-x86_64", sysroot: "/usr/x86_64-linux-gnu" },
  arm64: { command: "qemu-aarch64", sysroot: "/usr/aarch64-linux-gnu" },
};

/** `sigil version` as the release expects it from a binary that embeds a working blst. */
export const VERSION_LINE = /^sigil \S+ \(commit \S+, bun \S+\), bls blst$/;

function onPath(command: string): boolean {
  return spawnSync("sh", ["-c", 'command -v "$1"', "sh", command]).status === 0;
}

/** The command line that runs `binary` here, or why there is none. */
function launcher(binary: string, arch: Arch, cpu: string | undefined): string[] | string {
  const qemu = QEMU[arch];
  const native = hostArch() === arch;
  if (native && cpu === undefined) return [binary];
  if (!onPath(qemu.command)) return `${qemu.command} is not installed`;
  const cpuArgs = cpu === undefined ? [] : ["-cpu", cpu];
  const sysroot = process.env.QEMU_LD_PREFIX ?? (native ? "/" : qemu.sysroot);
  if (!existsSync(sysroot)) return `no ${arch} libraries at ${sysroot} for ${qemu.command}`;
  return [qemu.command, "-L", sysroot, ...cpuArgs, binary];
}

function describe(command: string[], cpu: string | undefined): string {
  if (command.length === 1) return "natively";
  return `under ${command[0]}${cpu ? ` -cpu ${cpu}` : ""}`;
}

/**
 * Runs `binary version` (on an emulated `cpu` when given); throws when it runs but fails or does
 * not report blst, reports `ran: false` when it cannot be run here.
 */
export function runVersion(binary: string, target: ReleaseTarget, cpu?: string): RunReport {
  const command = launcher(binary, target.arch, cpu);
  if (typeof command === "string") return { ran: false, how: `not run: ${command}` };
  const how = describe(command, cpu);
  // An empty working directory: a compiled binary reads bunfig.toml and .env from its cwd.
  const cwd = mkdtempSync(join(tmpdir(), "sigil-release-run-"));
  try {
    const [program = binary, ...args] = command;
    const result = spawnSync(program, [...args, "version"], {
      cwd,
      encoding: "utf8",
      timeout: 300_000,
    });
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.trim();
    if (result.status !== 0 || !VERSION_LINE.test(result.stdout.trim())) {
      const status = result.status ?? result.signal ?? result.error?.message;
      throw new Error(`${binary} version ${how} exited ${status}: ${output}`);
    }
    return { ran: true, how, output: result.stdout.trim() };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}
