/**
 * Facts about a request that the server wrapper knows and handlers need, without handing the
 * whole server or context to a service: an id for logs, the client address (for CIDR-bound
 * tokens), and the deadline signal (aborted when the request times out).
 */
export interface RequestMeta {
  readonly id: string;
  readonly clientIp: string | undefined;
  readonly deadline: AbortSignal;
}

const metas = new WeakMap<Request, RequestMeta>();

export function attachRequestMeta(request: Request, meta: RequestMeta): void {
  metas.set(request, meta);
}

const NO_DEADLINE = new AbortController().signal;

/** Requests built in-process (tests calling `app.handle`) have no wrapper meta: a neutral one. */
export function requestMeta(request: Request): RequestMeta {
  return metas.get(request) ?? { id: "local", clientIp: undefined, deadline: NO_DEADLINE };
}
