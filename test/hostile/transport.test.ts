// Hostile bytes below the routes: Host values and request lines no HTTP library would send, on
// raw sockets to `sigil serve` run as operators run it (a separate process, JSON logs). Every
// answer is JSON, or a bare status line from Bun's HTTP parser for what it cannot parse at all;
// never HTML. The signer keeps signing, and its standard error stays one JSON line per event.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";
import { type RawResponse, sendBytes } from "./raw-http";

const dir = new TempDir();
let sigil: RunningSigil;
let port = 0;
const PUBKEY = INTEROP_KEYS[0] as string;

beforeAll(async () => {
  const config = dir.file(
    "transport.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "metrics: {listen_address: 127.0.0.1, listen_port: 0}",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      "logging: {format: json, level: info}",
      "",
    ].join("\n"),
  );
  sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
  port = Number(new URL(sigil.url).port);
});

afterAll(async () => {
  await sigil?.stop();
  dir.remove();
});

/** What came back: a JSON error, a bare parser status line, an answer, or a close without one. */
type Kind = "json" | "bare" | "ok" | "closed";

function kindOf(response: RawResponse): Kind {
  const type = response.headers["content-type"] ?? "";
  expect(type).not.toContain("html");
  expect(response.body).not.toContain("<");
  if (response.status === 0) return "closed";
  if (response.status < 300) return "ok";
  if (type.startsWith("application/json")) {
    const body = JSON.parse(response.body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["code", "message"]);
    return "json";
  }
  expect(response.body).toBe("");
  expect(response.headers.connection).toBe("close");
  return "bare";
}

const line = (requestLine: string, headers: string) =>
  Buffer.from(`${requestLine}\r\n${headers}\r\n`, "latin1");
const host = (value: string) => `Host: ${value}\r\nConnection: close\r\n`;

/** [what is sent, the request line, the headers, what must come back]. */
const HOST_CASES: [string, string, string, Kind, string?][] = [
  ["HTTP/1.0 without Host", "GET /upcheck HTTP/1.0", "", "json", "invalid_host"],
  ["HTTP/1.1 without Host", "GET /upcheck HTTP/1.1", "Connection: close\r\n", "bare"],
  ["empty Host", "GET /upcheck HTTP/1.1", host(""), "json", "invalid_host"],
  ["Host with a space", "GET /upcheck HTTP/1.1", host("a b"), "json", "invalid_host"],
  ["Host with ?", "GET /upcheck HTTP/1.1", host("x?"), "json", "invalid_host"],
  ["unclosed IPv6 literal", "GET /upcheck HTTP/1.1", host("[::1"), "json", "invalid_host"],
  ["not an IPv6 literal", "GET /upcheck HTTP/1.1", host("[zz]"), "json", "invalid_host"],
  [
    "two Host lines",
    "GET /upcheck HTTP/1.1",
    `${host("localhost")}Host: localhost\r\n`,
    "json",
    "invalid_host",
  ],
  ["userinfo in Host", "GET /upcheck HTTP/1.1", host("user@localhost"), "json", "invalid_host"],
  ["path in Host", "GET /upcheck HTTP/1.1", host("localhost/x"), "json", "invalid_host"],
  ["port out of range", "GET /upcheck HTTP/1.1", host("localhost:99999"), "json", "invalid_host"],
  ["two ports", "GET /upcheck HTTP/1.1", host("localhost:1:2"), "json", "invalid_host"],
  ["latin-1 byte in Host", "GET /upcheck HTTP/1.1", host("h\u00e4st"), "json", "invalid_host"],
  ["NUL in Host", "GET /upcheck HTTP/1.1", host("lo\u0000calhost"), "bare"],
  ["300-character Host", "GET /upcheck HTTP/1.1", host("a".repeat(300)), "json", "invalid_host"],
  ["a name not allowed", "GET /upcheck HTTP/1.1", host("evil.example"), "json", "host_not_allowed"],
  [
    "a name not allowed, signing",
    `POST /api/v1/eth2/sign/${PUBKEY} HTTP/1.1`,
    host("rebind.evil.example"),
    "json",
    "host_not_allowed",
  ],
  ["allowed, any case, with port", "GET /upcheck HTTP/1.1", host("LocalHost:1"), "ok"],
  ["IPv6 loopback", "GET /upcheck HTTP/1.1", host("[0:0::1]:9000"), "ok"],
];

const REQUEST_LINE_CASES: [string, string, Kind, string?][] = [
  ["no version (HTTP/0.9)", "GET /upcheck", "bare"],
  ["HTTP/2.0 on an HTTP/1 port", "GET /upcheck HTTP/2.0", "bare"],
  ["HTTP/1.2", "GET /upcheck HTTP/1.2", "bare"],
  ["two spaces", "GET  /upcheck HTTP/1.1", "bare"],
  ["space in the target", "GET /up check HTTP/1.1", "bare"],
  ["tab separator", "GET\t/upcheck HTTP/1.1", "bare"],
  ["asterisk form", "GET * HTTP/1.1", "bare"],
  ["OPTIONS *", "OPTIONS * HTTP/1.1", "bare"],
  ["authority form", "CONNECT 127.0.0.1:9000 HTTP/1.1", "json", "invalid_request"],
  ["absolute form", "GET http://evil.example/upcheck HTTP/1.1", "ok"],
  ["lower-case method", "get /upcheck HTTP/1.1", "closed"],
  ["unknown method", "BREW /upcheck HTTP/1.1", "closed"],
  ["NUL in the target", "GET /up\u0000check HTTP/1.1", "bare"],
  ["unknown route", "GET /nothing-here HTTP/1.1", "json", "not_found"],
];

async function send(requestLine: string, headers: string): Promise<RawResponse> {
  return await sendBytes(port, line(requestLine, headers), undefined, { timeoutMs: 10_000 });
}

async function signerStillSigns(target: number): Promise<void> {
  const { body, message } = attestationRequest(target - 1, target, 1);
  const response = await fetch(`${sigil.url}/api/v1/eth2/sign/${PUBKEY}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  const { signature } = (await response.json()) as { signature: string };
  expect(
    verifiesAgainstOracle({ pubkey: PUBKEY, signingRoot: message.signingRoot }, signature),
  ).toBe(true);
}

describe("hostile Host headers and request lines", () => {
  for (const [name, requestLine, headers, kind, code] of HOST_CASES) {
    test(name, async () => {
      const response = await send(requestLine, headers);
      expect(kindOf(response)).toBe(kind);
      if (code) expect((JSON.parse(response.body) as { code: string }).code).toBe(code);
    });
  }

  for (const [name, requestLine, kind, code] of REQUEST_LINE_CASES) {
    test(name, async () => {
      const response = await send(requestLine, host("localhost"));
      expect(kindOf(response)).toBe(kind);
      if (code) expect((JSON.parse(response.body) as { code: string }).code).toBe(code);
    });
  }

  test("a TLS ClientHello on the plain port is closed or refused, never answered with HTML", async () => {
    const hello = Buffer.from("16030100a5010000a10303", "hex");
    const response = await sendBytes(port, hello, undefined, { timeoutMs: 10_000 });
    expect(["bare", "closed"]).toContain(kindOf(response));
  });

  test("the signer still signs, and every line it wrote is one JSON object", async () => {
    await signerStillSigns(11);
    const lines = sigil
      .stderrText()
      .split("\n")
      .filter((l) => l.length > 0);
    expect(lines.length).toBeGreaterThan(0);
    for (const text of lines) expect(() => JSON.parse(text)).not.toThrow();
    expect(sigil.stderrText()).not.toContain("    at ");
  });
});
