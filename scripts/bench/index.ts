// `npm run bench [name…]`: runs the benchmarks, prints a table each and writes JSON to
// bench-results/. Figures are measurements, never pass/fail assertions.
import { mkdirSync, writeFileSync } from "node:fs";
import { bls } from "./bls";
import { cloudKvLoad } from "./cloud-kv-load";
import { handoff } from "./handoff";
import { httpBaseline } from "./http-baseline";
import { keyReload } from "./key-reload";
import { keymanagerImport } from "./keymanager-import";
import { signHttp } from "./sign-http";
import { signRelease } from "./sign-release";
import { slashing } from "./slashing";
import { slotBurst } from "./slot-burst";
import { startup } from "./startup";
import { unauthenticatedBodies } from "./unauthenticated-bodies";

const benchmarks: Record<string, () => Promise<Record<string, unknown>>> = {
  "http-baseline": httpBaseline,
  "keymanager-import": keymanagerImport,
  "cloud-kv-load": cloudKvLoad,
  "key-reload": keyReload,
  bls,
  "sign-http": signHttp,
  "sign-release": signRelease,
  "slot-burst": slotBurst,
  startup,
  slashing,
  handoff,
  "unauthenticated-bodies": unauthenticatedBodies,
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in benchmarks));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark: ${unknown.join(", ")} (have: ${Object.keys(benchmarks).join(", ")})`,
  );
  process.exit(2);
}
mkdirSync("bench-results", { recursive: true });
for (const name of wanted.length > 0 ? wanted : Object.keys(benchmarks)) {
  const run = benchmarks[name];
  if (!run) continue;
  console.log(`\n== ${name}`);
  const result = await run();
  const stamp = new Date().toISOString().replaceAll(":", "-");
  writeFileSync(`bench-results/${name}-${stamp}.json`, `${JSON.stringify(result, null, 2)}\n`);
}
// Every result is written: end here rather than wait for the event loop to drain. A 6-round A/B of
// `startup` once stayed alive after its last write (idle in epoll, no child left), holding the
// `flock` that serialises benchmarks on the shared machine for ten minutes.
process.exit(0);
