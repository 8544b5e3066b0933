// Smoke test of the compiled binary, run by .ci/run with node_modules moved away: the binary must
// start from an empty directory with only a config file, answer /upcheck, and stop cleanly on
// SIGTERM (exit 0). Plain Node.js so it needs nothing from node_modules.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const binary = resolve(process.argv[2] ?? "dist/sigil");
const work = mkdtempSync(join(tmpdir(), "sigil-smoke-"));
const fail = (message) => {
  console.error(`smoke: FAIL: ${message}`);
  process.exit(1);
};

for (const args of [["--help"], ["version"]]) {
  const result = spawnSync(binary, args, { cwd: work, encoding: "utf8" });
  if (result.status !== 0)
    fail(`sigil ${args.join(" ")} exited ${result.status}: ${result.stderr}`);
}

const config = join(work, "sigil.yaml");
writeFileSync(
  config,
  "server:\n  listen_address: 127.0.0.1\n  listen_port: 0\nmetrics:\n  listen_address: 127.0.0.1\n  listen_port: 0\nantislashing:\n  backend: sqlite\n  path: ./slashing.sqlite\n",
);
const check = spawnSync(binary, ["config", "check", "-c", config], { cwd: work, encoding: "utf8" });
if (check.status !== 0) fail(`config check exited ${check.status}: ${check.stderr}`);

const child = spawn(binary, ["-c", config], { cwd: work, stdio: ["ignore", "ignore", "pipe"] });
let logs = "";
child.stderr.on("data", (chunk) => {
  logs += chunk;
});
const exited = new Promise((done) => child.on("exit", (code, signal) => done({ code, signal })));

const deadline = Date.now() + 15_000;
let url;
while (!url) {
  if (Date.now() > deadline) fail(`no "listening" line within 15 s:\n${logs}`);
  url = logs.match(/sigil listening .*url=(\S+)/)?.[1];
  if (!url) await new Promise((r) => setTimeout(r, 50));
}
const response = await fetch(`${url}/upcheck`);
const body = await response.text();
if (response.status !== 200 || body !== "OK") fail(`/upcheck answered ${response.status} ${body}`);

child.kill("SIGTERM");
const { code, signal } = await exited;
if (code !== 0) fail(`exit after SIGTERM was ${code ?? signal}:\n${logs}`);
rmSync(work, { recursive: true, force: true });
console.log(`smoke: ok (${url}/upcheck answered OK, SIGTERM exit 0)`);
