// The figures the crash, concurrency and outage suites report (issue 11): each test file adds its
// section to one JSON in the test-log directory and prints it, so a run leaves them side by side.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_LOG_DIR } from "../support/log-capture";

export const FIGURES_FILE = join(TEST_LOG_DIR, "crash-figures.json");

export type Figures = Record<string, number | string | boolean>;

/** Merges `figures` under `section` into FIGURES_FILE (other sections are kept) and prints them. */
export function recordFigures(section: string, figures: Figures): void {
  console.log(`[figures] ${section}: ${JSON.stringify(figures)}`);
  let all: Record<string, Figures> = {};
  try {
    if (existsSync(FIGURES_FILE))
      all = JSON.parse(readFileSync(FIGURES_FILE, "utf8")) as Record<string, Figures>;
  } catch {
    // A torn file from an interrupted run: start over rather than fail the test.
  }
  all[section] = { ...figures, recorded_at: new Date().toISOString() };
  mkdirSync(TEST_LOG_DIR, { recursive: true });
  writeFileSync(FIGURES_FILE, `${JSON.stringify(all, null, 2)}\n`);
}

/** A small seeded generator (mulberry32), so a failing run's random kill points can be replayed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** SIGIL_CRASH_SEED replays a run; otherwise a fresh seed, printed with the figures. */
export function crashSeed(): number {
  const fromEnv = Number(process.env.SIGIL_CRASH_SEED);
  return Number.isInteger(fromEnv) && fromEnv > 0
    ? fromEnv
    : Math.floor(Math.random() * 2 ** 31) + 1;
}
