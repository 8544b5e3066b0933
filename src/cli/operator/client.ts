import { EXIT_FAILURE, EXIT_USAGE, fail } from "../exit";
import { booleanFlag, type FlagValues, secretFlag, stringFlag } from "./flags";
import { readTlsFlags, type TlsFiles, tlsFailureHint } from "./tls";

export const DEFAULT_SIGNER_URL = "http://127.0.0.1:9000";
const REQUEST_TIMEOUT_MS = 30_000;

/** Flags every operator command takes to reach the signer. */
export const connectionArgs = {
  "signer-url": {
    type: "string",
    valueHint: "url",
    description: `Signer base URL (default ${DEFAULT_SIGNER_URL})`,
  },
  "allow-plaintext-signer": {
    type: "boolean",
    description:
      "Allow an http:// URL to a host other than loopback (tokens then cross the network in clear)",
  },
  "ca-cert": {
    type: "string",
    valueHint: "file",
    description: "PEM file of the CA(s) that signed the signer's certificate (https)",
  },
  "client-cert": {
    type: "string",
    valueHint: "file",
    description: "PEM client certificate for mutual TLS (with --client-key)",
  },
  "client-key": {
    type: "string",
    valueHint: "file",
    description: "PEM private key of --client-cert",
  },
} as const;

/** The management token flag, for the commands that need one. */
export const tokenArgs = {
  token: {
    type: "string",
    valueHint: "value|env:VAR",
    description:
      "Management token, or env:VAR to read it from an environment variable (preferred: command lines are visible to other users)",
  },
} as const;

/** The management token flag of a command that always needs it: in its usage line too. */
export const requiredTokenArgs = {
  token: { ...tokenArgs.token, required: true },
} as const;

export const jsonArgs = {
  json: { type: "boolean", description: "Print the server's JSON instead of a table" },
} as const;

/** The URL host names that stay on this machine. URL has already normalised the spelling. */
export function isLoopbackHost(hostname: string): boolean {
  return (
    hostname === "localhost" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) ||
    hostname === "[::1]" ||
    /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname)
  );
}

export type SignerUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * The base URL rules: http or https, no credentials, query or fragment, and plain http only to
 * loopback unless the operator accepts sending tokens in clear.
 */
export function checkSignerUrl(raw: string, allowPlaintext: boolean): SignerUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: `--signer-url: "${raw}" is not a URL like https://host:port` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return { ok: false, reason: `--signer-url: ${url.protocol} is not http: or https:` };
  if (url.username !== "" || url.password !== "")
    return { ok: false, reason: "--signer-url must not carry credentials; use --token" };
  if (url.search !== "" || url.hash !== "")
    return { ok: false, reason: "--signer-url must not have a query or fragment" };
  if (url.protocol === "http:" && !allowPlaintext && !isLoopbackHost(url.hostname)) {
    return {
      ok: false,
      reason: `refusing plain http to ${url.host}: tokens would cross the network in clear; use https:// or pass --allow-plaintext-signer`,
    };
  }
  return { ok: true, url };
}

export interface SignerClientOptions {
  readonly url: URL;
  /** Sent as `Authorization: Bearer` on requests that ask for it. */
  readonly token?: string;
  readonly tls?: TlsFiles;
  readonly timeoutMs?: number;
}

export interface SignerResponse {
  readonly status: number;
  /** Parsed JSON, or undefined for an empty body (204). */
  readonly body: unknown;
}

/** The signer answered with an error status. `code` and `message` come from its `{code, message}` body. */
export class SignerApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "SignerApiError";
  }
}

/** No HTTP answer: refused, unresolvable, TLS failure, timeout. The message names the URL. */
export class SignerUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SignerUnreachableError";
  }
}

export interface RequestOptions {
  readonly body?: unknown;
  /** Send the management token (default true). */
  readonly auth?: boolean;
}

export class SignerClient {
  readonly url: URL;
  readonly #token: string | undefined;
  readonly #tls: TlsFiles | undefined;
  readonly #timeoutMs: number;

  constructor(options: SignerClientOptions) {
    this.url = options.url;
    this.#token = options.token;
    this.#tls = options.tls;
    this.#timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
  }

  /** The base URL as shown in messages. */
  get displayUrl(): string {
    return this.url.href.replace(/\/+$/, "");
  }

  async request(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<SignerResponse> {
    const target = new URL(this.url.href);
    target.pathname = `${this.url.pathname.replace(/\/+$/, "")}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.auth !== false) {
      if (this.#token === undefined) throw new Error("this request needs a management token");
      headers.authorization = `Bearer ${this.#token}`;
    }
    if (options.body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(target, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        // A redirect could carry the token to another host or to plain http: never followed.
        redirect: "manual",
        signal: AbortSignal.timeout(this.#timeoutMs),
        ...(this.#tls ? { tls: { ...this.#tls } } : {}),
        // A proxy from the environment would take a loopback request (and its token) off the host.
        ...(isLoopbackHost(this.url.hostname) ? { proxy: false as const } : {}),
      });
    } catch (error) {
      throw new SignerUnreachableError(this.#describeFailure(error));
    }
    const text = await response.text().catch((error: unknown) => {
      throw new SignerUnreachableError(this.#describeFailure(error));
    });
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get("location");
      throw new SignerApiError(
        response.status,
        "redirect",
        `the signer redirects${location ? ` to ${oneLine(location)}` : ""}; not followed, point --signer-url at the final address`,
      );
    }
    if (!response.ok) throw errorFromBody(response.status, response.statusText, text);
    if (text.trim() === "") return { status: response.status, body: undefined };
    try {
      return { status: response.status, body: JSON.parse(text) };
    } catch {
      throw new SignerApiError(
        response.status,
        "invalid_response",
        `the signer at ${this.displayUrl} answered with a body that is not JSON`,
      );
    }
  }

  #describeFailure(error: unknown): string {
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError")
      return `no answer from the signer at ${this.displayUrl} within ${Math.round(this.#timeoutMs / 1000)} s`;
    const code = (error as { code?: unknown }).code;
    // Bun's advice to the programmer ("pass `verbose: true` … to fetch()") is no help to an operator.
    const message = (error instanceof Error ? error.message : String(error))
      .replace(/\.? *For more information, pass `verbose: true`.*$/s, "")
      .replace(/ fetching "[^"]*"/, "");
    const hint =
      typeof code === "string"
        ? tlsFailureHint(code, {
            https: this.url.protocol === "https:",
            hostname: this.url.hostname,
            tls: this.#tls,
          })
        : undefined;
    const detail =
      code === "ECONNREFUSED" || code === "ConnectionRefused"
        ? "connection refused (is the signer running and listening there?)"
        : typeof code === "string" && !message.includes(code)
          ? `${code}: ${message}`
          : message;
    return `cannot reach the signer at ${this.displayUrl}: ${oneLine(detail)}${hint ? ` (${hint})` : ""}`;
  }
}

function errorFromBody(status: number, statusText: string, text: string): SignerApiError {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === "object" && body !== null) {
      const { code, message } = body as { code?: unknown; message?: unknown };
      if (typeof code === "string" && code !== "")
        return new SignerApiError(
          status,
          code,
          oneLine(typeof message === "string" ? message : ""),
        );
    }
  } catch {
    // Not the signer's error shape (a proxy or another server): fall through.
  }
  const detail = oneLine(text).slice(0, 200) || statusText || "no details";
  return new SignerApiError(status, "http_error", detail);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * A client from the connection flags, or exit 2 naming the bad flag. The bearer is the management
 * token (`true`/"token"), an operator credential ("credential"), or none (`false`).
 */
export function clientFromFlags(
  values: FlagValues,
  withToken: boolean | "token" | "credential",
): SignerClient {
  const check = checkSignerUrl(
    stringFlag(values, "signer-url") ?? DEFAULT_SIGNER_URL,
    booleanFlag(values, "allow-plaintext-signer"),
  );
  if (!check.ok) fail(check.reason, EXIT_USAGE);
  const caFile = stringFlag(values, "ca-cert");
  const certFile = stringFlag(values, "client-cert");
  const keyFile = stringFlag(values, "client-key");
  if ((certFile === undefined) !== (keyFile === undefined))
    fail("--client-cert and --client-key go together", EXIT_USAGE);
  const anyTls = caFile !== undefined || certFile !== undefined;
  if (anyTls && check.url.protocol !== "https:")
    fail("--ca-cert, --client-cert and --client-key need an https:// --signer-url", EXIT_USAGE);
  const tls = anyTls ? readTlsFlags({ ca: caFile, cert: certFile, key: keyFile }) : undefined;
  const tokenFlag = withToken === true ? "token" : withToken;
  const token = tokenFlag ? secretFlag(values, tokenFlag) : undefined;
  return new SignerClient({ url: check.url, token, tls });
}

/** One line on standard error and exit 1: `sigil: <status> <code>: <message>` or the connection failure. */
export function failRequest(error: unknown): never {
  if (error instanceof SignerApiError)
    fail(`${error.status} ${error.code}${error.message ? `: ${error.message}` : ""}`, EXIT_FAILURE);
  if (error instanceof SignerUnreachableError) fail(error.message, EXIT_FAILURE);
  throw error;
}

/** Runs one request, exiting as failRequest does on any failure. */
export async function call(
  client: SignerClient,
  method: string,
  path: string,
  options?: RequestOptions,
): Promise<SignerResponse> {
  try {
    return await client.request(method, path, options);
  } catch (error) {
    failRequest(error);
  }
}
