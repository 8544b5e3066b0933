import { SigilError } from "../errors";

/**
 * Reads a JSON request body with a hard size limit. The limit is checked against the
 * declared length first and again while streaming, so a chunked or lying client cannot push
 * more than `limitBytes` into memory. Parse errors never echo the body: it may hold secrets.
 */
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

export async function readJsonBody(request: Request, limitBytes: number): Promise<unknown> {
  const bytes = await readBodyBytes(request, limitBytes);
  if (bytes.length === 0) {
    // A DELETE that names its target in the path may carry a JSON content type and no body.
    if (!METHODS_WITH_BODY.has(request.method)) return undefined;
    throw new SigilError("invalid_request", "request body is empty; expected JSON");
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new SigilError("invalid_utf8", "request body is not valid UTF-8");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SigilError("malformed_json", "request body is not valid JSON");
  }
}

export async function readBodyBytes(request: Request, limitBytes: number): Promise<Uint8Array> {
  const tooLarge = () =>
    new SigilError("payload_too_large", `request body exceeds the limit of ${limitBytes} bytes`);
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limitBytes) throw tooLarge();
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limitBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
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
