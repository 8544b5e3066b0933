import { isSigilError } from "../errors";

// This module must not import OpenTelemetry: with tracing disabled the SDK is never loaded.
// The OTLP implementation lives in ./otlp and is reached only through a dynamic import.

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** The span a `span()` callback runs in: it can add attributes learnt along the way. */
export interface ActiveSpan {
  setAttributes(attributes: SpanAttributes): void;
}

/** Sigil's own tracing interface; the rest of the code knows nothing of OpenTelemetry. */
export interface Tracer {
  readonly enabled: boolean;
  /**
   * Runs `fn` in a new span, a child of the span current where `span` is called. A thrown error
   * marks the span failed (its error code only, never the message) and is rethrown.
   */
  span<T>(
    name: string,
    attributes: SpanAttributes,
    fn: (span: ActiveSpan) => Promise<T>,
  ): Promise<T>;
  /**
   * The span of a request this process serves (kind SERVER): a child of the caller's span when
   * its W3C `traceparent` header names one (with its `tracestate`), else the root of a trace.
   */
  serve<T>(
    name: string,
    caller: TraceCaller,
    attributes: SpanAttributes,
    fn: (span: ActiveSpan) => Promise<T>,
  ): Promise<T>;
  /** Adds attributes to the current span (none outside a span). */
  annotate(attributes: SpanAttributes): void;
  /** `fn` with the current span captured, for work that a queue starts later from elsewhere. */
  bind<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  /** Exports what is still buffered, then releases the exporter. */
  shutdown(): Promise<void>;
}

/** The W3C Trace Context headers of an incoming request (null when absent). */
export interface TraceCaller {
  readonly traceparent: string | null;
  readonly tracestate: string | null;
}

const NOOP_SPAN: ActiveSpan = { setAttributes() {} };

export const NOOP_TRACER: Tracer = {
  enabled: false,
  span: (_name, _attributes, fn) => fn(NOOP_SPAN),
  serve: (_name, _caller, _attributes, fn) => fn(NOOP_SPAN),
  annotate() {},
  bind: (fn) => fn,
  shutdown: async () => {},
};

export interface TracingOptions {
  enabled: boolean;
  endpoint: string;
  service_name: string;
}

export type OtlpModule = typeof import("./otlp");

/** How the OTLP implementation is loaded; replaceable so a test can see it is never called. */
export type OtlpLoader = () => Promise<OtlpModule>;

const loadOtlp: OtlpLoader = () => import("./otlp");

export async function createTracer(
  options: TracingOptions,
  load: OtlpLoader = loadOtlp,
): Promise<Tracer> {
  if (!options.enabled) return NOOP_TRACER;
  const { createOtlpTracer } = await load();
  return createOtlpTracer({ endpoint: options.endpoint, serviceName: options.service_name });
}

/** What a span records about an error: a SigilError's code, else `internal_error`. */
export function errorType(error: unknown): string {
  return isSigilError(error) ? error.code : "internal_error";
}
