/**
 * The consensus forks sigil signs for, as a sign request's `version` names them (upper case),
 * oldest first. A new fork is added here, and to each request type whose container it changes
 * (request-types.ts).
 */
export const FORKS = [
  "PHASE0",
  "ALTAIR",
  "BELLATRIX",
  "CAPELLA",
  "DENEB",
  "ELECTRA",
  "FULU",
  "GLOAS",
] as const;

export type ForkName = (typeof FORKS)[number];

/** Whether `fork` is `since` or a later one. */
export function forkAtLeast(fork: ForkName, since: ForkName): boolean {
  return FORKS.indexOf(fork) >= FORKS.indexOf(since);
}
