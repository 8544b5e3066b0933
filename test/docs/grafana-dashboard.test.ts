// docs/grafana-dashboard.json against what sigil exports: every metric a panel queries is one a
// running signer serves on /metrics (a signer with every metric family on: sqlite slashing
// protection, a BLS worker, the Commit-Boost listener) and one docs/monitoring.md documents. A
// panel naming a metric that was renamed or never existed shows "No data" forever; this fails
// instead.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { TempDir } from "../support/cli";
import { commitBoostYaml } from "../support/commit-boost";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { REPO_ROOT } from "./harness";

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { refId: string; expr: string }[];
}

const dashboard = JSON.parse(
  readFileSync(join(REPO_ROOT, "docs/grafana-dashboard.json"), "utf8"),
) as { panels: Panel[] };
const monitoring = readFileSync(join(REPO_ROOT, "docs/monitoring.md"), "utf8");

/** The metric names an expression queries (label values and functions are not `signer_…`). */
function metricsOf(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, "");
  return [...withoutLabels.matchAll(/\bsigner_[a-z0-9_]+/g)].map((m) => m[0]);
}

const queried = new Map<string, string>();
for (const panel of dashboard.panels)
  for (const target of panel.targets)
    for (const name of metricsOf(target.expr)) queried.set(name, panel.title);

const dir = new TempDir();
let signer: InProcessSigner;
/** Metric name → type, from the `# TYPE` lines of a real scrape. */
const exported = new Map<string, string>();

beforeAll(async () => {
  signer = await startInProcessSigner(dir, "dashboard", {
    yaml: [
      "network: hoodi",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      "bls: {workers: 1}",
      commitBoostYaml(`{backend: sqlite, path: ${join(dir.path, "proxies.sqlite")}}`),
    ],
  });
  const text = await (await fetch(`${signer.signer.metricsUrl}/metrics`)).text();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    exported.set(match[1] ?? "", match[2] ?? "");
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

/** A histogram is queried through its series: X_bucket, X_sum, X_count. */
function exportedAs(name: string): string | undefined {
  const base = name.replace(/_(bucket|sum|count)$/, "");
  if (base !== name && exported.get(base) === "histogram") return base;
  return exported.has(name) ? name : undefined;
}

describe("docs/grafana-dashboard.json", () => {
  test("the panels query the newer families too (the check below has something to check)", () => {
    for (const name of [
      "signer_signing_requests_total",
      "signer_slashing_wal_bytes",
      "signer_slashing_checkpoint_failing",
      "signer_bls_worker_queued",
      "signer_commit_boost_requests_total",
      "signer_commit_boost_blocked_clients",
    ])
      expect([...queried.keys()]).toContain(name);
  });

  test("every metric a panel queries is one a running signer exports", () => {
    expect(exported.size).toBeGreaterThan(20);
    const unknown = [...queried]
      .filter(([name]) => exportedAs(name) === undefined)
      .map(([name, title]) => `${name} (panel "${title}")`);
    expect(unknown).toEqual([]);
  });

  test("every metric a panel queries is documented in docs/monitoring.md", () => {
    const undocumented = [...queried.keys()]
      .map((name) => exportedAs(name) ?? name)
      .filter((name) => !monitoring.includes(`\`${name}\``));
    expect(undocumented).toEqual([]);
  });

  test("panels: unique ids, the datasource variable, no two overlapping", () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, not a template
    for (const panel of dashboard.panels) expect(panel.datasource.uid).toBe("${datasource}");
    const overlaps: string[] = [];
    dashboard.panels.forEach((a, i) => {
      for (const b of dashboard.panels.slice(i + 1)) {
        const g = a.gridPos;
        const h = b.gridPos;
        if (g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h)
          overlaps.push(`${a.title} / ${b.title}`);
      }
    });
    expect(overlaps).toEqual([]);
  });
});
