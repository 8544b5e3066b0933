import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { TempDir } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/**
 * The reproduction of the Lodestar outage: Node's http client with a keep-alive agent, sending
 * `Connection: close`, lost every second request ("socket hang up") because the signer closed
 * the connection without saying so. Here the real Node (not Bun's node:http) drives a real
 * signer on every kind of route: signing, upcheck and the Key Manager API.
 */

const dir = new TempDir();
let signer: InProcessSigner;
const PUBKEY = INTEROP_KEYS[0] as string;
const CLIENT = resolve(import.meta.dir, "fixtures/node-pooled-client.mjs");
const REQUESTS = 6;

interface NodeResult {
  status?: number;
  connection?: string | null;
  keepAlive?: string | null;
  reusedSocket?: boolean;
  body?: string;
  error: string | null;
}

beforeAll(async () => {
  const keys = join(dir.path, "keys");
  cpSync(resolve("examples/keys"), keys, { recursive: true });
  signer = await startInProcessSigner(dir, "connection", {
    yaml: [
      "key_sources:",
      `  filesystem: {paths: ["${keys}"]}`,
      "  key_manager_api: {enabled: true}",
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
    ],
    logLevel: "error",
  });
});

afterAll(async () => {
  await signer.stop();
  dir.remove();
});

async function runNode(
  requests: { url: string; method: string; headers: Record<string, string>; body?: string }[],
): Promise<NodeResult[]> {
  const child = Bun.spawn(["node", CLIENT, JSON.stringify(requests)], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill(), 30_000);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (code !== 0) throw new Error(`node exited with ${code}: ${stderr}`);
    return JSON.parse(stdout) as NodeResult[];
  } finally {
    clearTimeout(timer);
    child.kill();
  }
}

let epoch = 0;
const ROUTES = {
  signing: () => {
    const { body, message } = attestationRequest(epoch, epoch + 1, epoch);
    epoch += 2;
    return {
      url: `${signer.url}/api/v1/eth2/sign/${PUBKEY}`,
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
      check: (result: NodeResult) => {
        const { signature } = JSON.parse(result.body ?? "{}") as { signature?: string };
        expect(
          verifiesAgainstOracle(
            { pubkey: PUBKEY, signingRoot: message.signingRoot },
            signature ?? "",
          ),
        ).toBe(true);
      },
    };
  },
  upcheck: () => ({
    url: `${signer.url}/upcheck`,
    method: "GET",
    headers: {},
    check: (result: NodeResult) => expect(result.body).toBe("OK"),
  }),
  "Key Manager": () => ({
    url: `${signer.url}/eth/v1/keystores`,
    method: "GET",
    headers: { accept: "application/json" },
    check: (result: NodeResult) =>
      expect((JSON.parse(result.body ?? "{}") as { data?: unknown[] }).data).toHaveLength(4),
  }),
};

describe("Node's pooled http client", () => {
  for (const [route, make] of Object.entries(ROUTES)) {
    test(`${route}: every request with Connection: close is answered, each on its own connection`, async () => {
      const requests = Array.from({ length: REQUESTS }, make);
      const results = await runNode(
        requests.map(({ check: _, ...r }) => ({
          ...r,
          headers: { ...r.headers, connection: "close" },
        })),
      );
      expect(results.map((r) => r.error)).toEqual(requests.map(() => null));
      results.forEach((result, i) => {
        expect(result.status).toBe(200);
        expect(result.connection).toBe("close");
        expect(result.reusedSocket).toBe(false);
        requests[i]?.check(result);
      });
    });

    test(`${route}: without close, one connection carries every request`, async () => {
      const requests = Array.from({ length: REQUESTS }, make);
      const results = await runNode(requests.map(({ check: _, ...r }) => r));
      expect(results.map((r) => r.error)).toEqual(requests.map(() => null));
      results.forEach((result, i) => {
        expect(result.status).toBe(200);
        expect(result.connection).toBeNull();
        expect(result.keepAlive).toBe("timeout=120");
        expect(result.reusedSocket).toBe(i > 0);
        requests[i]?.check(result);
      });
    });
  }
});

describe("a graceful stop", () => {
  test("closes a connection the client opened but has not used yet", async () => {
    // Bun's listener defers accepting a connection until its first bytes; a stop within that
    // second used to drop it unseen, and the client's first request after a restart was reset.
    const stopped = await startInProcessSigner(dir, "defer", {
      yaml: [`antislashing: {backend: sqlite, path: "${join(dir.path, "defer.sqlite")}"}`],
      logLevel: "error",
    });
    const socket = connect(stopped.port, "127.0.0.1");
    const closed = new Promise<string>((resolve) => {
      socket.on("end", () => resolve("closed by the signer"));
      socket.on("error", (error) => resolve(`error ${error.message}`));
    });
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      await Bun.sleep(200);
      await stopped.stop();
      const told = await Promise.race([closed, Bun.sleep(5000).then(() => "never told")]);
      expect(told).toBe("closed by the signer");
    } finally {
      socket.destroy();
    }
  });
});
