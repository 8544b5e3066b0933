import { PolicyRequest, PolicyUpdateRequest, TokenRequest } from "../auth/schema";
import { deleteRequest, importRequest, keygenRequest } from "../keys/import-request";
import { InitRequest, RegisterRequest, RotationRequest, ShareRequest } from "../seal/requests";
import {
  type Access,
  bindRoute,
  type Declaration,
  type FeatureLimits,
  type Handler,
  type LimitGroup,
  type Route,
  SERVICE_READS_BODY,
} from "./route";

/**
 * Every route the signing listener can serve, one line each: method, path, who may call it,
 * whether a sealed signer serves it, whose limits apply, and its body. The handlers live in
 * `routes/*.ts` under the same names; a route whose feature is off has no handler and does not
 * exist (404). `test/http/route-declarations.test.ts` pins this table entry by entry.
 */
const PUBLIC: Access = { kind: "public" };
const MANAGEMENT: Access = { kind: "management" };
const OPERATOR: Access = { kind: "operator" };
const scope = (name: Extract<Access, { kind: "scope" }>["scope"]): Access => ({
  kind: "scope",
  scope: name,
});
const perKey = (name: Extract<Access, { kind: "per_key" }>["scope"]): Access => ({
  kind: "per_key",
  scope: name,
});
const keys = (name: Extract<Access, { kind: "keys" }>["scope"], list: typeof name): Access => ({
  kind: "keys",
  scope: name,
  list,
});

const SEALED_TOO = { servedWhileSealed: true } as const;
const UNSEALED = { servedWhileSealed: false } as const;
const SERVER = { limits: "server" } as const;

const keystoreImport = (l: FeatureLimits) => importRequest(l.maxItems, l.maxItemsOption);
const keystoreDelete = (l: FeatureLimits) => deleteRequest(l.maxItems, l.maxItemsOption);
const keygen = (l: FeatureLimits) => keygenRequest(l.maxItems, l.maxItemsOption);

export const PATHS = {
  sign: "/api/v1/eth2/sign",
  keystores: "/eth/v1/keystores",
  signerKeys: "/api/v1/signer/keys",
  sys: "/api/v1/signer/sys",
  policies: "/api/v1/signer/auth/policies",
  tokens: "/api/v1/signer/auth/tokens",
  reload: "/reload",
} as const;
const { sys, policies, tokens } = PATHS;

// biome-ignore format: one line per route, read as a table
export const ROUTES = {
  // Liveness, readiness and status.
  upcheck: { method: "GET", path: "/upcheck", access: PUBLIC, ...SEALED_TOO, ...SERVER },
  healthcheck: { method: "GET", path: "/healthcheck", access: PUBLIC, ...SEALED_TOO, ...SERVER },
  status: { method: "GET", path: "/api/v1/signer/status", access: scope("signer_status"), ...SEALED_TOO, ...SERVER },

  // Signing (Web3Signer): every request a validator client makes.
  sign: { method: "POST", path: `${PATHS.sign}/:identifier`, access: perKey("sign"), ...UNSEALED, ...SERVER, body: SERVICE_READS_BODY, params: { identifier: "public key" } },
  publicKeys: { method: "GET", path: "/api/v1/eth2/publicKeys", access: perKey("public_keys"), ...UNSEALED, ...SERVER },
  highWatermark: { method: "GET", path: "/api/v1/eth2/highWatermark", access: scope("signer_status"), ...UNSEALED, ...SERVER },

  // Key Manager API (key_sources.key_manager_api).
  listKeystores: { method: "GET", path: PATHS.keystores, access: keys("list_keys", "list_keys"), ...UNSEALED, limits: "key_manager_api" },
  importKeystores: { method: "POST", path: PATHS.keystores, access: keys("import_keystores", "list_keys"), ...UNSEALED, limits: "key_manager_api", body: keystoreImport },
  deleteKeystores: { method: "DELETE", path: PATHS.keystores, access: keys("delete_keys", "list_keys"), ...UNSEALED, limits: "key_manager_api", body: keystoreDelete },

  // Web3Signer's reload.
  reload: { method: "POST", path: PATHS.reload, access: scope("import_keystores"), ...UNSEALED, ...SERVER, bodyless: true },
  reloadStatus: { method: "GET", path: PATHS.reload, access: scope("signer_status"), ...UNSEALED, ...SERVER },

  // The signer's own key routes (generate, import and delete: cloud_kv keygen / writable).
  listSignerKeys: { method: "GET", path: PATHS.signerKeys, access: keys("signer_keys_list", "signer_keys_list"), ...UNSEALED, ...SERVER },
  generateKeys: { method: "POST", path: `${PATHS.signerKeys}/generate`, access: scope("signer_keys_generate"), ...UNSEALED, limits: "cloud_kv_keygen", body: keygen },
  importSignerKeys: { method: "POST", path: PATHS.signerKeys, access: keys("signer_keys_write", "signer_keys_list"), ...UNSEALED, limits: "cloud_kv_writable", body: keystoreImport },
  deleteSignerKeys: { method: "DELETE", path: PATHS.signerKeys, access: keys("signer_keys_delete", "signer_keys_list"), ...UNSEALED, limits: "cloud_kv_writable", body: keystoreDelete },

  // The Auth API (stateful mode): the management token only.
  createPolicy: { method: "POST", path: policies, access: MANAGEMENT, ...UNSEALED, ...SERVER, body: PolicyRequest },
  listPolicies: { method: "GET", path: policies, access: MANAGEMENT, ...UNSEALED, ...SERVER },
  getPolicy: { method: "GET", path: `${policies}/:name`, access: MANAGEMENT, ...UNSEALED, ...SERVER, params: { name: "policy name" } },
  updatePolicy: { method: "PUT", path: `${policies}/:name`, access: MANAGEMENT, ...UNSEALED, ...SERVER, body: PolicyUpdateRequest, params: { name: "policy name" } },
  deletePolicy: { method: "DELETE", path: `${policies}/:name`, access: MANAGEMENT, ...UNSEALED, ...SERVER, params: { name: "policy name" } },
  createToken: { method: "POST", path: tokens, access: MANAGEMENT, ...UNSEALED, ...SERVER, body: TokenRequest },
  listTokens: { method: "GET", path: tokens, access: MANAGEMENT, ...UNSEALED, ...SERVER },
  revokeToken: { method: "DELETE", path: `${tokens}/:accessor`, access: MANAGEMENT, ...UNSEALED, ...SERVER, params: { accessor: "accessor" } },

  // The seal lifecycle (signer_state): how a sealed signer gets unsealed, so served while sealed.
  // Setup and registration tokens travel in the body (they are spent, not presented).
  sealStatus: { method: "GET", path: `${sys}/seal-status`, access: PUBLIC, ...SEALED_TOO, ...SERVER },
  init: { method: "POST", path: `${sys}/init`, access: PUBLIC, ...SEALED_TOO, ...SERVER, body: InitRequest },
  register: { method: "POST", path: `${sys}/register`, access: PUBLIC, ...SEALED_TOO, ...SERVER, body: RegisterRequest },
  share: { method: "GET", path: `${sys}/share`, access: OPERATOR, ...SEALED_TOO, ...SERVER },
  unseal: { method: "POST", path: `${sys}/unseal`, access: OPERATOR, ...SEALED_TOO, ...SERVER, body: ShareRequest },
  generateRoot: { method: "POST", path: `${sys}/generate-root`, access: OPERATOR, ...SEALED_TOO, ...SERVER, body: ShareRequest },
  seal: { method: "POST", path: `${sys}/seal`, access: MANAGEMENT, ...SEALED_TOO, ...SERVER },
  startRotation: { method: "POST", path: `${sys}/rotate-quorum`, access: MANAGEMENT, ...SEALED_TOO, ...SERVER, body: RotationRequest },
  cancelRotation: { method: "DELETE", path: `${sys}/rotate-quorum`, access: MANAGEMENT, ...SEALED_TOO, ...SERVER },
  rotationShare: { method: "POST", path: `${sys}/rotate-quorum/share`, access: OPERATOR, ...SEALED_TOO, ...SERVER, body: ShareRequest },
} as const satisfies Record<string, Declaration>;

export type RouteName = keyof typeof ROUTES;

/** A feature's handlers, by route name. */
export type Handlers<K extends RouteName = RouteName> = {
  readonly [N in K]: Handler<(typeof ROUTES)[N]>;
};

/** The limits of each feature that has its own (absent: the feature is off). */
export type Limits = Partial<Record<Exclude<LimitGroup, "server">, FeatureLimits>>;

/**
 * The routes that have a handler, in table order, each bound to its feature's limits. A handler
 * of a feature whose limits are missing is a wiring mistake, found at start-up.
 */
export function bindRoutes(handlers: Partial<Handlers>, limits: Limits): Route[] {
  const bound: Route[] = [];
  for (const name of Object.keys(ROUTES) as RouteName[]) {
    const handler = handlers[name];
    if (!handler) continue;
    const declaration: Declaration = ROUTES[name];
    const group = declaration.limits;
    const own = group === "server" ? undefined : limits[group];
    if (group !== "server" && !own) throw new Error(`route ${name}: no ${group} limits`);
    bound.push(bindRoute(name, declaration, handler as Handler<Declaration>, own));
  }
  return bound;
}

/**
 * A route's path with its parameters filled in (percent-encoded): how a client of the API (the
 * operator CLI) names a route, so no path is written twice.
 */
export function routePath(name: RouteName, params: Readonly<Record<string, string>> = {}): string {
  return ROUTES[name].path.replace(/:([a-z_]+)/gi, (_, param: string) => {
    const value = params[param];
    if (value === undefined) throw new Error(`routePath(${name}): no value for :${param}`);
    return encodeURIComponent(value);
  });
}
