// Smoke test of the compiled binary, run by .ci/run with node_modules moved away: the binary must
// start from an empty directory with only a config file and one key (refusing to serve until
// `sigil slashing init` has created its slashing database), start its BLS worker pool
// (the worker is an extra entrypoint of the build), answer /upcheck, sign an attestation with the
// pool exactly as expected, and stop cleanly on SIGTERM (exit 0). Plain Node.js so it needs
// nothing from node_modules.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

// Interop key 0 (a published, insecure test key) and the README's example attestation; the
// signature was computed with blst over the signing root Lodestar gives, and noble verifies it.
const examples = new URL("../examples/", import.meta.url);
mkdirSync(join(work, "keys"));
copyFileSync(new URL("keys/interop-0.yaml", examples), join(work, "keys", "interop-0.yaml"));
const attestation = readFileSync(new URL("sign-attestation.json", examples), "utf8");
const KEY_0 =
  "0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c";
const EXPECTED_SIGNATURE =
  "0xb1b39b58ae2a0c17171850b73833e02077d748916c27c2ece636ac21e5f4eb01b52d41bfc38fe6b7baf51cc0d5981db502ce3894dc5b7897e1dae1d82f72d5b7579b6522eba7be0b5d085101aa64499ee02533301e001ab2eb23ac5c74ad85b3";

const config = join(work, "sigil.yaml");
// bls.workers is left unset: the default (one per core) must start a pool.
writeFileSync(
  config,
  "server:\n  listen_address: 127.0.0.1\n  listen_port: 0\nmetrics:\n  listen_address: 127.0.0.1\n  listen_port: 0\nantislashing:\n  backend: sqlite\n  path: ./slashing.sqlite\nkey_sources:\n  filesystem:\n    paths: [./keys]\n",
);
// The slashing database is created explicitly, as docs/deploy.md does: serve refuses to start
// without it (status 2), and `sigil slashing init` creates it.
const refused = spawnSync(binary, ["serve", "-c", config], {
  cwd: work,
  encoding: "utf8",
  timeout: 15_000,
});
if (refused.status !== 2 || !refused.stderr.includes("does not exist")) {
  fail(
    `serve without a slashing database exited ${refused.status ?? refused.signal}, expected 2: ${refused.stderr}`,
  );
}
// config check refuses the missing database as serve does, with the same line and status.
const unchecked = spawnSync(binary, ["config", "check", "-c", config], {
  cwd: work,
  encoding: "utf8",
});
const refusal = (stderr) => stderr.split("\n").find((line) => line.includes("does not exist"));
if (unchecked.status !== 2 || refusal(unchecked.stderr) !== refusal(refused.stderr)) {
  fail(`config check without a slashing database exited ${unchecked.status}: ${unchecked.stderr}`);
}
const init = spawnSync(binary, ["slashing", "init", "-c", config], { cwd: work, encoding: "utf8" });
if (init.status !== 0) fail(`slashing init exited ${init.status}: ${init.stderr}`);
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

const workers = Number(logs.match(/BLS worker pool .*workers=(\d+)/)?.[1] ?? 0);
if (!(workers >= 1)) fail(`no "BLS worker pool" line with workers >= 1:\n${logs}`);
const signed = await fetch(`${url}/api/v1/eth2/sign/${KEY_0}`, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "text/plain" },
  body: attestation,
});
const signature = await signed.text();
if (signed.status !== 200 || signature !== EXPECTED_SIGNATURE) {
  fail(`sign answered ${signed.status} ${signature}, expected ${EXPECTED_SIGNATURE}:\n${logs}`);
}

child.kill("SIGTERM");
const { code, signal } = await exited;
if (code !== 0) fail(`exit after SIGTERM was ${code ?? signal}:\n${logs}`);
rmSync(work, { recursive: true, force: true });
console.log(
  `smoke: ok (${url}/upcheck answered OK, ${workers} BLS worker(s) signed correctly, SIGTERM exit 0)`,
);
