// The pure parts of the release build (scripts/build/): the target table against @chainsafe/blst's
// own loader, the ELF check on real ELF files from node_modules and the system, the embedded-addon
// check, the run check on stand-in executables, and SHA256SUMS checked by the real `sha256sum -c`.
// Nothing here downloads or compiles;
// `npm run release` itself is verified by hand (docs/release.md).
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  integrityMismatch,
  lockfileIntegrity,
  obtainBlstAddon,
} from "../../scripts/build/blst-addon";
import { ET_DYN, ET_EXEC, elfMismatch, readElfHeader } from "../../scripts/build/elf";
import { runVersion, VERSION_LINE } from "../../scripts/build/run-check";
import { formatSha256Sums, sha256OfFile } from "../../scripts/build/sums";
import {
  artifactName,
  blstRequireFor,
  ELF_MACHINE,
  hostArch,
  RELEASE_TARGETS,
  type ReleaseTarget,
} from "../../scripts/build/targets";
import { releaseBinaryProblem } from "../../scripts/build/verify";

const ROOT = join(import.meta.dir, "../..");
const BUN = process.execPath;
const work = mkdtempSync(join(tmpdir(), "sigil-release-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const packageDir = (name: string) => dirname(Bun.resolveSync(`${name}/package.json`, ROOT));
const read = (path: string) => new Uint8Array(readFileSync(path));
const blstDir = packageDir("@chainsafe/blst");
const blstManifest = JSON.parse(readFileSync(join(blstDir, "package.json"), "utf8")) as {
  optionalDependencies: Record<string, string>;
};

// Real ELF files of known architectures, shipped prebuilt by dev dependencies the suite already
// uses (dynalite's classic-level, Lodestar's bigint-buffer2), plus the host's own blst addon.
const prebuilds = join(packageDir("classic-level"), "prebuilds");
const SAMPLES = {
  aarch64: read(join(prebuilds, "linux-arm64/classic-level.armv8.node")),
  arm32: read(join(prebuilds, "linux-arm/classic-level.armv7.node")),
  machO: read(join(prebuilds, "darwin-x64+arm64/classic-level.node")),
  aarch64Other: read(join(packageDir("@vekexasia/bigint-buffer2"), "index.linux-arm64-gnu.node")),
  x64Blst: read(join(packageDir("@chainsafe/blst-linux-x64-gnu"), "blst.linux-x64-gnu.node")),
};

const target = (name: string): ReleaseTarget => {
  const found = RELEASE_TARGETS.find((t) => t.name === name);
  if (!found) throw new Error(`no target ${name}`);
  return found;
};

describe("release targets", () => {
  test("x64, baseline x64 and arm64 Linux, each with its own artifact name", () => {
    expect(RELEASE_TARGETS.map((t) => [artifactName(t), t.bunTarget, t.arch])).toEqual([
      ["sigil-linux-x64", "bun-linux-x64", "x64"],
      ["sigil-linux-x64-baseline", "bun-linux-x64-baseline", "x64"],
      ["sigil-linux-arm64", "bun-linux-arm64", "arm64"],
    ]);
  });

  test("each target's blst package is the one blst's loader requires on Linux glibc for its CPU", () => {
    const loader = readFileSync(join(blstDir, "index.js"), "utf8");
    const linux = loader.slice(loader.indexOf("case 'linux':"));
    for (const t of RELEASE_TARGETS) {
      expect(blstManifest.optionalDependencies[t.blstPackage]).toBe("2.2.0");
      // The loader's `case '<arch>':` block for this CPU requires exactly this package (gnu, not musl).
      const block = linux.slice(linux.indexOf(`case '${t.arch}':`));
      const gnuRequire = block.match(/require\('(@chainsafe\/blst-linux-[^']+-gnu)'\)/)?.[1];
      expect(gnuRequire).toBe(t.blstPackage);
    }
  });

  test("a build embeds its own blst package and leaves every other platform's out", () => {
    const every = Object.keys(blstManifest.optionalDependencies);
    for (const t of RELEASE_TARGETS) {
      const embedded = every.filter((name) => blstRequireFor(t, name) === "embed");
      expect(embedded).toEqual([t.blstPackage]);
    }
  });

  test("the host architecture maps to a target architecture or to none", () => {
    expect(hostArch("x64")).toBe("x64");
    expect(hostArch("arm64")).toBe("arm64");
    expect(hostArch("ia32")).toBeUndefined();
    expect(hostArch("riscv64")).toBeUndefined();
  });
});

describe("ELF check", () => {
  test("the host's blst addon is a 64-bit little-endian x86-64 shared object", () => {
    expect(readElfHeader(SAMPLES.x64Blst)).toEqual({
      bits: 64,
      littleEndian: true,
      type: ET_DYN,
      machine: ELF_MACHINE.x64,
    });
    expect(elfMismatch(SAMPLES.x64Blst, "x64", [ET_DYN])).toBeUndefined();
    expect(elfMismatch(SAMPLES.x64Blst, "arm64", [ET_DYN])).toBe("built for x86-64, not aarch64");
  });

  test("an aarch64 shared object passes for arm64 only", () => {
    expect(readElfHeader(SAMPLES.aarch64).machine).toBe(183);
    expect(elfMismatch(SAMPLES.aarch64, "arm64", [ET_DYN])).toBeUndefined();
    expect(elfMismatch(SAMPLES.aarch64, "x64", [ET_DYN])).toBe("built for aarch64, not x86-64");
  });

  test("32-bit ARM is refused for arm64", () => {
    expect(readElfHeader(SAMPLES.arm32)).toMatchObject({ bits: 32, machine: 40 });
    expect(elfMismatch(SAMPLES.arm32, "arm64", [ET_DYN])).toBe(
      "built for ARM (32-bit), not aarch64",
    );
  });

  test("/bin/true is an executable for this machine", () => {
    const host = hostArch();
    if (host === undefined) throw new Error(`no release architecture for ${process.arch}`);
    const header = readElfHeader(read("/bin/true"));
    expect(header.machine).toBe(ELF_MACHINE[host]);
    expect(elfMismatch(read("/bin/true"), host, [ET_EXEC, ET_DYN])).toBeUndefined();
  });

  test("a big-endian header is read as big-endian and refused", () => {
    const swapped = Uint8Array.from(SAMPLES.aarch64.subarray(0, 64));
    swapped[5] = 2; // ELFDATA2MSB
    [swapped[16], swapped[17]] = [swapped[17] ?? 0, swapped[16] ?? 0];
    [swapped[18], swapped[19]] = [swapped[19] ?? 0, swapped[18] ?? 0];
    expect(readElfHeader(swapped)).toEqual({
      bits: 64,
      littleEndian: false,
      type: ET_DYN,
      machine: 183,
    });
    expect(elfMismatch(swapped, "arm64", [ET_DYN])).toBe(
      "64-bit big-endian, not 64-bit little-endian",
    );
  });

  test("the wrong ELF type, a Mach-O file and a truncated header are refused", () => {
    expect(elfMismatch(SAMPLES.x64Blst, "x64", [ET_EXEC])).toBe("ELF type 3, expected 2");
    expect(elfMismatch(SAMPLES.machO, "arm64", [ET_DYN])).toMatch(/^not an ELF file/);
    expect(() => readElfHeader(SAMPLES.aarch64.subarray(0, 19))).toThrow(/too short/);
    const badClass = Uint8Array.from(SAMPLES.aarch64.subarray(0, 64));
    badClass[4] = 7;
    expect(() => readElfHeader(badClass)).toThrow("unknown ELF class 7");
  });
});

describe("embedded addon check", () => {
  const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
  const filler = randomBytes(4096);
  const arm64 = target("linux-arm64");
  const x64 = target("linux-x64");

  test("an aarch64 executable that embeds the arm64 addon and no x64 addon passes", () => {
    const binary = concat(SAMPLES.aarch64, filler, SAMPLES.aarch64Other, filler);
    expect(
      releaseBinaryProblem(binary, arm64, SAMPLES.aarch64Other, [SAMPLES.x64Blst]),
    ).toBeUndefined();
  });

  test("an arm64 build that also carries the x64 addon is refused", () => {
    const binary = concat(SAMPLES.aarch64, SAMPLES.aarch64Other, SAMPLES.x64Blst);
    expect(releaseBinaryProblem(binary, arm64, SAMPLES.aarch64Other, [SAMPLES.x64Blst])).toBe(
      "it embeds a blst addon built for another CPU",
    );
  });

  test("a build without its addon, or for the wrong CPU, is refused", () => {
    expect(
      releaseBinaryProblem(concat(SAMPLES.aarch64, filler), arm64, SAMPLES.aarch64Other, []),
    ).toBe("it does not embed the @chainsafe/blst-linux-arm64-gnu addon");
    // The addon must be there byte for byte: one flipped byte is not the addon.
    const damaged = Uint8Array.from(SAMPLES.aarch64Other);
    damaged[damaged.length >> 1] = (damaged[damaged.length >> 1] ?? 0) ^ 0xff;
    expect(
      releaseBinaryProblem(concat(SAMPLES.aarch64, damaged), arm64, SAMPLES.aarch64Other, []),
    ).toBe("it does not embed the @chainsafe/blst-linux-arm64-gnu addon");
    expect(
      releaseBinaryProblem(concat(SAMPLES.aarch64, SAMPLES.x64Blst), x64, SAMPLES.x64Blst, []),
    ).toBe("the executable is built for aarch64, not x86-64");
  });
});

describe("blst addon source", () => {
  // sha512 of the empty string (FIPS 180-2 test vector), base64.
  const EMPTY_SHA512 =
    "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";

  test("integrity is checked against the sha512 of an SRI string", () => {
    const empty = new Uint8Array(0);
    expect(integrityMismatch(empty, `sha512-${EMPTY_SHA512}`)).toBeUndefined();
    expect(
      integrityMismatch(empty, `sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= sha512-${EMPTY_SHA512}`),
    ).toBeUndefined();
    expect(integrityMismatch(new TextEncoder().encode("abc"), `sha512-${EMPTY_SHA512}`)).toMatch(
      /^sha512 is .*, the lockfile says z4PhNX/,
    );
    expect(integrityMismatch(empty, "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=")).toMatch(/no sha512/);
  });

  test("package-lock.json pins every target's blst package at blst's version", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8"));
    for (const t of RELEASE_TARGETS) {
      expect(lockfileIntegrity(lock, t.blstPackage, "2.2.0")).toMatch(/^sha512-[A-Za-z0-9+/]+=*$/);
      expect(lockfileIntegrity(lock, t.blstPackage, "2.1.0")).toBeUndefined();
    }
  });

  test("the host's addon comes from node_modules, checked, and refused for the other CPU", () => {
    const host = RELEASE_TARGETS.find((t) => t.arch === hostArch());
    if (!host) throw new Error(`no release target for ${process.arch}`);
    const addon = obtainBlstAddon(host.blstPackage, host.arch, ROOT, work);
    expect(addon.source).toBe("node_modules");
    expect(addon.version).toBe("2.2.0");
    expect(readElfHeader(addon.bytes).machine).toBe(ELF_MACHINE[host.arch]);
    const other = host.arch === "x64" ? "arm64" : "x64";
    expect(() => obtainBlstAddon(host.blstPackage, other, ROOT, work)).toThrow(
      /is unusable for (arm64|x64): built for/,
    );
  });
});

describe("SHA256SUMS", () => {
  const sha256sum = (args: string[], cwd: string) =>
    spawnSync("sha256sum", args, { cwd, encoding: "utf8" });

  test("`sha256sum -c` accepts the file and notices a changed binary", async () => {
    const dir = mkdtempSync(join(work, "sums-"));
    const files: Record<string, Uint8Array> = {
      "sigil-linux-x64": randomBytes(1 << 20),
      "sigil-linux-arm64": new TextEncoder().encode("not really a binary\n"),
      "sigil-linux-x64-baseline": new Uint8Array(0),
    };
    for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
    const sums = [];
    for (const name of Object.keys(files)) {
      sums.push({ file: name, sha256: await sha256OfFile(join(dir, name)) });
    }
    // The empty file's digest is the published SHA-256 of the empty string.
    expect(sums.find((s) => s.file === "sigil-linux-x64-baseline")?.sha256).toBe(
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    );
    writeFileSync(join(dir, "SHA256SUMS"), formatSha256Sums(sums));

    // The same lines sha256sum itself writes for these files.
    const own = sha256sum(Object.keys(files).sort(), dir);
    expect(own.status).toBe(0);
    expect(readFileSync(join(dir, "SHA256SUMS"), "utf8")).toBe(own.stdout);

    const check = sha256sum(["-c", "--strict", "SHA256SUMS"], dir);
    expect(check.status).toBe(0);
    expect(check.stdout.trim().split("\n").sort()).toEqual([
      "sigil-linux-arm64: OK",
      "sigil-linux-x64-baseline: OK",
      "sigil-linux-x64: OK",
    ]);

    writeFileSync(join(dir, "sigil-linux-arm64"), "not really a binarY\n");
    const tampered = sha256sum(["-c", "SHA256SUMS"], dir);
    expect(tampered.status).not.toBe(0);
    expect(tampered.stdout).toContain("sigil-linux-arm64: FAILED");
  });

  test("names sha256sum would escape, and digests that are not lowercase hex, are refused", () => {
    const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    expect(() => formatSha256Sums([{ file: "a\nb", sha256: digest }])).toThrow(/unescaped/);
    expect(() => formatSha256Sums([{ file: "a\\b", sha256: digest }])).toThrow(/unescaped/);
    expect(() => formatSha256Sums([{ file: "", sha256: digest }])).toThrow(/unescaped/);
    expect(() => formatSha256Sums([{ file: "a", sha256: digest.toUpperCase() }])).toThrow(
      /lowercase hex/,
    );
    expect(() => formatSha256Sums([{ file: "a", sha256: digest.slice(2) }])).toThrow(
      /lowercase hex/,
    );
  });
});

describe("run check", () => {
  // Stand-ins for a release binary: scripts that answer `version` as a binary with blst, one that
  // fell back to noble, and one that crashes. The check runs them as it runs a native binary.
  const standIn = (name: string, body: string) => {
    const path = join(work, name);
    writeFileSync(path, `#!/bin/sh\n[ "$1" = version ] || exit 64\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const host = RELEASE_TARGETS.find((t) => t.arch === hostArch());

  test("the expected version line names blst; noble or a missing part does not pass", () => {
    expect(VERSION_LINE.test("sigil 0.1.0 (commit 8788421544f3, bun 1.4.5), bls blst")).toBe(true);
    expect(VERSION_LINE.test("sigil 0.1.0 (commit 8788421544f3-dirty, bun 1.4.5), bls blst")).toBe(
      true,
    );
    expect(VERSION_LINE.test("sigil 0.1.0 (commit 8788421544f3, bun 1.4.5), bls noble")).toBe(
      false,
    );
    expect(VERSION_LINE.test("sigil 0.1.0 (commit 8788421544f3), bls blst")).toBe(false);
  });

  test("a native binary that reports blst passes; noble or a crash fails the release", () => {
    if (!host) throw new Error(`no release target for ${process.arch}`);
    const good = standIn("good", 'echo "sigil 0.1.0 (commit abc, bun 1.4.5), bls blst"');
    expect(runVersion(good, host)).toEqual({
      ran: true,
      how: "natively",
      output: "sigil 0.1.0 (commit abc, bun 1.4.5), bls blst",
    });
    const noble = standIn("noble", 'echo "sigil 0.1.0 (commit abc, bun 1.4.5), bls noble"');
    expect(() => runVersion(noble, host)).toThrow(/exited 0: sigil .*bls noble/);
    const crash = standIn("crash", 'echo "Illegal instruction" >&2; exit 132');
    expect(() => runVersion(crash, host)).toThrow(/exited 132: Illegal instruction/);
  });
});

describe("build script", () => {
  test("an unknown argument is refused in one line before anything is built", () => {
    const result = spawnSync(BUN, ["scripts/build.ts", "--relase"], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, SIGIL_OUTFILE: join(work, "never-built") },
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'build: unknown argument "--relase" (the only option is --release)\n',
    );
    expect(existsSync(join(work, "never-built"))).toBe(false);
  });
});
