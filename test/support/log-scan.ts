// The matching rules of the whole-run secret scan (scripts/scan-test-logs.ts), pure so that
// log-scan.test.ts can plant a leak of every kind and watch the scan catch it.

/** A value that must never appear; `needle` is what is searched for (the value itself by default). */
export interface TestSecret {
  readonly label: string;
  readonly value: string;
  readonly needle?: string;
}

/**
 * "log": a log (an in-process logger's sink, a sigil process's standard error), where every rule
 * applies. "output": a sigil command's standard output, its result: that is where sigil hands out
 * the tokens it mints (`operator init`, `register`, `generate-root-token`, `auth token create`),
 * so runtime tokens are allowed there; every other secret is still a leak.
 */
export type LogKind = "log" | "output";

export interface LogFile {
  readonly name: string;
  readonly kind: LogKind;
  readonly text: string;
}

export interface Leak {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  readonly label: string;
  /** The first 6 characters of what leaked: enough to tell which secret, never the secret. */
  readonly preview: string;
}

export interface ScanResult {
  readonly files: number;
  readonly lines: number;
  readonly secrets: number;
  /** Distinct setup tokens seen as the value of `setup_token`, hence allowed in this run. */
  readonly setupTokens: number;
  readonly leaks: Leak[];
}

/** Shorter needles would match by accident; the scan script reports how many it dropped. */
export const MIN_SECRET_LENGTH = 8;

/** sigil's runtime tokens: a prefix and 32 random bytes in base64url (src/auth/tokens.ts). */
const RUNTIME_TOKEN = /(?<![A-Za-z0-9_-])sg[lro]_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;
const RUNTIME_TOKEN_EXACT = /^sg[lro]_[A-Za-z0-9_-]{43}$/;
/** The one-time setup token, logged by design: text `setup_token=sgl_…`, JSON `"setup_token":"sgl_…"`. */
const SETUP_TOKEN_FIELD =
  /(?:(?:^|\s)setup_token="?|"setup_token":")(sgl_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g;
/** An age X25519 identity (bech32, upper case by convention; matched in any case). */
const AGE_IDENTITY = /AGE-SECRET-KEY-1[0-9A-Z]{20,}/gi;

const TOKEN_LABEL: Record<string, string> = {
  sgl: "runtime token sgl_ (management/client token)",
  sgr: "registration token sgr_",
  sgo: "operator credential sgo_",
};

/**
 * The forms a secret takes in text: raw bytes (a private key, a share) as hex (which also covers
 * 0x-hex), upper-case hex, base64 and base64url; text as itself, trimmed, JSON-escaped and
 * percent-encoded where those differ.
 */
export function secretForms(label: string, value: string | Uint8Array): TestSecret[] {
  const forms = new Map<string, string>();
  const add = (needle: string, formLabel: string) => {
    if (!forms.has(needle)) forms.set(needle, formLabel);
  };
  if (typeof value === "string") {
    const text = value.trim();
    add(text, label);
    add(JSON.stringify(text).slice(1, -1), `${label} (JSON-escaped)`);
    add(encodeURIComponent(text), `${label} (percent-encoded)`);
  } else {
    const bytes = Buffer.from(value);
    const hex = bytes.toString("hex");
    add(hex, `${label} (hex)`);
    add(hex.toUpperCase(), `${label} (HEX)`);
    add(bytes.toString("base64").replace(/=+$/, ""), `${label} (base64)`);
    add(bytes.toString("base64url"), `${label} (base64url)`);
  }
  const raw = typeof value === "string" ? value.trim() : Buffer.from(value).toString("hex");
  return [...forms].map(([needle, formLabel]) => ({ label: formLabel, value: raw, needle }));
}

function needleOf(secret: TestSecret): string {
  return secret.needle ?? secret.value;
}

/** Secrets worth searching for: long enough, each needle once (the first label wins). */
export function usableSecrets(secrets: readonly TestSecret[]): {
  usable: TestSecret[];
  tooShort: TestSecret[];
} {
  const byNeedle = new Map<string, TestSecret>();
  const tooShort: TestSecret[] = [];
  for (const secret of secrets) {
    const needle = needleOf(secret);
    if (needle.length < MIN_SECRET_LENGTH) tooShort.push(secret);
    else if (!byNeedle.has(needle)) byNeedle.set(needle, secret);
  }
  return { usable: [...byNeedle.values()], tooShort };
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** Every setup token logged as the value of `setup_token` anywhere in the run's logs. */
export function allowedSetupTokens(files: readonly LogFile[]): Set<string> {
  const allowed = new Set<string>();
  for (const file of files) {
    if (file.kind !== "log") continue;
    for (const match of file.text.matchAll(SETUP_TOKEN_FIELD)) if (match[1]) allowed.add(match[1]);
  }
  return allowed;
}

export function scanLogs(files: readonly LogFile[], secrets: readonly TestSecret[]): ScanResult {
  const { usable } = usableSecrets(secrets);
  const setupTokens = allowedSetupTokens(files);
  const leaks: Leak[] = [];
  let lines = 0;
  for (const file of files) {
    const fileLines = splitLines(file.text);
    lines += fileLines.length;
    // Most files hold no secret at all: search the whole text first, then find the lines.
    const present = usable.filter((s) => file.text.includes(needleOf(s)));
    const mayHoldToken = file.kind === "log" && /sg[lro]_/.test(file.text);
    const mayHoldIdentity = /AGE-SECRET-KEY-1/i.test(file.text);
    if (present.length === 0 && !mayHoldToken && !mayHoldIdentity) continue;
    fileLines.forEach((line, index) => {
      const reported = new Set<string>();
      const report = (leaked: string, label: string) => {
        if (reported.has(leaked)) return;
        reported.add(leaked);
        leaks.push({ file: file.name, line: index + 1, label, preview: leaked.slice(0, 6) });
      };
      for (const secret of present) {
        const needle = needleOf(secret);
        if (!line.includes(needle)) continue;
        // A command's result is where sigil hands out the tokens it mints.
        if (file.kind === "output" && RUNTIME_TOKEN_EXACT.test(secret.value)) continue;
        report(needle, secret.label);
      }
      if (mayHoldToken) {
        for (const match of line.matchAll(RUNTIME_TOKEN)) {
          const token = match[0];
          if (token.startsWith("sgl_") && setupTokens.has(token)) continue;
          report(token, TOKEN_LABEL[token.slice(0, 3)] ?? "runtime token");
        }
      }
      if (mayHoldIdentity) {
        for (const match of line.matchAll(AGE_IDENTITY)) report(match[0], "age identity");
      }
    });
  }
  return {
    files: files.length,
    lines,
    secrets: usable.length,
    setupTokens: setupTokens.size,
    leaks,
  };
}

/** The run directory's file names say what a file holds: `*.stdout.log` is a command's result. */
export function logKindOf(fileName: string): LogKind {
  return fileName.endsWith(".stdout.log") ? "output" : "log";
}

export function formatLeak(leak: Leak): string {
  return `${leak.file}:${leak.line}: ${leak.label} (${leak.preview}…)`;
}
