import { describe, expect, test } from "bun:test";
import { errorOf } from "../../test/support/errors";
import { readBodyBytes, readJsonBody } from "./body";

const URL_ = "http://sigil.test/body";

/** A JSON POST, as clients send it; `headers` may replace the Content-Type. */
function post(body: RequestInit["body"], headers: Record<string, string> = {}): Request {
  return new Request(URL_, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });
}

/**
 * A body delivered in chunks with no Content-Length, like a chunked upload. A zero high-water
 * mark means `pull` runs only when someone reads, so tests can tell whether the body was read.
 */
function streamed(chunks: Uint8Array[], onPull?: () => void): ReadableStream<Uint8Array> {
  let index = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        onPull?.();
        const chunk = chunks[index++];
        if (chunk === undefined) controller.close();
        else controller.enqueue(chunk);
      },
    },
    { highWaterMark: 0 },
  );
}

const bytes = (n: number, fill = 0x61) => new Uint8Array(n).fill(fill);

describe("readJsonBody", () => {
  test("parses a valid JSON body", async () => {
    const body = { type: "BLOCK_V2", nested: { list: [1, 2, 3] }, text: "héllo ✓" };
    expect(await readJsonBody(post(JSON.stringify(body)), 1024)).toEqual(body);
  });

  test("parses JSON scalars", async () => {
    expect(await readJsonBody(post("42"), 1024)).toBe(42);
    expect(await readJsonBody(post("null"), 1024)).toBeNull();
  });

  test("an empty DELETE body is no body at all", async () => {
    expect(
      await readJsonBody(new Request(URL_, { method: "DELETE", body: "" }), 1024),
    ).toBeUndefined();
  });

  test("an empty body is invalid_request", async () => {
    const err = await errorOf(readJsonBody(post(""), 1024));
    expect(err.code).toBe("invalid_request");
    const none = await errorOf(readJsonBody(new Request(URL_, { method: "POST" }), 1024));
    expect(none.code).toBe("invalid_request");
  });

  test("malformed JSON is malformed_json and the message never echoes the body", async () => {
    const body = '{"password": "supersecret", ';
    const err = await errorOf(readJsonBody(post(body), 1024));
    expect(err.code).toBe("malformed_json");
    expect(err.message).not.toContain("supersecret");
    expect(err.message).not.toContain("password");
    expect(err.cause).toBeUndefined();
  });

  test("invalid UTF-8 is invalid_utf8, even when the bytes would otherwise parse", async () => {
    // `"` 0xff `"`: a JSON string whose content is not UTF-8.
    const err = await errorOf(readJsonBody(post(new Uint8Array([0x22, 0xff, 0x22])), 1024));
    expect(err.code).toBe("invalid_utf8");
    // A truncated multi-byte sequence (first two bytes of "✓").
    const truncated = await errorOf(
      readJsonBody(post(new Uint8Array([0x22, 0xe2, 0x9c, 0x22])), 1024),
    );
    expect(truncated.code).toBe("invalid_utf8");
  });

  test("invalid UTF-8 message does not echo the body", async () => {
    const body = new Uint8Array([...new TextEncoder().encode('"supersecret'), 0xc0, 0x22]);
    const err = await errorOf(readJsonBody(post(body), 1024));
    expect(err.code).toBe("invalid_utf8");
    expect(err.message).not.toContain("supersecret");
  });

  test("a body of exactly the limit is accepted; one byte more is payload_too_large", async () => {
    const limit = 64;
    const exact = `"${"a".repeat(limit - 2)}"`;
    expect(new TextEncoder().encode(exact).length).toBe(limit);
    expect(await readJsonBody(post(exact), limit)).toBe("a".repeat(limit - 2));

    const over = `"${"a".repeat(limit - 1)}"`;
    const err = await errorOf(readJsonBody(post(over), limit));
    expect(err.code).toBe("payload_too_large");
    expect(err.message).toContain(String(limit));
  });

  test("malformed JSON over the limit is payload_too_large, not malformed_json", async () => {
    const err = await errorOf(readJsonBody(post("{".repeat(100)), 10));
    expect(err.code).toBe("payload_too_large");
  });
});

describe("Content-Type", () => {
  const body = JSON.stringify({ type: "ATTESTATION" });

  test("application/json, with parameters or in upper case, and +json types are read", async () => {
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "Application/JSON",
      "application/merge-patch+json",
    ]) {
      expect(await readJsonBody(post(body, { "content-type": type }), 1024)).toEqual({
        type: "ATTESTATION",
      });
    }
  });

  test("a body that is not declared JSON is unsupported_media_type, even when it parses", async () => {
    for (const type of [
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "text/json",
      "application/jsonp",
      "",
    ]) {
      const err = await errorOf(readJsonBody(post(body, { "content-type": type }), 1024));
      expect(err.code).toBe("unsupported_media_type");
      expect(err.message).toContain("application/json");
    }
    // No Content-Type at all: what a browser sends for a Blob or ArrayBuffer without a type.
    const untyped = new Request(URL_, { method: "POST", body: new TextEncoder().encode(body) });
    expect(untyped.headers.get("content-type")).toBeNull();
    expect((await errorOf(readJsonBody(untyped, 1024))).code).toBe("unsupported_media_type");
  });

  test("the refusal names a long media type only in part", async () => {
    const type = `application/${"x".repeat(5000)}`;
    const err = await errorOf(readJsonBody(post(body, { "content-type": type }), 1024));
    expect(err.code).toBe("unsupported_media_type");
    expect(err.message.length).toBeLessThan(200);
  });

  test("an empty body needs no Content-Type: a DELETE without one is no body at all", async () => {
    const request = new Request(URL_, { method: "DELETE", body: "", headers: {} });
    expect(await readJsonBody(request, 1024)).toBeUndefined();
  });

  test("an over-limit body is payload_too_large whatever its Content-Type", async () => {
    const err = await errorOf(
      readJsonBody(post("x".repeat(100), { "content-type": "text/plain" }), 10),
    );
    expect(err.code).toBe("payload_too_large");
  });
});

describe("readBodyBytes", () => {
  test("returns the exact bytes", async () => {
    const data = new Uint8Array([0, 1, 2, 250, 255]);
    expect(await readBodyBytes(post(data), 5)).toEqual(data);
  });

  test("a request without a body yields no bytes", async () => {
    const got = await readBodyBytes(new Request(URL_), 10);
    expect(got).toBeInstanceOf(Uint8Array);
    expect(got.length).toBe(0);
  });

  test("exact limit accepted, limit + 1 rejected", async () => {
    expect((await readBodyBytes(post(bytes(100)), 100)).length).toBe(100);
    expect((await errorOf(readBodyBytes(post(bytes(101)), 100))).code).toBe("payload_too_large");
  });

  test("a declared Content-Length over the limit is rejected without reading the body", async () => {
    let pulls = 0;
    const request = new Request(URL_, {
      method: "POST",
      body: streamed([bytes(10)], () => pulls++),
      headers: { "content-length": "1000" },
    });
    const err = await errorOf(readBodyBytes(request, 100));
    expect(err.code).toBe("payload_too_large");
    expect(pulls).toBe(0);
    expect(request.bodyUsed).toBe(false);
  });

  test("a declared Content-Length equal to the limit is read", async () => {
    const request = post(bytes(100), { "content-length": "100" });
    expect((await readBodyBytes(request, 100)).length).toBe(100);
  });

  test("a streamed body without Content-Length is assembled from its chunks", async () => {
    const request = post(streamed([bytes(3, 1), bytes(4, 2), bytes(3, 3)]));
    expect(request.headers.get("content-length")).toBeNull();
    expect(await readBodyBytes(request, 10)).toEqual(
      new Uint8Array([1, 1, 1, 2, 2, 2, 2, 3, 3, 3]),
    );
  });

  test("a streamed body far over the limit is cut: the stream is cancelled, not read to its end", async () => {
    let pulls = 0;
    let cancelled = false;
    let index = 0;
    const chunks = Array.from({ length: 100 }, () => bytes(40));
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        const chunk = chunks[index++];
        if (chunk === undefined) controller.close();
        else controller.enqueue(chunk);
      },
      cancel() {
        cancelled = true;
      },
    });
    const request = post(stream);
    expect(request.headers.get("content-length")).toBeNull();
    const err = await errorOf(readBodyBytes(request, 100));
    expect(err.code).toBe("payload_too_large");
    // 3 chunks of 40 bytes cross the 100-byte limit; at most 100 more are discarded, then it stops.
    expect(pulls).toBeLessThan(10);
    expect(cancelled).toBe(true);
  });

  test("a streamed body up to twice the limit is read to its end before the refusal", async () => {
    // Read into nothing: a connection closed with unread bytes is reset, and the reset can
    // destroy the 413 before the client reads it.
    let cancelled = false;
    let pulls = 0;
    const chunks = Array.from({ length: 5 }, () => bytes(40));
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        const chunk = chunks.shift();
        if (chunk === undefined) controller.close();
        else controller.enqueue(chunk);
      },
      cancel() {
        cancelled = true;
      },
    });
    const err = await errorOf(readBodyBytes(post(stream), 100));
    expect(err.code).toBe("payload_too_large");
    expect(pulls).toBe(6); // five chunks and the end of the stream
    expect(cancelled).toBe(false);
  });

  test("a lying Content-Length (smaller than the body) cannot push past the limit", async () => {
    const request = new Request(URL_, {
      method: "POST",
      body: streamed([bytes(60), bytes(60)]),
      headers: { "content-length": "10" },
    });
    expect((await errorOf(readBodyBytes(request, 100))).code).toBe("payload_too_large");
  });

  test("readJsonBody rejects a streamed body over the limit", async () => {
    const request = post(streamed([bytes(50, 0x20), bytes(50, 0x20), bytes(50, 0x20)]));
    expect((await errorOf(readJsonBody(request, 120))).code).toBe("payload_too_large");
  });
});
