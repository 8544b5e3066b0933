/**
 * How sigil reaches PostgreSQL: a database URL (`antislashing.url`, `signer_state.url`, the
 * `--db-url` of `sigil migrate web3signer`) is parsed here, and every pooled connection is opened
 * by `openSocket` (handed to postgres.js as its `socket` factory), so that TLS and address
 * selection follow sigil's rules rather than the driver's defaults.
 *
 * TLS is ON unless the URL says `sslmode=disable`. The modes mean what they mean in libpq, with
 * one deliberate difference: without any `sslmode` the connection REQUIRES TLS (libpq would
 * "prefer" it and silently fall back to plaintext).
 *
 * | sslmode          | encrypted | server certificate checked                              |
 * |------------------|-----------|---------------------------------------------------------|
 * | disable          | no        | -                                                       |
 * | allow, prefer    | if offered| no; plaintext when the server has no TLS (warned)       |
 * | (none), require  | yes       | no (encrypts against passive eavesdroppers only); with  |
 * |                  |           | `sslrootcert` it is checked like verify-ca, as in libpq |
 * | verify-ca        | yes       | chain to `sslrootcert` (default: system CAs)            |
 * | verify-full      | yes       | chain as verify-ca AND the host name of the URL         |
 *
 * Only verify-full authenticates the server, and a man in the middle of the slashing database
 * could answer "new" to a slashable message: use it (with `sslrootcert=/path/ca.pem`, or
 * `sslrootcert=system`, which like libpq implies verify-full) whenever the network is not
 * trusted. `sslcert` / `sslkey` name a client certificate and its key (PEM files).
 *
 * `force_ipv4` resolves the host name with family 4 on every new connection (so a fail-over
 * that moves the name is followed) and connects to that address; certificate checks and SNI
 * still use the host name from the URL.
 *
 * A server that does not offer TLS when TLS is required fails the connection with an error
 * that says so; a connection is never downgraded to plaintext behind the operator's back.
 */
import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { type ConnectionOptions, checkServerIdentity, connect as tlsConnect } from "node:tls";
import postgres from "postgres";

export type SslMode = "disable" | "prefer" | "require" | "verify-ca" | "verify-full";

export interface TlsPolicy {
  readonly mode: SslMode;
  /** PEM; undefined = the runtime's default (system) certificate authorities. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface PostgresTarget {
  /** The URL to hand to postgres.js: the original minus the TLS parameters handled here. */
  readonly driverUrl: string;
  /** The host name as written in the URL (brackets of an IPv6 literal removed). */
  readonly host: string;
  readonly port: number;
  readonly tls: TlsPolicy;
  /** For logs: scheme, host, port and database, never the credentials. */
  readonly display: string;
  /** The setting or flag the URL came from, for error messages (default antislashing.url). */
  readonly setting: string;
}

export class PostgresConfigError extends Error {
  override readonly name = "PostgresConfigError";
}

const SSL_PARAMETERS = new Set(["sslmode", "sslrootcert", "sslcert", "sslkey"]);

function readPem(path: string, what: string, setting: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new PostgresConfigError(`${setting}: cannot read ${what} "${path}": ${reason}`);
  }
}

/**
 * Parses and checks a PostgreSQL URL (`antislashing.url` unless `setting` names another source,
 * which error messages then name); throws PostgresConfigError, never echoing a password.
 */
export function parsePostgresUrl(url: string, setting = "antislashing.url"): PostgresTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PostgresConfigError(
      `${setting} is not a URL (expected postgres://user:password@host:port/database)`,
    );
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new PostgresConfigError(
      `${setting} must start with postgres:// or postgresql://, not ${parsed.protocol}//`,
    );
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") {
    throw new PostgresConfigError(
      `${setting} has no host (Unix-domain sockets are not supported; use host:port)`,
    );
  }
  if (host.includes(",") || parsed.searchParams.has("host")) {
    throw new PostgresConfigError(`${setting} must name exactly one host`);
  }
  let port = 5432;
  if (parsed.port !== "") {
    port = Number(parsed.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new PostgresConfigError(`${setting} has an invalid port "${parsed.port}"`);
    }
  }
  const params = parsed.searchParams;
  for (const name of params.keys()) {
    if (name.startsWith("ssl") && !SSL_PARAMETERS.has(name)) {
      throw new PostgresConfigError(
        `${setting}: "${name}" is not supported (supported: ${[...SSL_PARAMETERS].join(", ")})`,
      );
    }
  }
  const rootCert = params.get("sslrootcert") ?? undefined;
  const modeText = params.get("sslmode") ?? (rootCert === "system" ? "verify-full" : "require");
  let mode: SslMode;
  switch (modeText) {
    case "disable":
    case "prefer":
    case "require":
    case "verify-ca":
    case "verify-full":
      mode = modeText;
      break;
    case "allow":
      mode = "prefer";
      break;
    default:
      throw new PostgresConfigError(
        `${setting}: unknown sslmode "${modeText}" (expected disable, allow, prefer, require, verify-ca or verify-full)`,
      );
  }
  if (rootCert === "system" && mode !== "verify-full" && mode !== "disable") {
    throw new PostgresConfigError(
      `${setting}: sslrootcert=system requires sslmode=verify-full, not ${modeText}`,
    );
  }
  let ca: string | undefined;
  if (rootCert !== undefined && rootCert !== "system")
    ca = readPem(rootCert, "sslrootcert", setting);
  // libpq: with a root certificate, "require" verifies the chain like verify-ca.
  if (mode === "require" && ca !== undefined) mode = "verify-ca";
  const certPath = params.get("sslcert");
  const keyPath = params.get("sslkey");
  if ((certPath === null) !== (keyPath === null)) {
    throw new PostgresConfigError(`${setting}: sslcert and sslkey must be given together`);
  }
  const tls: TlsPolicy = {
    mode,
    ...(ca === undefined ? {} : { ca }),
    ...(certPath === null ? {} : { cert: readPem(certPath, "sslcert", setting) }),
    ...(keyPath === null ? {} : { key: readPem(keyPath, "sslkey", setting) }),
  };
  for (const name of SSL_PARAMETERS) params.delete(name);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  const display = `${parsed.protocol}//${parsed.host}/${database} (sslmode ${mode})`;
  return { driverUrl: parsed.toString(), host, port, tls, display, setting };
}

/** libpq's SSLRequest: length 8, code 1234.5679. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

export interface SocketOptions {
  readonly forceIpv4: boolean;
  readonly timeoutMs: number;
  /** Called when sslmode=prefer/allow falls back to plaintext. */
  readonly onPlaintextFallback?: () => void;
}

function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`${what}: timed out after ${ms} ms`);
      controller.abort(error);
      reject(error);
    }, ms);
  });
  return Promise.race([work(controller.signal), deadline]).finally(() => clearTimeout(timer));
}

function connectTcp(host: string, port: number, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    const fail = (error: unknown) => {
      socket.destroy();
      reject(error);
    };
    signal.addEventListener("abort", () => fail(signal.reason), { once: true });
    socket.once("error", fail);
    socket.once("connect", () => {
      socket.off("error", fail);
      resolve(socket);
    });
  });
}

function readSslAnswer(socket: Socket, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      cleanup();
      socket.pause();
      // The server sends exactly one byte and then waits for us.
      if (chunk.length !== 1) {
        reject(new Error("unexpected answer to the TLS request (is this a PostgreSQL server?)"));
        return;
      }
      resolve(chunk[0] ?? 0);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      reject(new Error("the server closed the connection during TLS negotiation"));
    };
    signal.addEventListener("abort", () => {
      cleanup();
      reject(signal.reason);
    });
    socket.on("data", onData);
    socket.once("error", onError);
    socket.once("close", onClose);
    socket.write(SSL_REQUEST);
  });
}

function startTls(socket: Socket, target: PostgresTarget, signal: AbortSignal): Promise<Socket> {
  const { tls, host } = target;
  const verify = tls.mode === "verify-ca" || tls.mode === "verify-full";
  const options: ConnectionOptions = {
    socket,
    rejectUnauthorized: verify,
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
    // verify-ca checks the chain only; verify-full also the URL's host name (not the address
    // we connected to, which differs under force_ipv4).
    checkServerIdentity: (_servername, cert) =>
      tls.mode === "verify-full" ? checkServerIdentity(host, cert) : undefined,
  };
  return new Promise((resolve, reject) => {
    const secure = tlsConnect(options);
    const fail = (error: unknown) => {
      secure.destroy();
      socket.destroy();
      reject(error);
    };
    signal.addEventListener("abort", () => fail(signal.reason), { once: true });
    secure.once("error", fail);
    secure.once("secureConnect", () => {
      secure.off("error", fail);
      resolve(secure);
    });
  });
}

async function ipv4Of(host: string, where: string): Promise<string> {
  const literal = isIP(host);
  if (literal === 4) return host;
  let reason = "it is an IPv6 address";
  if (literal === 0) {
    try {
      const { address, family } = await lookup(host, { family: 4 });
      if (family === 4 && isIP(address) === 4) return address;
      reason = `the resolver answered ${address}`;
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error);
    }
  }
  throw new Error(`${where}: no IPv4 address (force_ipv4): ${reason}`);
}

/** Opens one connection to the server: address selection, then TLS negotiation per policy. */
export async function openSocket(target: PostgresTarget, options: SocketOptions): Promise<Socket> {
  const where = `PostgreSQL ${target.host}:${target.port}`;
  return withDeadline(
    async (signal) => {
      let address = target.host;
      if (options.forceIpv4) address = await ipv4Of(target.host, where);
      // The lookup cannot be cancelled: do not connect after the deadline passed meanwhile.
      signal.throwIfAborted();
      const socket = await connectTcp(address, target.port, signal);
      if (target.tls.mode === "disable") return socket;
      let answer: number;
      try {
        answer = await readSslAnswer(socket, signal);
      } catch (error) {
        socket.destroy();
        throw error;
      }
      if (answer === 0x4e /* N */) {
        if (target.tls.mode === "prefer") {
          options.onPlaintextFallback?.();
          socket.resume();
          return socket;
        }
        socket.destroy();
        throw new Error(
          `${where} does not accept TLS connections, and sigil requires TLS (sslmode ${target.tls.mode}); ` +
            `enable TLS on the server, or add ?sslmode=disable to ${target.setting} to connect in plaintext`,
        );
      }
      if (answer !== 0x53 /* S */) {
        socket.destroy();
        throw new Error(`${where}: unexpected answer to the TLS request`);
      }
      return startTls(socket, target, signal);
    },
    options.timeoutMs,
    `connecting to ${where}`,
  );
}

/**
 * What the socket factory returns when it could not connect. postgres.js leaks a pool slot when
 * its factory rejects, so a failure is reported the way a failed TCP connect is: by a stream that
 * errors and closes. (It swallows the start-up message postgres.js writes first, so that the
 * error seen is ours, not "socket is closed".)
 */
export function failedSocket(error: unknown): Duplex {
  const stream = new Duplex({
    read() {},
    write(_chunk, _encoding, done) {
      done();
    },
  });
  setTimeout(() => stream.destroy(error instanceof Error ? error : new Error(String(error))), 0);
  return stream;
}

export interface ClientOptions {
  /** Connections kept by this pool. */
  readonly poolSize: number;
  readonly forceIpv4: boolean;
  /** Connect (DNS, TCP, TLS) time limit per connection; default 10 s. */
  readonly connectTimeoutMs?: number;
  /** Session settings sent at connect, `application_name` among them. */
  readonly connection: Readonly<Record<string, string>>;
  /** Called (at most once per pool) when sslmode=prefer/allow falls back to plaintext. */
  readonly onPlaintextFallback?: () => void;
}

/** Longest wait between reconnection attempts; the driver's own default grows to 20 s. */
const MAX_RECONNECT_DELAY_SECONDS = 1;

/**
 * Seconds before the next reconnection attempt: the driver's exponential curve with jitter, capped
 * at one second so that a signer recovers within about a second of its database coming back
 * (signing waits on it), instead of up to 20 s later.
 */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  return (0.5 + random() / 2) * Math.min(3 ** retries / 100, MAX_RECONNECT_DELAY_SECONDS);
}

/**
 * A postgres.js pool whose every connection is opened by `openSocket`: sigil's TLS and address
 * rules, never the driver's. Connecting is lazy: the first query opens the first connection.
 */
export function createPostgresClient(target: PostgresTarget, options: ClientOptions): postgres.Sql {
  let warnedFallback = false;
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  const socketOptions: SocketOptions = {
    forceIpv4: options.forceIpv4,
    timeoutMs,
    onPlaintextFallback: () => {
      if (warnedFallback) return;
      warnedFallback = true;
      options.onPlaintextFallback?.();
    },
  };
  // `socket` is a postgres.js option its type declarations lack (hence no inline literal).
  const driverOptions = {
    max: options.poolSize,
    // TLS is negotiated by openSocket; the driver only ever sees a ready stream.
    ssl: false,
    socket: () => openSocket(target, socketOptions).catch(failedSocket),
    onnotice: () => {},
    connection: options.connection,
    idle_timeout: 300,
    connect_timeout: Math.ceil(timeoutMs / 1000),
    backoff: reconnectDelaySeconds,
  };
  return postgres(target.driverUrl, driverOptions);
}
