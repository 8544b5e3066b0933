import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scryptSync } from "node:crypto";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { loadConfig } from "../../src/config/load";
import { seccompArchFor } from "../../src/os/seccomp/arch";
import { cleanEnv, runSigil, sigilCommand, startSigil, TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { captureProcessOutput, registerTestSecret } from "../support/log-capture";
import { verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest, INTEROP_KEYS, postSign } from "../support/slashing";
import { exportRecords, isCovered } from "./records";

/**
 * `server.seccomp: true` on the real signer process (the compiled binary with SIGIL_TEST_BINARY):
 * everything a signer does after start-up still works under the filter, and a filtered process
 * cannot start a program (the probe, a separate process using the same module).
 */
const supported = "arch" in seccompArchFor(process.platform, process.arch);
const PASSWORD = registerTestSecret(`seccomp-${crypto.randomUUID()}`, "seccomp test password");
const CHEAP_PBKDF2 = {
  ...defaultPbkdfModule(),
  params: { ...defaultPbkdfModule().params, c: 1024 },
};
const dir = new TempDir();
const keysDir = join(dir.path, "keys");
let configFile = "";

beforeAll(() => {
  cpSync(resolve(import.meta.dir, "../../examples/keys"), keysDir, { recursive: true });
  configFile = dir.file(
    "seccomp.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0, seccomp: true}",
      `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      "bls: {workers: 2}",
      "",
    ].join("\n"),
  );
});
afterAll(() => dir.remove());

async function until(what: string, condition: () => boolean): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (condition()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Seccomp and NoNewPrivs of every thread of `pid`, read from /proc. */
function threadStates(pid: number): { seccomp: string; noNewPrivs: string }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
    return {
      seccomp: status.match(/^Seccomp:\s*(\d+)/m)?.[1] ?? "?",
      noNewPrivs: status.match(/^NoNewPrivs:\s*(\d+)/m)?.[1] ?? "?",
    };
  });
}

async function signAttestation(url: string, pubkey: string, source: number, salt: number) {
  const request = attestationRequest(source, source + 1, salt);
  const response = await postSign(url, pubkey, request.body);
  const body = (await response.json()) as { signature?: string; code?: string };
  return { status: response.status, body, message: { pubkey, ...request.message } };
}

describe.if(supported)("server.seccomp", () => {
  test("the signer signs, records, imports keys and stops under the filter", async () => {
    const sigil = await startSigil(["serve", "-c", configFile, "--init-slashing-protection"]);
    try {
      await until("the filter", () => sigil.stderrText().includes("seccomp filter installed"));
      const installed = sigil.stderrText().match(/seccomp filter installed \((\d+) syscalls/);
      expect(Number(installed?.[1])).toBeGreaterThan(100);

      // Every thread, the two BLS workers' included, is filtered: TSYNC reached them.
      const threads = threadStates(sigil.process.pid);
      expect(threads.length).toBeGreaterThan(3);
      expect(threads.every((t) => t.seccomp === "2" && t.noNewPrivs === "1")).toBe(true);

      // Signing in a BLS worker, recorded by sqlite slashing protection first.
      const pubkey = INTEROP_KEYS[0] as string;
      const first = await signAttestation(sigil.url, pubkey, 10, 1);
      expect(first.status).toBe(200);
      expect(verifiesAgainstOracle(first.message, first.body.signature ?? "")).toBe(true);
      // A double vote (same target, another root) is refused: the record was read back.
      const double = await signAttestation(sigil.url, pubkey, 10, 2);
      expect(double.status).toBe(412);

      // A Key Manager import writes the keystore, its password and descriptor to disk.
      const secret = registerTestSecret(interopSecret(50), "interop private key 50");
      const newKey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
      const newPubkey = `0x${Buffer.from(newKey).toString("hex")}`;
      const keystore = await create(
        PASSWORD,
        secret,
        newKey,
        "m/12381/3600/50/0/0",
        "",
        CHEAP_PBKDF2,
      );
      const imported = await fetch(`${sigil.url}/eth/v1/keystores`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ keystores: [JSON.stringify(keystore)], passwords: [PASSWORD] }),
      });
      expect(imported.status).toBe(200);
      expect(((await imported.json()) as { data: unknown[] }).data).toEqual([
        { status: "imported" },
      ]);
      for (const suffix of [".json", ".password", ".yaml"]) {
        expect(existsSync(join(keysDir, `${newPubkey}${suffix}`))).toBe(true);
      }
      const second = await signAttestation(sigil.url, newPubkey, 20, 3);
      expect(second.status).toBe(200);
      expect(verifiesAgainstOracle(second.message, second.body.signature ?? "")).toBe(true);

      expect(sigil.stderrText()).not.toMatch(/EPERM|operation not permitted/i);
      expect(await sigil.stop("SIGTERM")).toBe(0);
      expect(sigil.stderrText()).toContain("stopped");

      const exported = await exportRecords(dir.path, configFile, {});
      expect(isCovered(exported, first.message, "complete")).toBe(true);
      expect(isCovered(exported, second.message, "complete")).toBe(true);
    } finally {
      if (sigil.process.exitCode === null) await sigil.stop("SIGKILL");
    }
  });

  test("a filtered process cannot start a program, and the rest keeps working", async () => {
    const probe = Bun.spawn(
      [process.execPath, resolve(import.meta.dir, "fixtures/seccomp-probe.ts"), dir.path],
      { stdout: "pipe", stderr: "pipe", stdin: "ignore" },
    );
    const [stdout, stderr, code] = await Promise.all([
      new Response(probe.stdout).text(),
      new Response(probe.stderr).text(),
      probe.exited,
    ]);
    captureProcessOutput(probe.pid, { stdout, stderr });
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(stderr).toContain("seccomp filter installed");
    const outcome = JSON.parse(stdout) as Record<string, unknown>;
    expect(outcome.status).toBe("NoNewPrivs:\t1;Seccomp:\t2");
    expect(String(outcome.threads).split(",").length).toBeGreaterThan(1);
    expect(
      String(outcome.threads)
        .split(",")
        .every((mode) => mode === "2"),
    ).toBe(true);

    const denied = { ok: false, code: "EPERM", message: expect.any(String) };
    expect(outcome.bunSpawnSync).toEqual(denied);
    expect(outcome.bunSpawn).toEqual(denied);
    expect(outcome.execSync).toEqual(denied);
    expect(outcome.execve).toEqual(denied);
    expect(outcome.kill).toEqual(denied);
    // No new listening socket: the signer's are bound before the filter.
    expect(outcome.newListener).toEqual(denied);

    expect(outcome.fetch).toEqual({ ok: true, value: "200 served" });
    expect(outcome.files).toEqual({ ok: true, value: "secret-free content" });
    expect(outcome.sqlite).toEqual({ ok: true, value: "5050" });
    const key = scryptSync("password", "salt", 32, { N: 1024 }).toString("hex").slice(0, 8);
    expect(outcome.scrypt).toEqual({ ok: true, value: key });
    expect(outcome.worker).toEqual({ ok: true, value: "true" });
  });
});

describe.if(supported)("server.seccomp where the kernel refuses the filter", () => {
  test("start-up fails with the reason and exit 1 instead of serving unfiltered", async () => {
    const probe = Bun.spawn(
      [
        process.execPath,
        resolve(import.meta.dir, "fixtures/seccomp-probe.ts"),
        "--deny-seccomp",
        ...sigilCommand(["serve", "-c", configFile]),
      ],
      { env: cleanEnv(), stdout: "pipe", stderr: "pipe", stdin: "ignore" },
    );
    const [stdout, stderr, code] = await Promise.all([
      new Response(probe.stdout).text(),
      new Response(probe.stderr).text(),
      probe.exited,
    ]);
    captureProcessOutput(probe.pid, { stdout, stderr });
    expect(code).toBe(1);
    expect(stderr).toContain(
      "sigil: cannot start: server.seccomp: cannot install the syscall filter: seccomp(SECCOMP_SET_MODE_FILTER) failed: EPERM",
    );
    expect(stderr).not.toContain("seccomp filter installed");
  });
});

// ---------------------------------------------------------------------------------------------
// examples/systemd/config.yaml as shipped (server.seccomp: true), run the way the shipped unit
// examples/systemd/sigil.service runs it.

const SHIPPED_CONFIG = resolve(import.meta.dir, "../../examples/systemd/config.yaml");
/** The unit's state directory and WorkingDirectory, named by the shipped configuration. */
const SHIPPED_STATE = "/var/lib/sigil";
/** The unit's `sigil` user here: a uid with no account, as systemd's would be in its namespace. */
const UNIT_UID = 61_000;

function load(path: string) {
  const loaded = loadConfig({ argv: ["-c", path], env: {} });
  if (!loaded.ok) throw new Error(`${path}: ${JSON.stringify(loaded.problems)}`);
  return loaded.config;
}

/**
 * The shipped configuration with /var/lib/sigil moved to `state` and its ports to free ones
 * (tests run side by side); every other option as shipped, which the test checks.
 */
function shippedConfigIn(state: string, name: string): string {
  const text = readFileSync(SHIPPED_CONFIG, "utf8")
    .replaceAll(SHIPPED_STATE, state)
    .replace(/^(\s+listen_port:) \d+$/gm, "$1 0");
  const file = dir.file(name, text);
  const shipped = load(SHIPPED_CONFIG);
  const moved = JSON.parse(JSON.stringify(load(file)).replaceAll(state, SHIPPED_STATE));
  moved.server.listen_port = shipped.server.listen_port;
  moved.metrics.listen_port = shipped.metrics.listen_port;
  expect(moved).toEqual(shipped);
  expect(shipped.server.seccomp).toBe(true);
  return file;
}

/** A state directory as docs/deploy.md installs it: keys 0600 in keys/, 0700 directories. */
function stateDirectory(name: string, owner?: number): string {
  const state = join(dir.path, name);
  const keys = join(state, "keys");
  mkdirSync(state, { mode: 0o700 });
  cpSync(resolve(import.meta.dir, "../../examples/keys"), keys, { recursive: true });
  chmodSync(keys, 0o700);
  for (const file of readdirSync(keys)) chmodSync(join(keys, file), 0o600);
  if (owner !== undefined) {
    chmodSync(dir.path, 0o711); // the temporary directory above it: traversable, as /var/lib is
    for (const path of [state, keys, ...readdirSync(keys).map((f) => join(keys, f))])
      chownSync(path, owner, owner);
  }
  return state;
}

/** setpriv to the unit's user: User=, Group=, NoNewPrivileges=true, CapabilityBoundingSet= (empty). */
const AS_UNIT_USER = [
  "setpriv",
  `--reuid=${UNIT_UID}`,
  `--regid=${UNIT_UID}`,
  "--clear-groups",
  "--no-new-privs",
  "--inh-caps=-all",
  "--bounding-set=-all",
  "--",
];
/**
 * What systemd sets up for ProcSubset=pid with ProtectProc=invisible (a /proc of its own, mounted
 * subset=pid,hidepid=invisible, in a mount namespace of its own) and PrivateUsers=true (a user
 * namespace mapping the service's user to itself and nobody else), around the unit's user. No
 * --fork anywhere: each step execs the next, so the process started is sigil's.
 */
const AS_THE_UNIT = [
  "unshare",
  "--mount",
  "--propagation=private",
  "--",
  "sh",
  "-c",
  'mount -t proc -o subset=pid,hidepid=invisible proc /proc && exec "$@"',
  "sh",
  ...AS_UNIT_USER,
  "unshare",
  "--user",
  "--map-current-user",
  "--",
];

/** Why the unit's namespaces cannot be set up here, or undefined when they can. */
function unitEmulationUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return `needs root for unshare --mount (uid ${process.getuid?.()})`;
  for (const tool of ["unshare", "setpriv"])
    if (!Bun.which(tool)) return `${tool} (util-linux) is not installed`;
  const probe = Bun.spawnSync([...AS_THE_UNIT, "cat", "/proc/self/uid_map"]);
  if (probe.exitCode !== 0) return `unshare failed: ${probe.stderr.toString().trim()}`;
  return undefined;
}

/**
 * The shipped configuration serving under its filter: `sigil slashing init` as the install does,
 * then serve; key listing, signing recorded in the sqlite database, a refused double vote, a
 * graceful stop, and the records read back afterwards.
 */
async function serveShippedConfig(name: string, asUnit: boolean) {
  const state = stateDirectory(name, asUnit ? UNIT_UID : undefined);
  const config = shippedConfigIn(state, `${name}.yaml`);
  // runuser -u sigil -- sigil slashing init -c /etc/sigil/config.yaml (docs/deploy.md)
  const init = asUnit
    ? Bun.spawnSync([...AS_UNIT_USER, ...sigilCommand(["slashing", "init", "-c", config])], {
        env: cleanEnv(),
        cwd: state,
      })
    : undefined;
  if (init)
    expect({ code: init.exitCode, stderr: init.stderr.toString() }).toEqual({
      code: 0,
      stderr: "",
    });
  else expect(runSigil(["slashing", "init", "-c", config], {}, state).code).toBe(0);

  // WorkingDirectory=/var/lib/sigil
  const sigil = await startSigil(["serve", "-c", config], {}, state, asUnit ? AS_THE_UNIT : []);
  try {
    await until("the filter", () => sigil.stderrText().includes("seccomp filter installed"));
    const pid = sigil.process.pid;
    const threads = threadStates(pid);
    expect(threads.length).toBeGreaterThan(3);
    expect(threads.every((t) => t.seccomp === "2" && t.noNewPrivs === "1")).toBe(true);
    const namespaces = {
      uid: readFileSync(`/proc/${pid}/status`, "utf8").match(/^Uid:\s*(\d+)/m)?.[1],
      uidMap: readFileSync(`/proc/${pid}/uid_map`, "utf8").trim().split(/\s+/),
      proc: readFileSync(`/proc/${pid}/mountinfo`, "utf8")
        .split("\n")
        .filter((line) => line.split(" ")[4] === "/proc")
        .at(-1),
    };

    // Key listing: the four example keys, two of them keystores decrypted at start-up.
    const listed = await fetch(`${sigil.url}/api/v1/eth2/publicKeys`);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as string[]).toSorted()).toEqual(INTEROP_KEYS.toSorted());

    // Signing, recorded by sqlite slashing protection first; a double vote refused from it.
    const signed = [];
    for (const [i, pubkey] of [INTEROP_KEYS[0], INTEROP_KEYS[2]].entries()) {
      const attestation = await signAttestation(sigil.url, pubkey as string, 30 + i, 1);
      expect(attestation.status).toBe(200);
      expect(verifiesAgainstOracle(attestation.message, attestation.body.signature ?? "")).toBe(
        true,
      );
      signed.push(attestation.message);
    }
    // No warning before the double vote below; in particular listen-socket.ts found its listener
    // among /proc/self/fd's sockets (ProcSubset=pid hides /proc/net), or "TCP_DEFER_ACCEPT stays
    // on" would be.
    const warnings = sigil
      .stderrText()
      .split("\n")
      .filter((line) => /\bWARN\b/.test(line));
    expect(warnings).toEqual([]);
    const double = await signAttestation(sigil.url, INTEROP_KEYS[0] as string, 30, 2);
    expect(double.status).toBe(412);

    const log = sigil.stderrText();
    expect(log).not.toMatch(/EPERM|operation not permitted/i);
    expect(await sigil.stop("SIGTERM")).toBe(0);
    expect(sigil.stderrText()).toContain("stopped");

    const exported = await exportRecords(dir.path, config, {});
    for (const message of signed) expect(isCovered(exported, message, "complete")).toBe(true);
    return namespaces;
  } finally {
    if (sigil.process.exitCode === null) await sigil.stop("SIGKILL");
  }
}

describe.if(supported)("examples/systemd/config.yaml (server.seccomp: true)", () => {
  test("signs, records, lists keys and stops under the filter, with every option as shipped", async () => {
    const seen = await serveShippedConfig("shipped", false);
    expect(seen.uid).toBe(String(process.getuid?.()));
  });

  const unavailable = unitEmulationUnavailable();
  test.skipIf(unavailable !== undefined)(
    unavailable
      ? `as the unit runs it (ProcSubset=pid, PrivateUsers=true, user sigil): not run, ${unavailable}`
      : "as the unit runs it: ProcSubset=pid, PrivateUsers=true, an unprivileged user without capabilities",
    async () => {
      const seen = await serveShippedConfig("unit", true);
      // The namespaces were really there: its own uid, mapped to itself alone, and a /proc
      // showing only processes.
      expect(seen.uid).toBe(String(UNIT_UID));
      expect(seen.uidMap).toEqual([String(UNIT_UID), String(UNIT_UID), "1"]);
      expect(seen.proc).toContain("subset=pid");
      expect(seen.proc).toContain("hidepid=invisible");
    },
  );
});
