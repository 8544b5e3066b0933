/**
 * Reads the identification fields of an ELF header, to prove an addon or a binary is built for the
 * CPU of the target it goes into before it ships.
 */
import { type Arch, ELF_MACHINE } from "./targets";

export const ET_EXEC = 2;
export const ET_DYN = 3;

export interface ElfHeader {
  readonly bits: 32 | 64;
  readonly littleEndian: boolean;
  /** e_type: ET_EXEC, ET_DYN (shared objects and position-independent executables), … */
  readonly type: number;
  /** e_machine: ELF_MACHINE values, 3 for 32-bit x86, 40 for 32-bit ARM, … */
  readonly machine: number;
}

const MACHINE_NAMES: Record<number, string> = {
  3: "x86 (32-bit)",
  40: "ARM (32-bit)",
  [ELF_MACHINE.x64]: "x86-64",
  [ELF_MACHINE.arm64]: "aarch64",
};

export function machineName(machine: number): string {
  return MACHINE_NAMES[machine] ?? `machine ${machine}`;
}

/** Throws when `bytes` does not start with a complete ELF identification and e_type/e_machine. */
export function readElfHeader(bytes: Uint8Array): ElfHeader {
  if (bytes.length < 20) throw new Error(`too short for an ELF header (${bytes.length} bytes)`);
  if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) {
    throw new Error("not an ELF file (no \\x7fELF magic)");
  }
  const elfClass = bytes[4];
  if (elfClass !== 1 && elfClass !== 2) throw new Error(`unknown ELF class ${elfClass}`);
  const encoding = bytes[5];
  if (encoding !== 1 && encoding !== 2) throw new Error(`unknown ELF data encoding ${encoding}`);
  const littleEndian = encoding === 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    bits: elfClass === 1 ? 32 : 64,
    littleEndian,
    type: view.getUint16(16, littleEndian),
    machine: view.getUint16(18, littleEndian),
  };
}

/**
 * Why `bytes` is not a 64-bit little-endian ELF for `arch` with one of `types`, or undefined when
 * it is.
 */
export function elfMismatch(
  bytes: Uint8Array,
  arch: Arch,
  types: readonly number[],
): string | undefined {
  let header: ElfHeader;
  try {
    header = readElfHeader(bytes);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const want = ELF_MACHINE[arch];
  if (header.machine !== want) {
    return `built for ${machineName(header.machine)}, not ${machineName(want)}`;
  }
  if (header.bits !== 64 || !header.littleEndian) {
    return `${header.bits}-bit ${header.littleEndian ? "little" : "big"}-endian, not 64-bit little-endian`;
  }
  if (!types.includes(header.type))
    return `ELF type ${header.type}, expected ${types.join(" or ")}`;
  return undefined;
}
