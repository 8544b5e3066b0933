// The README's two test commands: `npm test` needs Node.js and npm only, so the transport suite,
// which needs Go, a JDK, cargo and curl, is not part of it (nor of a bare `bun test`);
// `npm run test:clients` runs it, and .ci/run runs both and counts both.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT } from "./harness";

const TRANSPORT = "test/clients/transport";
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
};

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".test.ts"))
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)));
}

describe("npm test leaves out the transport suite", () => {
  test("bun test, with the repository's bunfig.toml, finds no test file in it", () => {
    const files = testFiles(join(REPO_ROOT, TRANSPORT));
    expect(files.length).toBeGreaterThanOrEqual(6);
    const run = Bun.spawnSync([process.execPath, "test", ...files.map((file) => `./${file}`)], {
      cwd: REPO_ROOT,
      env: { ...process.env, SIGIL_TRANSPORT_SKIP: "all" },
    });
    const output = `${run.stdout.toString()}${run.stderr.toString()}`;
    expect(output).toContain("did not match any test files");
    expect(output).not.toMatch(/\d+ pass/);
  });

  test("npm test runs bun test over the whole tree, with no path of its own", () => {
    expect(pkg.scripts.test).toMatch(/bun test --timeout \d+ &&/);
  });

  test("no other test file drives a toolchain that npm does not install", () => {
    const outside = testFiles(join(REPO_ROOT, "test"))
      .concat(testFiles(join(REPO_ROOT, "src")))
      .filter((file) => !file.startsWith(TRANSPORT))
      .filter((file) =>
        /requireCommand\(|\["(go|java|cargo)",/.test(readFileSync(join(REPO_ROOT, file), "utf8")),
      );
    expect(outside).toEqual([]);
  });
});

describe("npm run test:clients runs it, and fails (not skips) without a toolchain", () => {
  test("it runs every transport file, with bunfig.toml's ignore list cleared", () => {
    expect(pkg.scripts["test:clients"]).toBe("bun scripts/test-clients.ts");
    const script = readFileSync(join(REPO_ROOT, "scripts/test-clients.ts"), "utf8");
    expect(script).toContain(`const SUITE = "${TRANSPORT}"`);
    expect(script).toContain('"--path-ignore-patterns="');
  });

  test("with go missing from PATH, the Go stack fails naming what to install", () => {
    const run = Bun.spawnSync(
      [process.execPath, "scripts/test-clients.ts", `${TRANSPORT}/go.test.ts`],
      {
        cwd: REPO_ROOT,
        // This Bun only: no go (nor anything else) on PATH, and no HOME with a ~/.cargo/bin.
        env: { PATH: "/nonexistent", HOME: "/nonexistent" },
      },
    );
    const output = `${run.stdout.toString()}${run.stderr.toString()}`;
    expect(run.exitCode).not.toBe(0);
    expect(output).toContain("go is not installed: apt-get install golang-go");
    expect(output).toMatch(/ 0 pass/);
    expect(output).not.toMatch(/ [1-9]\d* skip/);
  }, 60_000);

  test(".ci/run runs it after npm test and counts it in its final line", () => {
    const ci = readFileSync(join(REPO_ROOT, ".ci/run"), "utf8");
    const npmTest = ci.indexOf("npm test 2>&1");
    const clients = ci.indexOf("npm run test:clients 2>&1");
    expect(npmTest).toBeGreaterThan(0);
    expect(clients).toBeGreaterThan(npmTest);
    expect(ci).toContain("passed + clients_passed + bin_passed");
    expect(ci).toContain("failed + clients_failed + bin_failed");
  });

  test("the README gives one line to each command and what it needs", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(readme).toMatch(/^npm test +# .*\n(?: +#.*\n)*? +# needs nothing beyond Node\.js, npm/m);
    expect(readme).toMatch(/^npm run test:clients +# .*\n(?: +#.*\n)* +# .*needs go, java/m);
  });
});
