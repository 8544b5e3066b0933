// Transport driver: Node's global fetch (undici), run under `node`: Lodestar's external signer
// client calls fetch. Speaks the line protocol of protocol.mjs.
import { failure, serve } from "./protocol.mjs";

const TIMEOUT_MS = 30_000;

async function send(base, request, close) {
  try {
    const headers = { ...request.headers };
    // undici accepts the close option (and only close or keep-alive) and then retires the socket.
    if (close) headers.connection = "close";
    const response = await fetch(new URL(request.path, base), {
      method: request.method,
      headers,
      body: request.body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const body = await response.text();
    return {
      status: response.status,
      body,
      connection: response.headers.get("connection"),
      keepAlive: response.headers.get("keep-alive"),
      requestId: response.headers.get("x-request-id"),
      error: null,
    };
  } catch (error) {
    return failure(error);
  }
}

await serve({
  version: () => `node ${process.version}, undici ${process.versions.undici} (global fetch)`,
  send,
});
