/**
 * The release targets: Linux with glibc on x64 and arm64. Each binary embeds the native blst addon
 * built for its own CPU, taken from the npm platform package that @chainsafe/blst's loader
 * requires on that platform.
 */

/** ELF e_machine values (EM_X86_64, EM_AARCH64), keyed by Node's process.arch names. */
export const ELF_MACHINE = { x64: 62, arm64: 183 } as const;
export type Arch = keyof typeof ELF_MACHINE;

export interface ReleaseTarget {
  /** The artifact is dist/sigil-<name>. */
  readonly name: string;
  readonly bunTarget: Bun.Build.CompileTarget;
  readonly arch: Arch;
  /** The package @chainsafe/blst's loader requires on this platform (Linux, glibc). */
  readonly blstPackage: string;
  /** A qemu CPU model the release also runs the binary on, when qemu is installed. */
  readonly emulatedCpu?: string;
}

export const RELEASE_TARGETS: readonly ReleaseTarget[] = [
  {
    name: "linux-x64",
    bunTarget: "bun-linux-x64",
    arch: "x64",
    blstPackage: "@chainsafe/blst-linux-x64-gnu",
  },
  {
    // For CPUs without AVX2 (before Haswell, 2013). Bun 1.4's x64 runtime already targets Nehalem
    // and picks AVX2 paths at run time, so today this is the same binary; the name stays so that
    // deployments for old CPUs have an artifact that promises to run there.
    name: "linux-x64-baseline",
    bunTarget: "bun-linux-x64-baseline",
    arch: "x64",
    blstPackage: "@chainsafe/blst-linux-x64-gnu",
    // Nehalem has neither AVX nor AVX2 (nor ADX/BMI2, which blst would use when present).
    emulatedCpu: "Nehalem",
  },
  {
    name: "linux-arm64",
    bunTarget: "bun-linux-arm64",
    arch: "arm64",
    blstPackage: "@chainsafe/blst-linux-arm64-gnu",
  },
];

export const SUMS_FILE = "SHA256SUMS";

export function artifactName(target: ReleaseTarget): string {
  return `sigil-${target.name}`;
}

/** This machine's architecture in release terms, or undefined when no target is built for it. */
export function hostArch(arch: string = process.arch): Arch | undefined {
  return arch === "x64" || arch === "arm64" ? arch : undefined;
}

/**
 * What a target's build does with a `require("@chainsafe/blst-…")` of blst's loader: the target's
 * own platform package is embedded; every other platform's is left out, so that branch of the
 * loader throws at run time and cannot drag a foreign addon into the binary.
 */
export function blstRequireFor(target: ReleaseTarget, requested: string): "embed" | "leave-out" {
  return requested === target.blstPackage ? "embed" : "leave-out";
}
