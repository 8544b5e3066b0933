// A real signer started in this process (startSigner, the composition root), as the HTTP tests
// start one: a YAML file with loopback listeners on free ports plus the test's own lines, the
// configuration loaded as `sigil serve -c` loads it, and a JSON logger writing through captureSink.
import { type RunningSigner, startSigner } from "../../src/app/signer";
import { loadConfig } from "../../src/config/load";
import type { TempDir } from "./cli";
import { testLogger } from "./log-capture";

export interface InProcessSigner {
  readonly signer: RunningSigner;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  /** The configuration file written for it. */
  readonly configPath: string;
  /** Every JSON log line, in order (also kept in .test-logs/ for the secret scan). */
  readonly logs: string[];
  stop(): Promise<void>;
}

export interface InProcessSignerOptions {
  /** Extra YAML lines (top-level keys other than server and metrics, or a whole `server:` line). */
  yaml: readonly string[];
  /** Replaces the default `server:` line (listen on 127.0.0.1, a free port). */
  server?: string;
  /** Environment the signer resolves `env:` secrets from; nothing from this process by default. */
  env?: Record<string, string>;
  /** An EnvFilter log directive; default "info". */
  logLevel?: string;
  /** `--init-slashing-protection`; default true (every test starts on a new database). */
  initSlashingProtection?: boolean;
}

export async function startInProcessSigner(
  dir: TempDir,
  name: string,
  options: InProcessSignerOptions,
): Promise<InProcessSigner> {
  const configPath = dir.file(
    `${name}.yaml`,
    [
      options.server ?? "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "metrics: {listen_address: 127.0.0.1, listen_port: 0}",
      ...options.yaml,
      "",
    ].join("\n"),
  );
  const env = options.env ?? {};
  const loaded = loadConfig({ argv: ["-c", configPath], env });
  if (!loaded.ok) throw new Error(`test configuration invalid: ${JSON.stringify(loaded.problems)}`);
  const logs: string[] = [];
  const logger = testLogger(options.logLevel ?? "info", logs);
  // Each test's database is new: created as `serve --init-slashing-protection` creates it.
  const signer = await startSigner(loaded.config, logger, env, {
    initSlashingProtection: options.initSlashingProtection ?? true,
  });
  const port = signer.http.port;
  return {
    signer,
    url: `http://127.0.0.1:${port}`,
    port,
    configPath,
    logs,
    async stop() {
      await signer.stop();
    },
  };
}
