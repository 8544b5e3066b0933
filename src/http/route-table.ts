import type { Route } from "./route";

interface Compiled {
  readonly route: Route;
  /** Literal segments, and null where a parameter stands. */
  readonly segments: readonly (string | null)[];
}

/**
 * Finds the route that serves a request, for what is decided before the handler: the sealed
 * gate, the deadline and the body limit. Elysia still does the routing proper; this table only
 * has to agree with it on which declaration a request belongs to. A request's route is looked
 * up once and remembered.
 */
export class RouteTable {
  readonly #routes: Compiled[];
  readonly #found = new WeakMap<Request, Route | null>();

  constructor(routes: readonly Route[]) {
    this.#routes = routes.map((route) => ({
      route,
      segments: route.path
        .split("/")
        .slice(1)
        .map((segment) => (segment.startsWith(":") ? null : segment)),
    }));
    for (const route of routes) {
      if (route.direct && !/\/:[^/]+$/.test(route.path)) {
        throw new Error(`direct route ${route.path} must end in its one parameter`);
      }
    }
  }

  find(request: Request): Route | undefined {
    const known = this.#found.get(request);
    if (known !== undefined) return known ?? undefined;
    const path = pathOf(request.url);
    const segments = path.split("/").slice(1);
    const match = this.#routes.find(
      (candidate) =>
        candidate.route.method === request.method &&
        candidate.segments.length === segments.length &&
        candidate.segments.every((literal, i) => literal === null || literal === segments[i]),
    );
    this.#found.set(request, match?.route ?? null);
    return match?.route;
  }

  /**
   * The one parameter of a direct route, as it stands in the path, or undefined when it must be
   * percent-decoded first (Elysia serves those).
   */
  directParam(route: Route, request: Request): Record<string, string> | undefined {
    const path = pathOf(request.url);
    const name = route.path.slice(route.path.lastIndexOf(":") + 1);
    const value = path.slice(path.lastIndexOf("/") + 1);
    if (value === "" || value.includes("%")) return undefined;
    return { [name]: value };
  }
}

/** The path of Bun's absolute request URL, without its query. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  return url.slice(start, query < 0 ? url.length : query);
}
