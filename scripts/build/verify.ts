/** Checks a compiled release binary before it ships: right CPU, and exactly the right blst addon. */
import { ET_DYN, ET_EXEC, elfMismatch } from "./elf";
import type { ReleaseTarget } from "./targets";

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  const hay = Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength);
  return hay.indexOf(Buffer.from(needle.buffer, needle.byteOffset, needle.byteLength)) !== -1;
}

/**
 * Why `binary` is not a release binary for `target` embedding `addon` byte for byte and none of
 * `foreignAddons` (the addons of other CPUs), or undefined when it is.
 */
export function releaseBinaryProblem(
  binary: Uint8Array,
  target: ReleaseTarget,
  addon: Uint8Array,
  foreignAddons: readonly Uint8Array[],
): string | undefined {
  const mismatch = elfMismatch(binary, target.arch, [ET_EXEC, ET_DYN]);
  if (mismatch) return `the executable is ${mismatch}`;
  if (!contains(binary, addon)) return `it does not embed the ${target.blstPackage} addon`;
  if (foreignAddons.some((foreign) => contains(binary, foreign))) {
    return "it embeds a blst addon built for another CPU";
  }
  return undefined;
}
