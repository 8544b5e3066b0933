import { SigilError } from "../errors";
import { duplicateKey } from "../wire/duplicate-keys";

/**
 * Reads a JSON request body with a hard size limit. The limit is checked against the
 * declared length first and again while streaming, so a chunked or lying client cannot push
 * more than `limitBytes` into memory (the HTTP parser never hands over more than the declared
 * length). Parse errors never echo the body: it may hold secrets.
 */
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);
/** One decoder for every body: a call without `stream` keeps no state between calls. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

export function readJsonBody(
  request: Request,
  limitBytes: number,
  /** The route takes no body (POST /reload, sent as `curl -X POST`): an empty one is none. */
  emptyAllowed = false,
): Promise<unknown> {
  // One promise from the bytes to the JSON, and none per step: this is every signing request.
  return withBodyBytes(
    request,
    limitBytes,
    (bytes) => parseJsonBody(request, bytes, emptyAllowed),
    bodyEnded,
  );
}

/** The body's bytes within the limit, handed to `then` (or the failure to `failed`). */
function withBodyBytes<T>(
  request: Request,
  limitBytes: number,
  then: (bytes: Uint8Array) => T,
  failed?: (error: unknown) => never,
): Promise<T> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limitBytes) {
    return Promise.reject(tooLarge(limitBytes));
  }
  if (isOneShot(request, declared)) {
    return request.bytes().then((bytes) => {
      if (bytes.length > limitBytes) throw tooLarge(limitBytes);
      return then(bytes);
    }, failed);
  }
  return readStreamedBody(request, limitBytes).then(then, failed);
}

function bodyEnded(error: unknown): never {
  if (error instanceof SigilError) throw error;
  // The client closed the connection (or the stream failed) before the whole body arrived.
  throw new SigilError("invalid_request", "the request body ended before it was complete");
}

/**
 * Over HTTP a declared length is exactly what the parser hands over (bytes past it are the next
 * request), so the native one-shot read is bounded, and cheaper than a stream reader: this is
 * every signing request. The length check after it covers a Request built in-process. Chunked
 * bodies stream.
 */
function isOneShot(request: Request, declared: string | null): declared is string {
  return declared !== null && /^\d+$/.test(declared) && !request.headers.has("transfer-encoding");
}

function parseJsonBody(request: Request, bytes: Uint8Array, emptyAllowed: boolean): unknown {
  if (bytes.length === 0) {
    // A DELETE that names its target in the path may carry a JSON content type and no body.
    if (emptyAllowed || !METHODS_WITH_BODY.has(request.method)) return undefined;
    throw new SigilError("invalid_request", "request body is empty; expected JSON");
  }
  requireJsonContentType(request.headers.get("content-type"));
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new SigilError("invalid_utf8", "request body is not valid UTF-8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SigilError("malformed_json", "request body is not valid JSON");
  }
  const duplicate = duplicateKey(text, parsed);
  if (duplicate !== undefined) {
    throw new SigilError(
      "invalid_request",
      `request body has the key ${JSON.stringify(duplicate.slice(0, 120))} twice; send each key once`,
    );
  }
  return parsed;
}

/**
 * A body must say it is JSON. Browsers send text/plain, form and multipart bodies, or none, to
 * any origin without a CORS preflight; refusing them keeps a web page the operator visits from
 * signing, importing keys or changing policies through a signer on the local network.
 */
export function requireJsonContentType(contentType: string | null): void {
  const mediaType = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const json =
    mediaType === "application/json" ||
    (mediaType.startsWith("application/") && mediaType.endsWith("+json"));
  if (json) return;
  const got = mediaType === "" ? "none" : JSON.stringify(mediaType.slice(0, 60));
  throw new SigilError(
    "unsupported_media_type",
    `request body must be JSON with Content-Type: application/json (got ${got})`,
  );
}

export function readBodyBytes(request: Request, limitBytes: number): Promise<Uint8Array> {
  return withBodyBytes(request, limitBytes, (bytes) => bytes);
}

function tooLarge(limitBytes: number): SigilError {
  return new SigilError(
    "payload_too_large",
    `request body exceeds the limit of ${limitBytes} bytes`,
  );
}

async function readStreamedBody(request: Request, limitBytes: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limitBytes) {
      await discardRest(reader, limitBytes);
      throw tooLarge(limitBytes);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Reads and throws away what a client is still sending after its body went over the limit, up to
 * `budgetBytes` more, then cancels. A connection closed with unread request bytes is reset, and
 * the reset can destroy the 413 before the client reads it; a body up to twice the limit is
 * therefore read to its end (into nothing) and the client gets its answer. Anything larger is cut.
 */
async function discardRest(
  reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> },
  budgetBytes: number,
): Promise<void> {
  let discarded = 0;
  try {
    while (discarded <= budgetBytes) {
      const { done, value } = await reader.read();
      if (done) return;
      discarded += value?.length ?? 0;
    }
  } catch {
    return; // The client went away: nothing left to read.
  }
  await reader.cancel().catch(() => {});
}
