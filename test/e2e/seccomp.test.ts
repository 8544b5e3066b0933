import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scryptSync } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { seccompArchFor } from "../../src/os/seccomp/arch";
import { cleanEnv, sigilCommand, startSigil, TempDir } from "../support/cli";
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
