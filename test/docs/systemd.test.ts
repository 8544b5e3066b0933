// examples/systemd/sigil.service and the configuration it runs: its hardening, its timeouts
// against sigil's own, its writable paths against the configuration's, systemd's own verdict
// where systemd-analyze is installed, and docs/deploy.md explaining every directive.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { loadConfig } from "../../src/config/load";
import type { Config } from "../../src/config/schema";
import { initializedDatabase, runSigil, sigilCommand, TempDir } from "../support/cli";
import { REPO_ROOT } from "./harness";
import { parseUnit, timeSpanSeconds, unitBoolean, unitValue } from "./systemd-unit";

const UNIT_PATH = join(REPO_ROOT, "examples/systemd/sigil.service");
const CONFIG_PATH = join(REPO_ROOT, "examples/systemd/config.yaml");
const unitText = readFileSync(UNIT_PATH, "utf8");
const unit = parseUnit(unitText);
const service = (key: string) => unitValue(unit, "Service", key);

/** Where the unit expects the example configuration (see docs/deploy.md). */
const INSTALLED_CONFIG = "/etc/sigil/config.yaml";
const STATE_DIRECTORY = "/var/lib/sigil";
/** sigil's stop after the grace period: the final trace flush is bounded to 5 s (src/observability/otlp.ts). */
const TRACE_FLUSH_SECONDS = 5;

function exampleConfig(): Config {
  const loaded = loadConfig({ argv: ["-c", CONFIG_PATH], env: {} });
  if (!loaded.ok)
    throw new Error(`examples/systemd/config.yaml: ${JSON.stringify(loaded.problems)}`);
  return loaded.config;
}

const tmp = new TempDir();
afterAll(() => tmp.remove());

describe("examples/systemd/sigil.service", () => {
  test("runs sigil serve as the dedicated user with the installed configuration", () => {
    expect(service("User")).toBe("sigil");
    expect(service("Group")).toBe("sigil");
    expect(service("ExecStart")).toBe(`/usr/local/bin/sigil serve -c ${INSTALLED_CONFIG}`);
    expect(service("WorkingDirectory")).toBe(STATE_DIRECTORY);
    expect(service("Restart")).toBe("on-failure");
    // Exit 2 is an invalid configuration (src/cli/exit.ts): restarting cannot fix it.
    expect(service("RestartPreventExitStatus")?.split(/\s+/)).toContain("2");
  });

  test("has the hardening directives", () => {
    const enabled = [
      "NoNewPrivileges",
      "ProtectHome",
      "PrivateTmp",
      "PrivateDevices",
      "ProtectKernelTunables",
      "ProtectKernelModules",
      "ProtectKernelLogs",
      "ProtectControlGroups",
      "RestrictNamespaces",
      "LockPersonality",
    ];
    for (const key of enabled)
      expect({ key, on: unitBoolean(service(key)) }).toEqual({ key, on: true });
    expect(service("ProtectSystem")).toBe("strict");
    // What systemd-analyze security still counted before: a /proc of process entries only, and a
    // user namespace of its own (test/e2e/seccomp.test.ts runs the signer under both).
    expect(service("ProtectProc")).toBe("invisible");
    expect(service("ProcSubset")).toBe("pid");
    expect(unitBoolean(service("PrivateUsers"))).toBe(true);
    // PrivateUsers= makes a capability granted here count in the namespace only: none is granted.
    expect(service("AmbientCapabilities")).toBe("");
    expect(new Set(service("RestrictAddressFamilies")?.split(/\s+/))).toEqual(
      new Set(["AF_INET", "AF_INET6", "AF_UNIX"]),
    );
    expect(service("SystemCallArchitectures")).toBe("native");
    // Present and empty: no capability at all, not "the default set".
    expect(service("CapabilityBoundingSet")).toBe("");
    expect(service("ReadWritePaths")).toBe(STATE_DIRECTORY);
    expect(service("StateDirectory")).toBe("sigil");
    expect(service("UMask")).toBe("0077");
    expect(Number(service("LimitNOFILE"))).toBeGreaterThanOrEqual(65536);
  });

  test("leaves MemoryDenyWriteExecute unset: Bun's JIT needs writable executable memory", () => {
    expect(unitBoolean(service("MemoryDenyWriteExecute")) ?? false).toBe(false);
    expect(unitText).toContain("MemoryDenyWriteExecute");
  });

  test("waits longer than sigil's graceful shutdown before SIGKILL", () => {
    const stopSeconds = timeSpanSeconds(service("TimeoutStopSec") ?? "90");
    const grace = exampleConfig().server.graceful_shutdown_timeout_seconds;
    expect(stopSeconds).toBeGreaterThan(grace + TRACE_FLUSH_SECONDS);
    const defaults = loadConfig({ argv: [], env: {} });
    if (!defaults.ok) throw new Error("the defaults do not load");
    expect(stopSeconds).toBeGreaterThan(
      defaults.config.server.graceful_shutdown_timeout_seconds + TRACE_FLUSH_SECONDS,
    );
  });

  test("lets sigil write every path the example configuration writes, and only the state directory", () => {
    const config = exampleConfig();
    const writable = [service("ReadWritePaths"), `/var/lib/${service("StateDirectory")}`];
    const inside = (path: string) => {
      const absolute = isAbsolute(path) ? path : resolve(STATE_DIRECTORY, path);
      return writable.some((dir) => dir && (absolute === dir || absolute.startsWith(`${dir}/`)));
    };
    const written = [
      config.antislashing.path,
      config.key_sources.filesystem.cache.path,
      ...config.key_sources.filesystem.paths,
    ];
    for (const path of written)
      expect({ path, writable: inside(path) }).toEqual({ path, writable: true });
  });
});

describe("examples/systemd/config.yaml", () => {
  test("turns the syscall filter on: the unit leaves SystemCallFilter= to server.seccomp", () => {
    expect(exampleConfig().server.seccomp).toBe(true);
    expect(service("SystemCallFilter")).toBeUndefined();
  });

  test("passes sigil config check", () => {
    // Its database is made at install (`sigil slashing init`, docs/deploy.md): one stands in for it.
    const result = runSigil(["config", "check", "-c", CONFIG_PATH], {
      SIGNER_ANTISLASHING__PATH: initializedDatabase(tmp),
    });
    // The one warning allowed: the key directory is made by the install (docs/deploy.md),
    // so on a machine without it config check says serve would load no keys from it.
    const keyDirectory = exampleConfig().key_sources.filesystem?.paths[0] ?? "";
    const expected = existsSync(keyDirectory)
      ? ""
      : `sigil: warning: key_sources.filesystem.paths[0]: the key directory ${keyDirectory} does not exist: serve would load no keys from it\n`;
    expect(result.stderr).toBe(expected);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("configuration is valid");
  });
});

describe("systemd's own checks", () => {
  const analyze = Bun.which("systemd-analyze");

  /** A copy of the unit whose ExecStart names an executable that exists here. */
  function installableCopy(name: string, edit: (text: string) => string = (t) => t): string {
    const executable = sigilCommand([])[0] ?? process.execPath;
    return tmp.file(
      name,
      edit(unitText).replace(/^ExecStart=\/usr\/local\/bin\/sigil /m, `ExecStart=${executable} `),
    );
  }

  function verify(path: string): string {
    if (!analyze) throw new Error("no systemd-analyze");
    const result = Bun.spawnSync([analyze, "verify", "--man=no", path]);
    return `${result.stdout.toString()}${result.stderr.toString()}`.trim();
  }

  if (!analyze) {
    test("systemd-analyze is not installed: the unit was checked with the built-in parser only", () => {
      console.log(
        "systemd-analyze not found: examples/systemd/sigil.service was checked by test/docs/systemd-unit.ts (keys and values), not by systemd",
      );
      expect(unit.get("Service")?.length ?? 0).toBeGreaterThan(20);
    });
    return;
  }

  test("systemd-analyze verify finds nothing to report", () => {
    expect(verify(installableCopy("sigil.service"))).toBe("");
  });

  test("systemd-analyze verify does report a broken copy (the check above can fail)", () => {
    const broken = installableCopy("broken.service", (text) =>
      text.replace("ProtectSystem=strict", "ProtectSystem=everything").replace("UMask=", "UMsk="),
    );
    const report = verify(broken);
    expect(report).toContain("everything");
    expect(report).toContain("UMsk");
  });

  /** systemd-analyze security --offline on the unit: its overall exposure, or why there is none. */
  function exposure(): { level: number } | { unavailable: string } {
    if (!analyze) return { unavailable: "no systemd-analyze" };
    const result = Bun.spawnSync([
      analyze,
      "security",
      "--offline=true",
      installableCopy("sigil.service"),
    ]);
    const level = /Overall exposure level for sigil\.service: ([\d.]+)/.exec(
      result.stdout.toString(),
    )?.[1];
    if (result.exitCode !== 0 || level === undefined)
      return { unavailable: result.stderr.toString().trim() || `exit ${result.exitCode}` };
    return { level: Number(level) };
  }
  const rated = exposure();
  const unrated = "unavailable" in rated ? rated.unavailable : undefined;

  // systemd before 250 has no --offline: nothing to rate a unit file that is not installed.
  test.skipIf(unrated !== undefined)(
    unrated
      ? `systemd-analyze security: not run, --offline is unavailable (${unrated})`
      : "systemd-analyze security rates the unit's exposure OK or better, as docs/deploy.md says",
    () => {
      if (!("level" in rated)) throw new Error(unrated);
      console.log(
        `systemd-analyze security: exposure ${rated.level} for examples/systemd/sigil.service`,
      );
      expect(rated.level).toBeLessThanOrEqual(4);
      // docs/deploy.md's figure, checked where the same systemd version rates it (each version
      // weighs the settings a little differently).
      const deploy = readFileSync(join(REPO_ROOT, "docs/deploy.md"), "utf8");
      const stated = /\(systemd (\d+)\) rates the shipped unit's exposure \*\*([\d.]+)\*\*/.exec(
        deploy,
      );
      expect(stated).not.toBeNull();
      const version = /^systemd (\d+)/.exec(
        Bun.spawnSync([analyze ?? "", "--version"]).stdout.toString(),
      )?.[1];
      if (version === stated?.[1]) expect(Number(stated?.[2])).toBe(rated.level);
      else console.log(`docs/deploy.md rates it on systemd ${stated?.[1]}; this is ${version}`);
    },
  );
});

describe("docs/deploy.md", () => {
  const deploy = readFileSync(join(REPO_ROOT, "docs/deploy.md"), "utf8");

  test("explains every directive of the unit", () => {
    const keys = [...unit.values()].flatMap((section) => section.map(([key]) => key));
    const missing = [...new Set(keys)].filter((key) => !deploy.includes(`${key}=`));
    expect(missing).toEqual([]);
  });
});
