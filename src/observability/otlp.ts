import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Tracer as ApiTracer,
  type Attributes,
  type Context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { VERSION } from "../version";
import {
  type ActiveSpan,
  errorType,
  type SpanAttributes,
  type TraceCaller,
  type Tracer,
} from "./tracing";

const w3c = new W3CTraceContextPropagator();

/** Loaded only when `opentelemetry.enabled` (see tracing.ts). */
export interface OtlpTracerOptions {
  /** OTLP gRPC endpoint; http:// means plaintext, https:// TLS. */
  endpoint: string;
  serviceName: string;
  /** Upper bound on the final flush at shutdown, so an unreachable collector cannot hold a stop. */
  shutdownTimeoutMs?: number;
}

export function createOtlpTracer(options: OtlpTracerOptions): Tracer {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      "service.name": options.serviceName,
      "service.version": VERSION,
    }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: options.endpoint }) }),
    ],
  });
  return new OtlpTracer(
    provider,
    provider.getTracer("sigil", VERSION),
    options.shutdownTimeoutMs ?? 5000,
  );
}

function attributesOf(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Spans nest through an AsyncLocalStorage of our own rather than the global OpenTelemetry
 * context manager: nothing global is registered, so several signers can share a process.
 */
class OtlpTracer implements Tracer {
  readonly enabled = true;
  readonly #current = new AsyncLocalStorage<Context>();

  constructor(
    private readonly provider: TracerProvider,
    private readonly tracer: ApiTracer,
    private readonly shutdownTimeoutMs: number,
  ) {}

  span<T>(
    name: string,
    attributes: SpanAttributes,
    fn: (span: ActiveSpan) => Promise<T>,
  ): Promise<T> {
    return this.#run(this.#current.getStore() ?? ROOT_CONTEXT, name, {}, attributes, fn);
  }

  serve<T>(
    name: string,
    caller: TraceCaller,
    attributes: SpanAttributes,
    fn: (span: ActiveSpan) => Promise<T>,
  ): Promise<T> {
    const carrier: Record<string, string> = {};
    if (caller.traceparent !== null) carrier.traceparent = caller.traceparent;
    if (caller.tracestate !== null) carrier.tracestate = caller.tracestate;
    // An invalid traceparent is ignored (the propagator's rule): the span starts a new trace.
    const parent = w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
    return this.#run(parent, name, { kind: SpanKind.SERVER }, attributes, fn);
  }

  #run<T>(
    parent: Context,
    name: string,
    options: SpanOptions,
    attributes: SpanAttributes,
    fn: (span: ActiveSpan) => Promise<T>,
  ): Promise<T> {
    const span = this.tracer.startSpan(
      name,
      { ...options, attributes: attributesOf(attributes) },
      parent,
    );
    const active: ActiveSpan = { setAttributes: (more) => span.setAttributes(attributesOf(more)) };
    return this.#current.run(trace.setSpan(parent, span), async () => {
      try {
        return await fn(active);
      } catch (error) {
        const type = errorType(error);
        span.setAttribute("error.type", type);
        span.setStatus({ code: SpanStatusCode.ERROR, message: type });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  annotate(attributes: SpanAttributes): void {
    const context = this.#current.getStore();
    if (context) trace.getSpan(context)?.setAttributes(attributesOf(attributes));
  }

  bind<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    const context = this.#current.getStore();
    if (!context) return fn;
    return (...args) => this.#current.run(context, () => fn(...args));
  }

  async shutdown(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.shutdownTimeoutMs);
    });
    try {
      await Promise.race([this.provider.shutdown().catch(() => {}), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
