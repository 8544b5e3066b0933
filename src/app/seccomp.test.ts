import { describe, expect, test } from "bun:test";
import { loadConfig } from "../config/load";
import type { Config } from "../config/schema";
import { unsupportedFeatures } from "./features";
import { seccompProblems } from "./seccomp";

function config(seccomp: boolean): Config {
  const loaded = loadConfig({ argv: [], env: { SIGNER_SERVER__SECCOMP: String(seccomp) } });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  return loaded.config;
}

describe("server.seccomp and the host", () => {
  test("on Linux x64 and arm64 it is accepted", () => {
    expect(seccompProblems(config(true), { platform: "linux", arch: "x64" })).toEqual([]);
    expect(seccompProblems(config(true), { platform: "linux", arch: "arm64" })).toEqual([]);
    expect(unsupportedFeatures(config(true), { platform: "linux", arch: "x64" })).toEqual([]);
  });

  test("on macOS it is a configuration problem naming the option", () => {
    const problems = unsupportedFeatures(config(true), { platform: "darwin", arch: "arm64" });
    expect(problems).toEqual([
      {
        where: "server.seccomp",
        message: "seccomp exists only on Linux (this host is darwin); set it to false",
      },
    ]);
  });

  test("on an architecture the filter does not know, too", () => {
    expect(seccompProblems(config(true), { platform: "linux", arch: "ppc64" })).toEqual([
      {
        where: "server.seccomp",
        message: "the syscall filter knows x64 and arm64, not ppc64; set it to false",
      },
    ]);
  });

  test("switched off, any host is fine", () => {
    expect(unsupportedFeatures(config(false), { platform: "darwin", arch: "arm64" })).toEqual([]);
    expect(unsupportedFeatures(config(false), { platform: "win32", arch: "ia32" })).toEqual([]);
  });
});
