import pkg from "../package.json" with { type: "json" };

/** Stamped by scripts/build.ts into the compiled binary; absent when running from source. */
declare const SIGIL_BUILD: { version: string; commit: string } | undefined;

const stamped = typeof SIGIL_BUILD === "undefined" ? undefined : SIGIL_BUILD;

export const VERSION: string = stamped?.version ?? pkg.version;
export const COMMIT: string = stamped?.commit ?? "source";

export function versionLine(): string {
  return `sigil ${VERSION} (commit ${COMMIT}, bun ${Bun.version})`;
}
