/**
 * Web3Signer key configuration files ("descriptors"), as read from a filesystem key source:
 *
 *   type: file-raw                      type: file-keystore
 *   keyType: BLS          (optional)    keyType: BLS          (optional)
 *   privateKey: 0x<64 hex>              keystoreFile: key.json
 *                                       keystorePasswordFile: key.password
 *
 * Relative keystore and password paths resolve against the descriptor's own directory.
 *
 * Like Web3Signer (whose YamlSignerParser reads every document of the file), a file may hold
 * several YAML documents separated by `---`, each one descriptor; empty documents are ignored.
 * A YAML syntax error anywhere refuses the whole file. Unknown fields are ignored.
 *
 * Every scalar is read as a string (YAML failsafe schema): an unquoted `privateKey: 0x…` must not
 * become a (lossy) number, and `keyType: BLS` needs no quoting either. The usual flat one-document
 * file is read by a strict shortcut (flat-yaml.ts) that gives the same result; anything else goes
 * to the YAML parser.
 *
 * Error reasons never contain a private key or a password, and not even YAML source excerpts
 * (the `yaml` package quotes the offending line in its messages, which could be a key).
 */
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { isJsonObject } from "../wire/json";
import { parseFlatYaml } from "./flat-yaml";

/** Refused descriptor, password file or document; `reason` is safe to log. */
export class DescriptorError extends Error {
  override readonly name = "DescriptorError";
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

export interface RawKeyDescriptor {
  type: "file-raw";
  /** The 32-byte secret; the caller zeroes it once imported. */
  privateKey: Uint8Array;
}

export interface KeystoreDescriptor {
  type: "file-keystore";
  /** Absolute path. */
  keystoreFile: string;
  /** Absolute path. */
  keystorePasswordFile: string;
}

export type KeyDescriptor = RawKeyDescriptor | KeystoreDescriptor;

/** One document of a descriptor file: either a descriptor or why it was refused. */
export type DescriptorDocument =
  | { ok: true; descriptor: KeyDescriptor }
  | { ok: false; reason: string };

/** Web3Signer signer types sigil does not load from files (refused by name). */
const KNOWN_UNSUPPORTED = new Set([
  "hashicorp",
  "azure-secret",
  "azure-key",
  "aws-secret",
  "aws-secrets",
  "aws-kms",
  "interlock",
  "yubihsm",
]);

const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/;

/**
 * Parses a descriptor file's text. Throws `DescriptorError` when the file as a whole is unusable
 * (malformed YAML, no documents); otherwise returns one entry per non-empty document.
 */
export function parseDescriptorFile(text: string, descriptorPath: string): DescriptorDocument[] {
  const flat = parseFlatYaml(text);
  const values = flat === undefined ? parseYamlDocuments(text) : [flat];
  // Keystore paths only; computed when asked for (a raw key needs none).
  const baseDir = () => dirname(resolve(descriptorPath));
  const nonEmpty = values.filter((value) => value !== "" && value !== null && value !== undefined);
  if (nonEmpty.length === 0) throw new DescriptorError("descriptor file is empty");
  return nonEmpty.map((value) => {
    try {
      return { ok: true, descriptor: parseDescriptor(value, baseDir) };
    } catch (err) {
      if (err instanceof DescriptorError) return { ok: false, reason: err.reason };
      throw err;
    }
  });
}

/** Every document of the text, as JavaScript values (all scalars strings). */
function parseYamlDocuments(text: string): unknown[] {
  const parsed = parseAllDocuments(text, { schema: "failsafe" });
  // parseAllDocuments returns an EmptyStream (an array too) for an empty source.
  const docs = Array.isArray(parsed) ? parsed : [parsed];
  for (const doc of docs) {
    const [error] = doc.errors;
    if (error) {
      const at = error.linePos?.[0];
      const where = at ? ` at line ${at.line}, column ${at.col}` : "";
      throw new DescriptorError(`malformed YAML${where} (${error.code})`);
    }
  }
  return docs.map((doc) => doc.toJS({ maxAliasCount: 100 }) as unknown);
}

function requiredString(doc: Record<string, unknown>, field: string, type: string): string {
  const value = doc[field];
  if (value === undefined || value === null || value === "") {
    throw new DescriptorError(`${type} descriptor has no '${field}'`);
  }
  if (typeof value !== "string") {
    throw new DescriptorError(`${type} descriptor field '${field}' must be a string`);
  }
  return value;
}

/** Validates one parsed YAML document (all scalars are strings). */
export function parseDescriptor(value: unknown, baseDir: string | (() => string)): KeyDescriptor {
  if (!isJsonObject(value)) {
    throw new DescriptorError(
      `descriptor must be a YAML mapping, got ${Array.isArray(value) ? "a sequence" : "a scalar"}`,
    );
  }
  const type = value.type;
  if (type === undefined || type === null || type === "") {
    throw new DescriptorError("descriptor has no 'type'");
  }
  if (typeof type !== "string")
    throw new DescriptorError("descriptor field 'type' must be a string");
  if (type !== "file-raw" && type !== "file-keystore") {
    const known = KNOWN_UNSUPPORTED.has(type) ? "" : " (expected file-raw or file-keystore)";
    throw new DescriptorError(`unsupported descriptor type ${JSON.stringify(type)}${known}`);
  }
  const keyType = value.keyType;
  if (keyType !== undefined && keyType !== null && keyType !== "" && keyType !== "BLS") {
    const shown = typeof keyType === "string" ? JSON.stringify(keyType) : "a non-string value";
    throw new DescriptorError(`unsupported keyType ${shown} (only BLS)`);
  }
  if (type === "file-raw") {
    const hex = requiredString(value, "privateKey", type);
    if (!PRIVATE_KEY.test(hex)) {
      // Describe the shape only: the value may be a (slightly mistyped) real key.
      const body = hex.startsWith("0x") ? hex.slice(2) : hex;
      const problem = !hex.startsWith("0x")
        ? "does not start with 0x"
        : /^[0-9a-fA-F]*$/.test(body)
          ? `has ${body.length} hex digits`
          : "contains non-hex characters";
      throw new DescriptorError(
        `file-raw privateKey must be 0x followed by 64 hex digits (it ${problem})`,
      );
    }
    return { type, privateKey: Uint8Array.fromHex(hex.slice(2)) };
  }
  const keystoreFile = requiredString(value, "keystoreFile", type);
  const keystorePasswordFile = requiredString(value, "keystorePasswordFile", type);
  const dir = typeof baseDir === "string" ? baseDir : baseDir();
  return {
    type,
    keystoreFile: resolve(dir, keystoreFile),
    keystorePasswordFile: resolve(dir, keystorePasswordFile),
  };
}

type OnMode = (path: string, mode: number) => void;

/** The checks both readers make between `stat` and reading: a file, within the size cap. */
function checkBoundedFile(
  info: { isDirectory(): boolean; mode: number; size: number },
  path: string,
  maxBytes: number,
  what: string,
  onMode: OnMode | undefined,
): void {
  if (info.isDirectory()) throw new DescriptorError(`${what} ${path} is a directory`);
  onMode?.(path, info.mode);
  if (info.size > maxBytes) {
    throw new DescriptorError(`${what} ${path} is larger than ${maxBytes} bytes`);
  }
}

/** An I/O error as a `DescriptorError` naming the file; our own errors pass through. */
function boundedReadError(err: unknown, path: string, what: string): DescriptorError {
  if (err instanceof DescriptorError) return err;
  return new DescriptorError(`${what} ${path}: ${ioProblem(err)}`);
}

/**
 * Reads a small file for the key loader with a size cap, turning I/O errors into a
 * `DescriptorError` that names the file (`what`) but never its contents.
 */
export async function readBoundedFile(
  path: string,
  maxBytes: number,
  what: string,
  onMode?: OnMode,
): Promise<Buffer> {
  try {
    checkBoundedFile(await stat(path), path, maxBytes, what, onMode);
    return await readFile(path);
  } catch (err) {
    throw boundedReadError(err, path, what);
  }
}

/**
 * `readBoundedFile` with synchronous calls, for a first load that reads 100,000 descriptors before
 * the signer serves anything: about a fifth of the CPU of two thread-pool round trips per file.
 * Same checks, same errors. The file is opened once and checked with `fstat` on that descriptor
 * (one path lookup, not two: about 15% less CPU per file, and the checks are of the file read).
 */
export function readBoundedFileSync(
  path: string,
  maxBytes: number,
  what: string,
  onMode?: OnMode,
): Buffer {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    checkBoundedFile(fstatSync(fd), path, maxBytes, what, onMode);
    return readFileSync(fd);
  } catch (err) {
    throw boundedReadError(err, path, what);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A short, content-free description of a filesystem error. */
export function ioProblem(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case "ENOENT":
      return "not found";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "is a directory";
    case "ENOTDIR":
      return "a parent is not a directory";
    case "ELOOP":
      return "too many symbolic links";
    default:
      return typeof code === "string" ? `cannot read (${code})` : "cannot read";
  }
}

export const MAX_PASSWORD_FILE_BYTES = 64 * 1024;

/** Removes one final "\n" or "\r\n"; everything else, spaces included, is password. */
export function stripFinalLineEnding(text: string): string {
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  if (text.endsWith("\n")) return text.slice(0, -1);
  return text;
}

/** Reads a keystore password file (UTF-8), dropping only the final line ending. */
export async function readPasswordFile(
  path: string,
  onMode?: (path: string, mode: number) => void,
): Promise<string> {
  const bytes = await readBoundedFile(path, MAX_PASSWORD_FILE_BYTES, "password file", onMode);
  try {
    return stripFinalLineEnding(bytes.toString("utf8"));
  } finally {
    bytes.fill(0);
  }
}
