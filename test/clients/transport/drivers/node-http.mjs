// Transport driver: Node's `http` module with a keep-alive Agent, run under `node` (Lodestar runs
// on Node). Speaks the line protocol of protocol.mjs.
import http from "node:http";
import { failure, serve } from "./protocol.mjs";

const TIMEOUT_MS = 30_000;
const agent = new http.Agent({ keepAlive: true });

function send(base, request, close) {
  return new Promise((resolve) => {
    const headers = { ...request.headers };
    if (close) headers.connection = "close";
    if (request.body !== undefined) headers["content-length"] = Buffer.byteLength(request.body);
    const outgoing = http.request(
      new URL(request.path, base),
      { method: request.method, headers, agent, timeout: TIMEOUT_MS },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("error", (error) => resolve(failure(error)));
        response.on("end", () => {
          if (!response.complete) {
            resolve(failure(new Error("the response ended before its body was complete")));
            return;
          }
          resolve({
            status: response.statusCode,
            body: Buffer.concat(chunks).toString("utf8"),
            connection: response.headers.connection ?? null,
            keepAlive: response.headers["keep-alive"] ?? null,
            requestId: response.headers["x-request-id"] ?? null,
            error: null,
          });
        });
      },
    );
    outgoing.on("timeout", () => outgoing.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    outgoing.on("error", (error) => resolve(failure(error)));
    outgoing.end(request.body);
  });
}

await serve({
  version: () => `node ${process.version} (http.Agent keepAlive)`,
  send,
  close: () => agent.destroy(),
});
