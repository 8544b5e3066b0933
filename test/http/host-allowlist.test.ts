import { afterAll, describe, expect, test } from "bun:test";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { TempDir } from "../support/cli";
import { startInProcessSigner } from "../support/signer";

/**
 * server.host_allowlist against a real signer: the Host a DNS-rebinding page would send (its own
 * domain) is refused with 403 JSON, the names an operator lists are served, the listen address
 * always is, and "*" serves anything.
 */

const dir = new TempDir();
afterAll(() => dir.remove());

/** GET with exactly this Host header (fetch would send the URL's host). */
function getWithHost(port: number, path: string, host: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path, headers: { host, connection: "close" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function withSigner(
  name: string,
  allowlist: string | undefined,
  run: (port: number) => Promise<void>,
): Promise<void> {
  const signer = await startInProcessSigner(dir, name, {
    server: `server: {listen_address: 127.0.0.1, listen_port: 0${allowlist ? `, host_allowlist: ${allowlist}` : ""}}`,
    yaml: [`antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`],
    logLevel: "error",
  });
  try {
    await run(signer.port);
  } finally {
    await signer.stop();
  }
}

describe("server.host_allowlist", () => {
  test("default: localhost, 127.0.0.1, ::1 and the listen address; a rebinding name is 403", async () => {
    await withSigner("default", undefined, async (port) => {
      for (const host of [`localhost:${port}`, "LOCALHOST", `127.0.0.1:${port}`, "[::1]:9000"]) {
        expect({ host, status: (await getWithHost(port, "/upcheck", host)).status }).toEqual({
          host,
          status: 200,
        });
      }
      const refused = await getWithHost(port, "/api/v1/eth2/publicKeys", "rebind.attacker.example");
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toEqual({
        code: "host_not_allowed",
        message: 'host "rebind.attacker.example" is not in server.host_allowlist',
      });
    });
  });

  test("a configured list serves its names and the listen address, nothing else", async () => {
    await withSigner("listed", "[signer.internal, 10.0.0.5]", async (port) => {
      expect((await getWithHost(port, "/upcheck", "signer.internal:9000")).status).toBe(200);
      expect((await getWithHost(port, "/upcheck", "10.0.0.5")).status).toBe(200);
      expect((await getWithHost(port, "/upcheck", `127.0.0.1:${port}`)).status).toBe(200);
      expect((await getWithHost(port, "/upcheck", "localhost")).status).toBe(403);
      expect((await getWithHost(port, "/upcheck", "signer.internal.evil.example")).status).toBe(
        403,
      );
    });
  });

  test('"*" serves any valid name; an invalid Host is still 400', async () => {
    await withSigner("any", '["*"]', async (port) => {
      expect((await getWithHost(port, "/upcheck", "anything.example")).status).toBe(200);
      const invalid = await getWithHost(port, "/upcheck", "a b");
      expect(invalid.status).toBe(400);
      expect(JSON.parse(invalid.body).code).toBe("invalid_host");
    });
  });
});
