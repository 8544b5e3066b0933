// A deliberately dumb HTTP/1.1 client over node:net, for requests fetch refuses to send or
// rewrites on the way: `..` segments, NUL and invalid UTF-8 bytes in the target and headers, a
// Content-Length that lies, bodies sent in slow pieces. One connection per request.
import { connect, type Socket } from "node:net";

export type Bytes = string | Uint8Array;

export interface RawRequest {
  readonly method: string;
  /** The request-target exactly as sent (a string is sent as latin1, one byte per char code). */
  readonly target: Bytes;
  /** Header lines exactly as sent, in order; Host and Connection are added unless present. */
  readonly headers?: readonly (readonly [string, Bytes])[];
  readonly body?: Bytes;
  /**
   * How the body is framed: `length` adds a true Content-Length (the default when there is a
   * body), `chunked` sends it as chunks of `chunkBytes`, `as-is` adds nothing (the test's own
   * headers say what they say, truthfully or not).
   */
  readonly framing?: "length" | "chunked" | "as-is";
  readonly chunkBytes?: number;
}

export interface RawResponse {
  /** 0 when the server closed the connection without a complete answer. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** How the exchange ended: a full answer, or the server closing / resetting the connection. */
  readonly ending: "answered" | "closed";
}

const CRLF = "\r\n";

const toBuffer = (value: Bytes): Buffer =>
  typeof value === "string" ? Buffer.from(value, "latin1") : Buffer.from(value);

/** Encodes a body as HTTP/1.1 chunks, ending with the zero-length chunk. */
export function chunked(body: Uint8Array, chunkBytes: number): Buffer {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < body.length; offset += chunkBytes) {
    const piece = body.subarray(offset, offset + chunkBytes);
    parts.push(
      Buffer.from(`${piece.length.toString(16)}${CRLF}`),
      Buffer.from(piece),
      toBuffer(CRLF),
    );
  }
  parts.push(Buffer.from(`0${CRLF}${CRLF}`));
  return Buffer.concat(parts);
}

/** The request head (request line and headers, ending with the blank line) and the body bytes. */
export function encodeRequest(port: number, request: RawRequest): { head: Buffer; body: Buffer } {
  const body = request.body === undefined ? Buffer.alloc(0) : toBuffer(request.body);
  const headers = [...(request.headers ?? [])];
  const has = (name: string) => headers.some(([n]) => n.toLowerCase() === name);
  if (!has("host")) headers.unshift(["Host", `127.0.0.1:${port}`]);
  if (!has("connection")) headers.push(["Connection", "close"]);
  const framing = request.framing ?? (request.body === undefined ? "as-is" : "length");
  if (framing === "length") headers.push(["Content-Length", String(body.length)]);
  if (framing === "chunked") headers.push(["Transfer-Encoding", "chunked"]);
  const lines: Buffer[] = [toBuffer(`${request.method} `), toBuffer(request.target)];
  lines.push(toBuffer(` HTTP/1.1${CRLF}`));
  for (const [name, value] of headers)
    lines.push(toBuffer(`${name}: `), toBuffer(value), toBuffer(CRLF));
  lines.push(toBuffer(CRLF));
  return {
    head: Buffer.concat(lines),
    body: framing === "chunked" ? chunked(body, request.chunkBytes ?? 64 * 1024) : body,
  };
}

/** Parses what the server sent; `complete` is false until a whole response has arrived. */
export function parseResponse(raw: Buffer): { complete: boolean; response: RawResponse } {
  const split = raw.indexOf("\r\n\r\n");
  const empty = { status: 0, headers: {}, body: "", ending: "closed" as const };
  if (split < 0) return { complete: false, response: empty };
  const [statusLine = "", ...lines] = raw.subarray(0, split).toString("latin1").split(CRLF);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(statusLine.split(" ")[1]);
  const rest = raw.subarray(split + 4);
  let body: Buffer | undefined;
  if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    if (rest.length >= length) body = rest.subarray(0, length);
  } else if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    body = dechunk(rest);
  }
  return {
    complete: body !== undefined,
    response: { status, headers, body: (body ?? rest).toString("utf8"), ending: "answered" },
  };
}

/** The body of a complete chunked message, or undefined while chunks are still missing. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf(CRLF, offset);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.subarray(offset, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (data.length < start + size + 2) return undefined;
    parts.push(data.subarray(start, start + size));
    offset = start + size + 2;
  }
}

export interface SendOptions {
  /** Give up (and fail) after this long without a complete answer or a close. */
  timeoutMs?: number;
  /**
   * Writes the body in `pieces` slices with `pauseMs` between them (slow-loris). Stops writing
   * as soon as the server answers or closes.
   */
  trickle?: { pieces: number; pauseMs: number };
  /** Writes the head in `pieces` slices too, pausing `pauseMs` between them. */
  trickleHead?: { pieces: number; pauseMs: number };
}

/** Sends one request on a fresh connection and waits for the answer, or for the server to close. */
export function sendRaw(
  port: number,
  request: RawRequest,
  options: SendOptions = {},
): Promise<RawResponse> {
  const { head, body } = encodeRequest(port, request);
  return sendBytes(port, head, body, options);
}

/**
 * Sends bytes exactly as given (a request line or headers no encoder would write) on a fresh
 * connection, and waits for one answer or for the server to close.
 */
export function sendBytes(
  port: number,
  head: Buffer,
  body: Buffer = Buffer.alloc(0),
  options: SendOptions = {},
): Promise<RawResponse> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise<RawResponse>((resolve, reject) => {
    const received: Buffer[] = [];
    let finished = false;
    const socket: Socket = connect({ host: "127.0.0.1", port });
    const finish = (error?: Error) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) return reject(error);
      const { complete, response } = parseResponse(Buffer.concat(received));
      resolve(complete ? response : { ...response, ending: "closed" });
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer and no close within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk);
      if (parseResponse(Buffer.concat(received)).complete) finish();
    });
    // A reset after an early answer (413 while the body was still being sent) is an ending too.
    socket.on("error", () => finish());
    socket.on("close", () => finish());
    socket.on("connect", () => {
      void (async () => {
        await writeSlowly(socket, head, options.trickleHead, () => finished);
        await writeSlowly(socket, body, options.trickle, () => finished);
      })().catch(() => finish());
    });
  });
}

async function writeSlowly(
  socket: Socket,
  data: Buffer,
  trickle: { pieces: number; pauseMs: number } | undefined,
  stopped: () => boolean,
): Promise<void> {
  if (data.length === 0) return;
  const pieces = trickle ? Math.min(trickle.pieces, data.length) : 1;
  const size = Math.ceil(data.length / pieces);
  for (let offset = 0; offset < data.length; offset += size) {
    if (stopped()) return;
    if (trickle && offset > 0) await Bun.sleep(trickle.pauseMs);
    if (stopped()) return;
    if (!socket.write(data.subarray(offset, offset + size))) {
      // A destroyed socket never drains: its close has already settled the request.
      await new Promise<void>((done) => {
        const settle = () => {
          socket.off("drain", settle);
          socket.off("close", settle);
          done();
        };
        socket.on("drain", settle);
        socket.on("close", settle);
      });
    }
  }
}
