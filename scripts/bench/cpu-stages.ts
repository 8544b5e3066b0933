// Where the signer's main thread spends its time per signing request: the samples of a Bun
// `--cpu-prof` profile (a .cpuprofile of the main thread), each given to the stage of the
// innermost frame on its stack that belongs to one, in µs per answered request. sign-http runs it
// on the signer's profile when BENCH_SIGN_CPU_PROFILE is set (docs/performance.md, "sign-http").
//
//   bun scripts/bench/cpu-stages.ts <profile.cpuprofile> <requests answered> [interval µs]
//
// The sampler takes a sample only while the thread runs JavaScript or a native function called
// from it (a syscall made there included), so samples × interval is the time seen from
// JavaScript; the event loop's own native work (Bun's HTTP parser, socket reads and writes,
// epoll) shows only as "outside JavaScript" when compared with the thread's CPU time.
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  startTime: number;
  endTime: number;
}

/** The stages, in the order a request meets them; a frame belongs to the first that matches. */
export const STAGES: readonly { name: string; test: (frame: CallFrame) => boolean }[] = [
  {
    name: "ssz_signing_root",
    test: (f) =>
      /@chainsafe\/(ssz|persistent-merkle-tree|as-sha256)|sha256-hasher\.ts|signing\/(domain|roots)\.ts/.test(
        f.url,
      ),
  },
  {
    name: "json_typebox_parse",
    test: (f) => /signing\/json\.ts|signing\/parse\.ts|typebox|wire\/hex\.ts/.test(f.url),
  },
  { name: "body_read_json_parse", test: (f) => /http\/body\.ts/.test(f.url) },
  {
    name: "slashing_check_db",
    test: (f) =>
      /antislashing\/|storage\/(sqlite|postgres)|bun:sqlite|node_modules\/postgres\//.test(f.url) ||
      /fdatasync/.test(f.functionName),
  },
  { name: "bls_handover", test: (f) => /src\/bls\//.test(f.url) },
  { name: "auth", test: (f) => /src\/auth\/|http\/access\.ts/.test(f.url) },
  {
    name: "metrics_log_trace",
    test: (f) => /prom-client|app\/metrics\.ts|observability\/|signing\/canary\.ts/.test(f.url),
  },
  {
    name: "service_limiter_keys",
    test: (f) => /signing\/service\.ts|signing\/limiter\.ts|keys\/key-store\.ts/.test(f.url),
  },
  {
    name: "route_response",
    test: (f) =>
      /http\/app\.ts|http\/match\.ts|http\/route\.ts|request-meta\.ts|routes\/signing\.ts/.test(
        f.url,
      ),
  },
  {
    name: "http_wrapper",
    test: (f) => /http\/server\.ts|net\/host\.ts|http\/cors\.ts/.test(f.url),
  },
];

export const OTHER_STAGE = "other_js_and_natives";

export interface StageFigures {
  samples: number;
  interval_us: number;
  requests: number;
  /** µs per answered request, by stage, from samples × interval. */
  us_per_request: Record<string, number>;
  sampled_us_per_request: number;
}

export function mainThreadStages(path: string, requests: number, intervalUs = 250): StageFigures {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const nodes = new Map<number, ProfileNode>();
  const parents = new Map<number, number>();
  for (const node of profile.nodes) {
    nodes.set(node.id, node);
    for (const child of node.children ?? []) parents.set(child, node.id);
  }
  const stageOf = new Map<number, string>();
  const classify = (leaf: number): string => {
    const known = stageOf.get(leaf);
    if (known !== undefined) return known;
    let stage = OTHER_STAGE;
    for (let id: number | undefined = leaf; id !== undefined; id = parents.get(id)) {
      const frame = nodes.get(id)?.callFrame;
      const match = frame && STAGES.find((s) => s.test(frame));
      if (match) {
        stage = match.name;
        break;
      }
    }
    stageOf.set(leaf, stage);
    return stage;
  };
  const counts = new Map<string, number>();
  let samples = 0;
  for (const leaf of profile.samples) {
    const name = nodes.get(leaf)?.callFrame.functionName;
    if (name === "(idle)" || name === "(root)") continue;
    const stage = classify(leaf);
    counts.set(stage, (counts.get(stage) ?? 0) + 1);
    samples++;
  }
  const perRequest = (count: number) => Math.round(((count * intervalUs) / requests) * 10) / 10;
  const us_per_request: Record<string, number> = {};
  for (const stage of [...STAGES.map((s) => s.name), OTHER_STAGE]) {
    us_per_request[stage] = perRequest(counts.get(stage) ?? 0);
  }
  return {
    samples,
    interval_us: intervalUs,
    requests,
    us_per_request,
    sampled_us_per_request: perRequest(samples),
  };
}

if (import.meta.main) {
  const [path, requests, interval] = process.argv.slice(2);
  if (!path || !requests) {
    console.error("usage: bun scripts/bench/cpu-stages.ts <profile> <requests> [interval µs]");
    process.exit(2);
  }
  const figures = mainThreadStages(path, Number(requests), interval ? Number(interval) : 250);
  console.table(figures.us_per_request);
  console.log(
    `sampled: ${figures.sampled_us_per_request} µs per request (${figures.samples} samples)`,
  );
}
