// `npm test` runs this before `bun test`: an empty .test-logs/ for the run that
// scripts/scan-test-logs.ts scans afterwards (test/support/log-capture.ts writes it).
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const dir = resolve(process.env.SIGIL_TEST_LOG_DIR ?? join(import.meta.dir, "..", ".test-logs"));
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
