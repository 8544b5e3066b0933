import type { Method, Route } from "./route";

/**
 * The one matcher: which route a request target names. Every form of a path is decided here,
 * once, and the same way for every route:
 * - one trailing slash is ignored (`/eth/v1/keystores/` is `/eth/v1/keystores`, limits and all);
 * - an empty segment (`//`) names no route;
 * - literal segments compare exactly: no case folding, no percent-decoding (`/ETH/v1/keystores`
 *   and `/eth/v1/%6Beystores` name no route);
 * - a parameter is percent-decoded (invalid encoding is 400 naming the parameter);
 * - dot segments, `\` and absolute-form targets are resolved by Bun's HTTP parser before any of
 *   this (`/a/./b` arrives as `/a/b`), so they name the route of what they resolve to.
 * A path that names routes, none of them for the request's method, is 405 with `Allow`.
 */
export type Match =
  | { readonly kind: "route"; readonly route: Route; readonly params: Record<string, string> }
  | { readonly kind: "bad_param"; readonly route: Route; readonly name: string }
  | { readonly kind: "method_not_allowed"; readonly allow: readonly Method[] }
  | { readonly kind: "not_found" };

interface Pattern {
  /** Literal segments, and null where a parameter stands (after the leading empty one). */
  readonly segments: readonly (string | null)[];
  readonly names: readonly string[];
  readonly byMethod: Map<string, Route>;
}

const NOT_FOUND: Match = { kind: "not_found" };
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class RouteMatcher {
  /** Paths without parameters, looked up whole. */
  readonly #literal = new Map<string, Map<string, Route>>();
  readonly #patterns: Pattern[] = [];

  constructor(routes: readonly Route[]) {
    const patterns = new Map<string, Pattern>();
    for (const route of routes) {
      if (!route.path.startsWith("/") || route.path.includes("//") || /.\/$/.test(route.path))
        throw new Error(`route ${route.name}: ${route.path} is not a path of non-empty segments`);
      const segments = route.path.split("/").slice(1);
      const byMethod = segments.some((s) => s.startsWith(":"))
        ? patternFor(patterns, route.path, segments).byMethod
        : mapFor(this.#literal, route.path);
      if (byMethod.has(route.method))
        throw new Error(`route ${route.name}: ${route.method} ${route.path} is declared twice`);
      byMethod.set(route.method, route);
    }
    this.#patterns = [...patterns.values()];
  }

  /** `target` is the path and query as Bun gives them (always starting with `/`). */
  match(method: string, path: string): Match {
    const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    const literal = this.#literal.get(trimmed);
    const route = literal?.get(method);
    if (route) return { kind: "route", route, params: NO_PARAMS };
    if (trimmed.includes("//")) return NOT_FOUND;
    const segments = trimmed.split("/");
    const allow = new Set<Method>(literal?.keys() as Iterable<Method> | undefined);
    for (const pattern of this.#patterns) {
      if (!fits(pattern, segments)) continue;
      const found = pattern.byMethod.get(method);
      if (found) return withParams(found, pattern, segments);
      for (const other of pattern.byMethod.keys()) allow.add(other as Method);
    }
    return allow.size > 0 ? { kind: "method_not_allowed", allow: [...allow].sort() } : NOT_FOUND;
  }
}

function mapFor(map: Map<string, Map<string, Route>>, path: string): Map<string, Route> {
  let byMethod = map.get(path);
  if (!byMethod) {
    byMethod = new Map();
    map.set(path, byMethod);
  }
  return byMethod;
}

function patternFor(patterns: Map<string, Pattern>, path: string, segments: string[]): Pattern {
  let pattern = patterns.get(path);
  if (!pattern) {
    pattern = {
      segments: segments.map((s) => (s.startsWith(":") ? null : s)),
      names: segments.filter((s) => s.startsWith(":")).map((s) => s.slice(1)),
      byMethod: new Map(),
    };
    patterns.set(path, pattern);
  }
  return pattern;
}

/** `segments` starts with the empty one before the first `/`; patterns leave it out. */
function fits(pattern: Pattern, segments: readonly string[]): boolean {
  const wanted = pattern.segments;
  if (segments.length !== wanted.length + 1) return false;
  for (let i = 0; i < wanted.length; i++) {
    const literal = wanted[i];
    const segment = segments[i + 1] as string;
    if (literal === null ? segment === "" : literal !== segment) return false;
  }
  return true;
}

function withParams(route: Route, pattern: Pattern, segments: readonly string[]): Match {
  const params: Record<string, string> = {};
  let n = 0;
  for (let i = 0; i < pattern.segments.length; i++) {
    if (pattern.segments[i] !== null) continue;
    const name = pattern.names[n++] as string;
    const raw = segments[i + 1] as string;
    if (!raw.includes("%")) {
      params[name] = raw;
      continue;
    }
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      return { kind: "bad_param", route, name };
    }
  }
  return { kind: "route", route, params };
}
