/**
 * Finds the native blst addon (`.node`) for a release target and proves it is built for the
 * target's CPU before it is embedded. The host's own addon comes from node_modules; another
 * platform's is fetched with `npm pack` (npm install would only take the host's) and must match
 * the integrity package-lock.json records for it.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ET_DYN, elfMismatch } from "./elf";
import type { Arch } from "./targets";

export interface BlstAddon {
  readonly packageName: string;
  readonly version: string;
  /** The `.node` file the build embeds. */
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly source: "node_modules" | "npm pack";
}

interface PackageJson {
  readonly version?: string;
  readonly main?: string;
  readonly optionalDependencies?: Record<string, string>;
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"));

/** Why `bytes` does not match a Subresource Integrity string's sha512, or undefined if it does. */
export function integrityMismatch(bytes: Uint8Array, integrity: string): string | undefined {
  const wanted = integrity
    .split(/\s+/)
    .filter((entry) => entry.startsWith("sha512-"))
    .map((entry) => entry.slice("sha512-".length));
  if (wanted.length === 0) return `no sha512 in integrity ${JSON.stringify(integrity)}`;
  const actual = createHash("sha512").update(bytes).digest("base64");
  return wanted.includes(actual)
    ? undefined
    : `sha512 is ${actual}, the lockfile says ${wanted[0]}`;
}

/** The integrity package-lock.json records for `name` at `version`, or undefined. */
export function lockfileIntegrity(
  lock: unknown,
  name: string,
  version: string,
): string | undefined {
  const packages = (lock as { packages?: Record<string, { version?: string; integrity?: string }> })
    ?.packages;
  const entry = packages?.[`node_modules/${name}`];
  return entry?.version === version ? entry.integrity : undefined;
}

function npmPack(spec: string, dir: string): string {
  const packed = spawnSync("npm", ["pack", spec, "--json", "--pack-destination", dir], {
    cwd: dir,
    encoding: "utf8",
  });
  if (packed.status !== 0) {
    const reason = packed.stderr.trim().split("\n").pop() ?? `exit ${packed.status}`;
    throw new Error(`npm pack ${spec} failed: ${reason}`);
  }
  const [entry] = JSON.parse(packed.stdout) as { filename: string }[];
  if (!entry) throw new Error(`npm pack ${spec} reported no file`);
  return join(dir, entry.filename);
}

function fetchPackage(name: string, version: string, root: string, workDir: string): string {
  const integrity = lockfileIntegrity(readJson(join(root, "package-lock.json")), name, version);
  if (integrity === undefined) {
    throw new Error(`package-lock.json has no integrity for ${name}@${version}; cannot verify it`);
  }
  const tarball = npmPack(`${name}@${version}`, workDir);
  const mismatch = integrityMismatch(readFileSync(tarball), integrity);
  if (mismatch) throw new Error(`${name}@${version} from npm: ${mismatch}`);
  const into = join(workDir, name.replace(/[@/]/g, "_"));
  const untar = spawnSync("sh", [
    "-c",
    'mkdir -p "$1" && tar -xzf "$2" -C "$1"',
    "sh",
    into,
    tarball,
  ]);
  if (untar.status !== 0)
    throw new Error(`cannot unpack ${tarball}: ${String(untar.stderr).trim()}`);
  return join(into, "package");
}

/** Where `name` is installed at exactly `version`, resolved as blst's loader resolves it. */
function installedPackageDir(name: string, version: string, from: string): string | undefined {
  try {
    const manifest = Bun.resolveSync(`${name}/package.json`, from);
    return (readJson(manifest) as PackageJson).version === version ? dirname(manifest) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The addon of `name` (one of @chainsafe/blst's platform packages), at the exact version
 * @chainsafe/blst depends on, checked to be a 64-bit shared object for `arch`.
 */
export function obtainBlstAddon(
  name: string,
  arch: Arch,
  root: string,
  workDir: string,
): BlstAddon {
  const blstManifest = Bun.resolveSync("@chainsafe/blst/package.json", root);
  const version = (readJson(blstManifest) as PackageJson).optionalDependencies?.[name];
  if (version === undefined) throw new Error(`@chainsafe/blst does not list ${name}`);

  const installed = installedPackageDir(name, version, dirname(blstManifest));
  const packageDir = installed ?? fetchPackage(name, version, root, workDir);
  const source: BlstAddon["source"] = installed ? "node_modules" : "npm pack";

  const main = (readJson(join(packageDir, "package.json")) as PackageJson).main;
  if (!main?.endsWith(".node")) throw new Error(`${name}@${version} has no .node main file`);
  const path = join(packageDir, main);
  const bytes = new Uint8Array(readFileSync(path));
  const mismatch = elfMismatch(bytes, arch, [ET_DYN]);
  if (mismatch)
    throw new Error(`${name}@${version} (${path}) is unusable for ${arch}: ${mismatch}`);
  return { packageName: name, version, path, bytes, source };
}
