import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, cpSync, existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { initializedDatabase, runSigil, startSigil, TempDir } from "../support/cli";

const dir = new TempDir();
afterAll(() => dir.remove());

function config(extra = ""): string {
  return dir.file(
    `serve-${crypto.randomUUID()}.yaml`,
    `server:\n  listen_address: 127.0.0.1\n  listen_port: 0\nantislashing:\n  backend: sqlite\n  path: ${dir.path}/slashing.sqlite\n${extra}`,
  );
}

/** A port that is free now: bound by a helper listener, then released. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

describe("sigil serve", () => {
  test("starts, answers /upcheck and /healthcheck, and exits 0 on SIGTERM", async () => {
    const sigil = await startSigil(["serve", "-c", config(), "--init-slashing-protection"]);
    try {
      const up = await fetch(`${sigil.url}/upcheck`);
      expect(up.status).toBe(200);
      expect(await up.text()).toBe("OK");
      const health = await fetch(`${sigil.url}/healthcheck`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as { status: string }).status).toBe("UP");
      const missing = await fetch(`${sigil.url}/api/v1/nothing-here`);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ code: "not_found", message: expect.any(String) });
    } finally {
      expect(await sigil.stop("SIGTERM")).toBe(0);
    }
    expect(sigil.stderrText()).toContain("stopped");
  });

  test("exits 0 on SIGINT too, and stops listening", async () => {
    const sigil = await startSigil(["serve", "-c", config(), "--init-slashing-protection"]);
    expect(await sigil.stop("SIGINT")).toBe(0);
    await expect(fetch(`${sigil.url}/upcheck`)).rejects.toThrow();
  });

  test("`sigil -c FILE` runs serve; flags override the file", async () => {
    const port = await freePort();
    const sigil = await startSigil([
      "-c",
      config(),
      "--init-slashing-protection",
      "--server-listen-port",
      String(port),
    ]);
    try {
      expect(sigil.url).toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(`${sigil.url}/upcheck`)).status).toBe(200);
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
  });

  test("environment variables configure the listener", async () => {
    const port = await freePort();
    const sigil = await startSigil(["serve", "-c", config(), "--init-slashing-protection"], {
      SIGNER_SERVER__LISTEN_PORT: String(port),
    });
    try {
      expect(sigil.url).toBe(`http://127.0.0.1:${port}`);
    } finally {
      await sigil.stop();
    }
  });

  test("JSON logs when logging.format is json", async () => {
    const sigil = await startSigil([
      "serve",
      "-c",
      config("logging:\n  format: json\n"),
      "--init-slashing-protection",
    ]);
    await sigil.stop();
    const lines = sigil.stderrText().trim().split("\n");
    const records = lines.map((line) => JSON.parse(line));
    expect(records.some((r) => r.msg === "sigil listening" && r.level === "info")).toBe(true);
  });

  test("a port already in use is a one-line runtime error and exit 1", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    try {
      if (address === null || typeof address === "string") throw new Error("no port");
      const result = runSigil([
        "serve",
        "-c",
        config(),
        "--init-slashing-protection",
        "--server-listen-port",
        String(address.port),
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`127.0.0.1:${address.port} is already in use`);
    } finally {
      blocker.close();
    }
  });

  test("a port in use stops start-up before the keys load or the database is created", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    const database = join(dir.path, `probe-${crypto.randomUUID()}.sqlite`);
    const file = dir.file(
      `probe-${crypto.randomUUID()}.yaml`,
      `server: {listen_address: 127.0.0.1}\nkey_sources: {filesystem: {paths: ["${join(process.cwd(), "examples/keys")}"]}}\nantislashing: {path: "${database}"}\n`,
    );
    try {
      if (address === null || typeof address === "string") throw new Error("no port");
      for (const env of [
        { SIGNER_SERVER__LISTEN_PORT: String(address.port), SIGNER_METRICS__LISTEN_PORT: "0" },
        { SIGNER_SERVER__LISTEN_PORT: "0", SIGNER_METRICS__LISTEN_PORT: String(address.port) },
      ] as Record<string, string>[]) {
        const result = runSigil(["serve", "-c", file, "--init-slashing-protection"], env);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`127.0.0.1:${address.port} is already in use`);
        // Keys present, none loaded: the port was tried first (100,000 keys take minutes).
        expect(result.stderr).not.toContain("keys loaded");
        expect(existsSync(database)).toBe(false);
      }
    } finally {
      blocker.close();
    }
  });

  test("the metrics port in use is a one-line error naming metrics.listen_port, exit 1", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    try {
      if (address === null || typeof address === "string") throw new Error("no port");
      const result = runSigil(["serve", "-c", config(), "--init-slashing-protection"], {
        SIGNER_METRICS__LISTEN_PORT: String(address.port),
      });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split("\n").at(-1)).toBe(
        `sigil: cannot start: 127.0.0.1:${address.port} is already in use (metrics.listen_port)`,
      );
      expect(result.stderr).not.toContain("server.listen_port");
    } finally {
      blocker.close();
    }
  });

  test("without -c: one warning line says it listens everywhere with no auth", () => {
    // Run where there is no database: start-up stops there (exit 2), after the warnings.
    const result = runSigil(["serve"], { SIGNER_SERVER__LISTEN_PORT: "0" }, dir.path);
    expect(result.code).toBe(2);
    const warnings = result.stderr.split("\n").filter((line) => line.includes("warning"));
    expect(warnings).toEqual([
      expect.stringMatching(
        /^sigil: warning: server.listen_address is 0.0.0.0 \(every interface, the default: no -c file was given\) and no auth is configured: anyone who can reach port 0 can have the loaded keys sign/,
      ),
    ]);
    expect(result.stderr).toContain("slashing_protection.sqlite does not exist");
  });

  test("an invalid configuration exits 2 before binding the port", async () => {
    const port = await freePort();
    const file = config("network: not-a-network\n");
    const result = runSigil(["serve", "-c", file, "--server-listen-port", String(port)]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("network: must be one of mainnet, hoodi, sepolia");
    expect(result.stderr).not.toContain("listening");
  });

  test("`npm start` on a fresh clone signs the README's example with blst, no key warning", async () => {
    // A clone of examples/ in a temp dir, its key files 0644 as git checks them out; npm runs
    // the prestart script first, then start's command (its database goes to ./data there).
    const clone = join(dir.path, "clone");
    cpSync("examples", join(clone, "examples"), { recursive: true });
    const keyFiles = readdirSync(join(clone, "examples/keys")).filter((f) =>
      f.startsWith("interop-"),
    );
    for (const file of keyFiles) chmodSync(join(clone, "examples/keys", file), 0o644);
    const { scripts } = (await Bun.file("package.json").json()) as {
      scripts: Record<string, string>;
    };
    expect(scripts.start).toEndWith("serve -c examples/dev.yaml --init-slashing-protection");
    expect(Bun.spawnSync(["sh", "-c", scripts.prestart ?? "false"], { cwd: clone }).exitCode).toBe(
      0,
    );
    const sigil = await startSigil(
      [
        "serve",
        "-c",
        "examples/dev.yaml",
        "--init-slashing-protection",
        "--server-listen-port",
        "0",
      ],
      {},
      clone,
    );
    try {
      const keys = (await (await fetch(`${sigil.url}/api/v1/eth2/publicKeys`)).json()) as string[];
      expect(keys).toHaveLength(4);
      const response = await fetch(`${sigil.url}/api/v1/eth2/sign/${keys.sort()[0]}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: await Bun.file("examples/sign-attestation.json").text(),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { signature: string }).signature).toMatch(
        /^0x[0-9a-f]{192}$/,
      );
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
    expect(sigil.stderrText()).toMatch(/BLS backend backend=blst/);
    expect(sigil.stderrText()).toMatch(/slashing protection backend=sqlite/);
    // The example keys are owner-only now; the warning stays for real keys that are not.
    expect(sigil.stderrText()).toContain("filesystem keys loaded loaded=4 failed=0");
    expect(sigil.stderrText()).not.toContain("WARN");
    // The checkpoint worker is its own entrypoint of the compiled binary: found, it says so.
    expect(sigil.stderrText()).toMatch(/slashing database checkpoints run in a worker thread/);
    expect(sigil.stderrText()).not.toMatch(/back on the event loop/);
  });

  test("examples/dev.yaml (what `npm start` uses) is a valid configuration", () => {
    // Its database (./data, made by npm start's first run) stands in from a temporary directory.
    const result = runSigil(["config", "check", "-c", "examples/dev.yaml"], {
      SIGNER_ANTISLASHING__PATH: initializedDatabase(dir),
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });
});
