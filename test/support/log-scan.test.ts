import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { TempDir } from "./cli";
import { interopSecret } from "./interop";
import {
  formatLeak,
  type LogFile,
  logKindOf,
  scanLogs,
  secretForms,
  type TestSecret,
  usableSecrets,
} from "./log-scan";

const token = (prefix: "sgl" | "sgr" | "sgo") =>
  `${prefix}_${randomBytes(32).toString("base64url")}`;
const identity = `AGE-SECRET-KEY-1${"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".repeat(2).slice(0, 58)}`;
const key0 = interopSecret(0);
const key0Hex = Buffer.from(key0).toString("hex");
const awsSecret = `secret-of-alice-${crypto.randomUUID()}`;

const fixed: TestSecret[] = [
  ...secretForms("interop private key 0", key0),
  ...secretForms("static secret", "static-secret-token-0123456789"),
];
const registered = (value: string, label: string) => secretForms(`${label} (registered)`, value);

const log = (name: string, ...lines: string[]): LogFile => ({
  name,
  kind: "log",
  text: lines.map((l) => `${l}\n`).join(""),
});
const output = (name: string, ...lines: string[]): LogFile => ({
  name,
  kind: "output",
  text: lines.map((l) => `${l}\n`).join(""),
});
const quiet = log("quiet.log", "2026-01-01T00:00:00.000Z  INFO sigil: sigil listening url=x");

describe("a leak of every kind is found, by file, line and label, never printed whole", () => {
  test("a fixed secret: a private key as 0x-hex, bare hex, upper-case hex and base64", () => {
    const files = [
      quiet,
      log(
        "a.log",
        "clean",
        `{"msg":"loaded","key":"0x${key0Hex}"}`,
        `raw ${key0Hex.toUpperCase()}`,
        `b64 ${Buffer.from(key0).toString("base64")}`,
      ),
      output("b.stdout.log", "privateKey: <redacted>", `static-secret-token-0123456789`),
    ];
    const { leaks } = scanLogs(files, fixed);
    expect(leaks.map((l) => [l.file, l.line, l.label])).toEqual([
      ["a.log", 2, "interop private key 0 (hex)"],
      ["a.log", 3, "interop private key 0 (HEX)"],
      ["a.log", 4, "interop private key 0 (base64)"],
      // A command's result is no place for a fixed secret either.
      ["b.stdout.log", 2, "static secret"],
    ]);
    for (const leak of leaks) {
      expect(leak.preview).toHaveLength(6);
      expect(formatLeak(leak)).not.toContain(key0Hex.slice(0, 20));
    }
  });

  test("a secret registered at run time, in a log or a command's output", () => {
    const files = [
      log("s.stderr.log", `kms error key=${awsSecret}`),
      output("s.stdout.log", `{"secret": "${awsSecret}"}`),
    ];
    const { leaks } = scanLogs(files, [
      ...fixed,
      ...registered(awsSecret, "AWS secret access key"),
    ]);
    expect(leaks.map((l) => formatLeak(l))).toEqual([
      "s.stderr.log:1: AWS secret access key (registered) (secret…)",
      "s.stdout.log:1: AWS secret access key (registered) (secret…)",
    ]);
  });

  test("a management or client token (sgl_) in a log, registered or not", () => {
    const management = token("sgl");
    const unknown = token("sgl");
    const files = [
      log("m.log", `{"msg":"request","authorization":"Bearer ${management}"}`),
      log("n.log", `2026-01-01T00:00:00.000Z DEBUG http: header value=${unknown}`),
    ];
    const { leaks } = scanLogs(files, [...fixed, ...registered(management, "management token")]);
    expect(leaks.map((l) => [l.file, l.label, l.preview])).toEqual([
      ["m.log", "management token (registered)", management.slice(0, 6)],
      ["n.log", "runtime token sgl_ (management/client token)", unknown.slice(0, 6)],
    ]);
  });

  test("an operator credential (sgo_) and a registration token (sgr_)", () => {
    const files = [
      log(
        "o.log",
        `{"msg":"share submitted","credential":"${token("sgo")}"}`,
        `x ${token("sgr")}.`,
      ),
    ];
    const { leaks } = scanLogs(files, fixed);
    expect(leaks.map((l) => [l.line, l.label])).toEqual([
      [1, "operator credential sgo_"],
      [2, "registration token sgr_"],
    ]);
  });

  test("an age identity anywhere, even in a command's output; the help text's example is fine", () => {
    const files = [
      log("i.log", "  --identity  age identity file (AGE-SECRET-KEY-1…) for a share"),
      log("j.log", `bad identity file: ${identity.toLowerCase()}`),
      output("k.stdout.log", identity),
    ];
    const { leaks } = scanLogs(files, fixed);
    expect(leaks.map((l) => [l.file, l.label, l.preview])).toEqual([
      ["j.log", "age identity", "age-se"],
      ["k.stdout.log", "age identity", "AGE-SE"],
    ]);
  });
});

describe("what is allowed", () => {
  test("the one-time setup token, as the value of setup_token, and then anywhere in the run", () => {
    const textSetup = token("sgl");
    const jsonSetup = token("sgl");
    const other = token("sgl");
    const files = [
      log(
        "serve.stderr.log",
        `2026-01-01T00:00:00.000Z  WARN seal: signer_state is not initialized; one-time setup token follows setup_token=${textSetup} next="sigil operator init"`,
      ),
      log(
        "inprocess.log",
        `{"level":"warn","msg":"signer_state is not initialized","setup_token":"${jsonSetup}"}`,
        `{"msg":"init","presented":"${textSetup}"}`,
        // Another sgl_ on the line of a setup token is still a leak.
        `{"msg":"x","setup_token":"${jsonSetup}","token":"${other}"}`,
      ),
    ];
    const result = scanLogs(files, fixed);
    expect(result.setupTokens).toBe(2);
    expect(result.leaks.map((l) => [l.file, l.line, l.preview])).toEqual([
      ["inprocess.log", 3, other.slice(0, 6)],
    ]);
  });

  test("setup_token only counts as a field, and never for a registration token or credential", () => {
    const fake = token("sgl");
    const registration = token("sgr");
    const files = [
      log(
        "a.log",
        `{"msg":"echo","note":"setup_token=${fake}"}`,
        `{"setup_token":"${registration}"}`,
      ),
      log("b.log", `{"msg":"x mysetup_token=${fake}"}`),
    ];
    const { leaks, setupTokens } = scanLogs(files, fixed);
    expect(setupTokens).toBe(0);
    expect(leaks.map((l) => [l.file, l.line, l.label])).toEqual([
      ["a.log", 1, "runtime token sgl_ (management/client token)"],
      ["a.log", 2, "registration token sgr_"],
      ["b.log", 1, "runtime token sgl_ (management/client token)"],
    ]);
  });

  test("a registered token logged as a setup token is still a leak", () => {
    const management = token("sgl");
    const files = [log("a.log", `{"setup_token":"${management}"}`)];
    const { leaks } = scanLogs(files, [...fixed, ...registered(management, "management token")]);
    expect(leaks.map((l) => l.label)).toEqual(["management token (registered)"]);
  });

  test("a command's output hands out tokens: init, register, generate-root-token, token create", () => {
    const management = token("sgl");
    const files = [
      output(
        "cli.stdout.log",
        `{"operators":[{"operator":"operator-1","registration_token":"${token("sgr")}"}]}`,
        `{"credential":"${token("sgo")}"}`,
        `{"token":"${management}"}`,
      ),
    ];
    const result = scanLogs(files, [...fixed, ...registered(management, "management token")]);
    expect(result.leaks).toEqual([]);
    expect(result.lines).toBe(3);
  });

  test("too-short secrets are not searched for (they would match by accident)", () => {
    const { usable, tooShort } = usableSecrets(secretForms("pw", "pw4"));
    expect(usable).toEqual([]);
    expect(tooShort).toHaveLength(1);
    expect(logKindOf("sigil-1-2-3.stdout.log")).toBe("output");
    expect(logKindOf("sigil-1-2-3.stderr.log")).toBe("log");
    expect(logKindOf("inprocess-1-abc.log")).toBe("log");
  });
});

describe("scripts/scan-test-logs.ts", () => {
  const dir = new TempDir();
  afterAll(() => dir.remove());
  const script = resolve(import.meta.dir, "../../scripts/scan-test-logs.ts");
  const scan = (runDir: string) => {
    const result = Bun.spawnSync([process.execPath, script, runDir]);
    return { code: result.exitCode, text: result.stdout.toString() + result.stderr.toString() };
  };
  const masterKey = randomBytes(32);
  const healthy = (runDir: string) => {
    const filler = Array.from({ length: 1200 }, (_, i) => `{"msg":"line ${i}"}`).join("\n");
    dir.file(`${runDir}/inprocess-1-a.log`, `${filler}\n`);
    dir.file(`${runDir}/sigil-1-a-1-2.stderr.log`, "sigil listening url=http://127.0.0.1:1\n");
    dir.file(
      `${runDir}/secrets.txt`,
      [
        JSON.stringify({ label: "client token", value: token("sgl") }),
        JSON.stringify({ label: "master key", hex: masterKey.toString("hex") }),
        "",
      ].join("\n"),
    );
    return join(dir.path, runDir);
  };

  test("passes a clean run and fails a planted leak, naming it without printing it", () => {
    Bun.spawnSync(["mkdir", "-p", join(dir.path, "clean"), join(dir.path, "leaky")]);
    const clean = scan(healthy("clean"));
    expect(clean.code, clean.text).toBe(0);
    expect(clean.text).toContain("no leaks");
    expect(clean.text).not.toMatch(/^ *\d+ (pass|fail)$/m); // .ci/run reads bun's counts

    const leaky = healthy("leaky");
    dir.file("leaky/sigil-1-a-2-3.stderr.log", `oops key=0x${key0Hex}\n`);
    dir.file(
      "leaky/inprocess-2-b.log",
      `{"msg":"x"}\n{"master":"${masterKey.toString("base64")}"}\n`,
    );
    const result = scan(leaky);
    expect(result.code).toBe(1);
    expect(result.text).toContain("sigil-1-a-2-3.stderr.log:1: interop private key 0 (hex)");
    expect(result.text).toContain(
      "inprocess-2-b.log:2: master key (registered at run time) (base64)",
    );
    expect(result.text).not.toContain(key0Hex);
    expect(result.text).not.toContain(masterKey.toString("base64"));
  });

  test("fails when it read too little to mean anything", () => {
    Bun.spawnSync(["mkdir", "-p", join(dir.path, "empty")]);
    const result = scan(join(dir.path, "empty"));
    expect(result.code).toBe(1);
    expect(result.text).toContain("is log capture broken?");
  });
});
