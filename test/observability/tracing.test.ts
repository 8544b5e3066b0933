import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
// The OTLP exporter's own protobuf reader: the wire format is decoded by code we did not write.
import { ProtobufReader } from "@opentelemetry/otlp-transformer/build/src/common/protobuf/protobuf-reader";
import type { RunningSigner } from "../../src/app/signer";
import { createOtlpTracer } from "../../src/observability/otlp";
import { createTracer, NOOP_TRACER, type OtlpLoader } from "../../src/observability/tracing";
import { JobLimiter } from "../../src/signing/limiter";
import { TempDir } from "../support/cli";
import { cbCall, commitBoostYaml, MODULES } from "../support/commit-boost";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

// --- A real OTLP/gRPC receiver --------------------------------------------------------------

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** SpanKind of trace/v1/trace.proto: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** service.name of the resource the span was exported under. */
  serviceName: string | undefined;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** Field numbers from opentelemetry/proto/{collector/trace,trace,resource,common}/v1/*.proto. */
function messages(bytes: Uint8Array, field: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  const reader = new ProtobufReader(bytes);
  while (!reader.isAtEnd()) {
    const tag = reader.readTag();
    if (tag.fieldNumber === field && tag.wireType === 2) out.push(reader.readBytes());
    else reader.skip(tag.wireType);
  }
  return out;
}

function keyValues(bytes: Uint8Array, field: number): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of messages(bytes, field)) {
    let key = "";
    let value: string | number | boolean = "";
    const reader = new ProtobufReader(kv);
    while (!reader.isAtEnd()) {
      const tag = reader.readTag();
      if (tag.fieldNumber === 1) key = reader.readString();
      else if (tag.fieldNumber === 2) {
        // AnyValue: 1 string_value, 2 bool_value, 3 int_value.
        const any = new ProtobufReader(reader.readBytes());
        while (!any.isAtEnd()) {
          const inner = any.readTag();
          if (inner.fieldNumber === 1) value = any.readString();
          else if (inner.fieldNumber === 2) value = any.readVarint() === 1;
          else if (inner.fieldNumber === 3) value = any.readVarint();
          else any.skip(inner.wireType);
        }
      } else reader.skip(tag.wireType);
    }
    out[key] = value;
  }
  return out;
}

function decodeSpan(bytes: Uint8Array, serviceName: string | undefined): ReceivedSpan {
  const span: ReceivedSpan = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    name: "",
    kind: 0,
    attributes: keyValues(bytes, 9),
    serviceName,
  };
  const reader = new ProtobufReader(bytes);
  while (!reader.isAtEnd()) {
    const tag = reader.readTag();
    if (tag.fieldNumber === 1) span.traceId = hex(reader.readBytes());
    else if (tag.fieldNumber === 2) span.spanId = hex(reader.readBytes());
    else if (tag.fieldNumber === 4) span.parentSpanId = hex(reader.readBytes());
    else if (tag.fieldNumber === 5) span.name = reader.readString();
    else if (tag.fieldNumber === 6) span.kind = reader.readVarint();
    else reader.skip(tag.wireType);
  }
  return span;
}

/** ExportTraceServiceRequest → resource_spans(1) → {resource(1), scope_spans(2) → spans(2)}. */
function decodeExport(request: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of messages(request, 1)) {
    const [resource] = messages(resourceSpans, 1);
    const service = resource ? keyValues(resource, 1)["service.name"] : undefined;
    for (const scopeSpans of messages(resourceSpans, 2))
      for (const span of messages(scopeSpans, 2))
        spans.push(decodeSpan(span, typeof service === "string" ? service : undefined));
  }
  return spans;
}

const SPAN_KIND_INTERNAL = 1;
const SPAN_KIND_SERVER = 2;

const raw = (buffer: Buffer) => buffer;
const received: ReceivedSpan[] = [];
const receiver = new grpc.Server();
receiver.addService(
  {
    Export: {
      path: "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: raw,
      responseDeserialize: raw,
    },
  },
  {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      received.push(...decodeExport(call.request));
      // An empty ExportTraceServiceResponse: no partial_success.
      callback(null, Buffer.alloc(0));
    },
  },
);
let endpoint = "";

// --- A signer with tracing on ---------------------------------------------------------------

const dir = new TempDir();
const [K0 = ""] = INTEROP_KEYS;
const TOKEN = "tracing-test-token-0123456789";

async function startTracedSigner(): Promise<RunningSigner> {
  const keys = join(dir.path, "keys");
  mkdirSync(keys, { recursive: true });
  copyFileSync("examples/keys/interop-0.yaml", join(keys, "interop-0.yaml"));
  const started = await startInProcessSigner(dir, "tracing", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${keys}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `opentelemetry: {enabled: true, endpoint: "${endpoint}", service_name: sigil-test}`,
      "static_auth:",
      `  policies: [{name: vc, rules: [{effect: allow, scopes: [sign], keys: ["${K0}"]}]}]`,
      `  tokens: [{secret: ${TOKEN}, policies: [vc]}]`,
    ],
    logLevel: "warn",
  });
  return started.signer;
}

beforeAll(async () => {
  const port = await new Promise<number>((done, fail) =>
    receiver.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? fail(error) : done(bound),
    ),
  );
  endpoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await new Promise<void>((done) => receiver.tryShutdown(() => done()));
  dir.remove();
});

describe("tracing over OTLP/gRPC", () => {
  test("a sign request exports sign with prepare, slashing_check and bls_sign as children", async () => {
    const signer = await startTracedSigner();
    const { body } = attestationRequest(10, 11, 1);
    let stopped = false;
    try {
      const response = await fetch(`${signer.http.url}/api/v1/eth2/sign/${K0}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      // Graceful stop flushes the batch: no waiting for the exporter's schedule.
      await signer.stop();
      stopped = true;
    } finally {
      if (!stopped) await signer.stop();
    }

    const byName = (name: string) => received.filter((span) => span.name === name);
    const [sign] = byName("sign");
    expect(byName("sign")).toHaveLength(1);
    if (!sign) throw new Error("no sign span");
    expect(sign.parentSpanId).toBe("");
    expect(sign.kind).toBe(SPAN_KIND_SERVER);
    expect(sign.serviceName).toBe("sigil-test");
    expect(sign.attributes["sigil.operation"]).toBe("ATTESTATION");
    expect(sign.attributes["sigil.pubkey"]).toBe(`${K0.slice(0, 10)}…${K0.slice(-4)}`);
    expect(sign.attributes["sigil.outcome"]).toBe("signed");
    expect(sign.attributes["http.response.status_code"]).toBe(200);
    for (const name of ["prepare", "slashing_check", "bls_sign"]) {
      const spans = byName(name);
      expect(spans).toHaveLength(1);
      expect(spans[0]?.traceId).toBe(sign.traceId);
      expect(spans[0]?.parentSpanId).toBe(sign.spanId);
      expect(spans[0]?.serviceName).toBe("sigil-test");
      expect(spans[0]?.kind).toBe(SPAN_KIND_INTERNAL);
    }
    // Nothing secret or whole: no token, no full public key, no signing root in any attribute.
    const everything = JSON.stringify(received);
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(K0.slice(2));
  });

  test("a Commit-Boost request is a server span under the caller's traceparent", async () => {
    const keys = join(dir.path, "cb-keys");
    mkdirSync(keys, { recursive: true });
    copyFileSync("examples/keys/interop-0.yaml", join(keys, "interop-0.yaml"));
    const started = await startInProcessSigner(dir, "tracing-cb", {
      yaml: [
        "network: hoodi",
        `key_sources: {filesystem: {paths: ["${keys}"]}}`,
        "antislashing: {backend: noop}",
        `opentelemetry: {enabled: true, endpoint: "${endpoint}", service_name: sigil-test}`,
        commitBoostYaml(`{backend: sqlite, path: "${join(dir.path, "cb.sqlite")}"}`),
      ],
      logLevel: "warn",
    });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    let stopped = false;
    try {
      const response = await cbCall(
        started.signer.commitBoostUrl ?? "",
        "/signer/v1/request_signature/bls",
        { pubkey: K0, object_root: `0x${"11".repeat(32)}`, nonce: 1 },
        { headers: { traceparent: `00-${traceId}-${parent}-01` } },
      );
      expect(response.status).toBe(200);
      await started.signer.stop();
      stopped = true;
    } finally {
      if (!stopped) await started.signer.stop();
    }
    const spans = received.filter((span) => span.name === "commit_boost request_signature_bls");
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ traceId, parentSpanId: parent, kind: SPAN_KIND_SERVER });
    expect(spans[0]?.attributes).toMatchObject({
      "commit_boost.module": MODULES.alpha.id,
      "commit_boost.outcome": "ok",
    });
    expect(JSON.stringify(received)).not.toContain(MODULES.alpha.secret);
  });

  test("an incoming traceparent makes the sign span its child; a malformed one is ignored", async () => {
    received.length = 0;
    const signer = await startTracedSigner();
    const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const sign = (target: number, headers: Record<string, string>) =>
      fetch(`${signer.http.url}/api/v1/eth2/sign/${K0}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${TOKEN}`,
          ...headers,
        },
        body: JSON.stringify(attestationRequest(target - 1, target, 2).body),
      });
    try {
      expect(
        (
          await sign(21, {
            traceparent: `00-${callerTrace}-${callerSpan}-01`,
            tracestate: "vc=lodestar",
          })
        ).status,
      ).toBe(200);
      expect((await sign(22, { traceparent: `00-${callerTrace}-zz-01` })).status).toBe(200);
    } finally {
      await signer.stop();
    }
    const signs = received.filter((span) => span.name === "sign");
    expect(signs).toHaveLength(2);
    const [child, fresh] = signs;
    expect(child?.traceId).toBe(callerTrace);
    expect(child?.parentSpanId).toBe(callerSpan);
    expect(child?.kind).toBe(SPAN_KIND_SERVER);
    // The children of the sign span stay in the caller's trace.
    const checks = received.filter((span) => span.name === "slashing_check");
    expect(checks.map((span) => span.traceId)).toContain(callerTrace);
    expect(fresh?.traceId).not.toBe(callerTrace);
    expect(fresh?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh?.parentSpanId).toBe("");
    expect(fresh?.kind).toBe(SPAN_KIND_SERVER);
  });

  test("a job that waited in the limiter queue still nests under its own request", async () => {
    received.length = 0;
    const tracer = createOtlpTracer({ endpoint, serviceName: "sigil-test" });
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 10 });
    let release = () => {};
    const gate = new Promise<void>((done) => {
      release = done;
    });
    const request = (name: string, wait: boolean) =>
      tracer.span(name, {}, () =>
        limiter.run(
          tracer.bind(async () => {
            if (wait) await gate;
            await tracer.span(`${name}.child`, {}, async () => {});
          }),
        ),
      );
    const first = request("first", true);
    const second = request("second", false);
    expect(limiter.queued).toBe(1);
    release();
    await Promise.all([first, second]);
    await tracer.shutdown();

    const span = (name: string) => received.find((s) => s.name === name);
    expect(span("first.child")?.parentSpanId).toBe(span("first")?.spanId ?? "missing");
    expect(span("second.child")?.parentSpanId).toBe(span("second")?.spanId ?? "missing");
  });
});

describe("tracing disabled", () => {
  test("is the no-op tracer and never loads the OTLP module", async () => {
    let loads = 0;
    const load: OtlpLoader = () => {
      loads++;
      return import("../../src/observability/otlp");
    };
    const tracer = await createTracer(
      { enabled: false, endpoint: "http://127.0.0.1:1", service_name: "x" },
      load,
    );
    expect(tracer).toBe(NOOP_TRACER);
    expect(loads).toBe(0);
    expect(await tracer.span("sign", {}, async () => 42)).toBe(42);
  });

  test("no static import chain from the entry point reaches OpenTelemetry", async () => {
    // Follows import statements (not dynamic imports, not `import type`) through src/.
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    const seen = new Set<string>();
    const packages = new Set<string>();
    const pending = [resolve("src/main.ts")];
    for (let file = pending.pop(); file; file = pending.pop()) {
      if (seen.has(file) || !file.endsWith(".ts")) continue;
      seen.add(file);
      for (const entry of transpiler.scanImports(await Bun.file(file).text())) {
        if (entry.kind !== "import-statement") continue;
        if (!entry.path.startsWith(".")) packages.add(entry.path);
        else pending.push(Bun.resolveSync(entry.path, dirname(file)));
      }
    }
    expect(seen.size).toBeGreaterThan(30);
    expect(seen.has(resolve("src/observability/tracing.ts"))).toBe(true);
    expect(seen.has(resolve("src/observability/otlp.ts"))).toBe(false);
    expect([...packages].filter((name) => name.startsWith("@opentelemetry"))).toEqual([]);
  });
});
