// Who may call what, pinned. Every route of the table, written out here by hand: method, path,
// access, whether a sealed signer serves it, whose limits apply and how its body is taken. A
// change to any of them (a route made public, a scope widened, a limit group swapped) fails the
// line that names the route, and has to be made here too, on purpose, in review.
// test/http/route-table.test.ts checks that the running signer enforces what the table declares.
import { describe, expect, test } from "bun:test";
import type { Access, Declaration } from "../../src/http/route";
import { ROUTES } from "../../src/http/table";

type Body = "none" | "bodyless" | "schema" | "schema from limits" | "read by the service";
type Row = [
  method: string,
  path: string,
  access: string,
  sealed: "sealed too" | "unsealed",
  limits: string,
  body: Body,
];

// biome-ignore format: one line per route, read as a table
const PINNED: Record<string, Row> = {
  upcheck: ["GET", "/upcheck", "public", "sealed too", "server", "none"],
  healthcheck: ["GET", "/healthcheck", "public", "sealed too", "server", "none"],
  status: ["GET", "/api/v1/signer/status", "scope signer_status", "sealed too", "server", "none"],
  sign: ["POST", "/api/v1/eth2/sign/:identifier", "per_key sign", "unsealed", "server", "read by the service"],
  publicKeys: ["GET", "/api/v1/eth2/publicKeys", "per_key public_keys", "unsealed", "server", "none"],
  highWatermark: ["GET", "/api/v1/eth2/highWatermark", "scope signer_status", "unsealed", "server", "none"],
  listKeystores: ["GET", "/eth/v1/keystores", "keys list_keys (list list_keys)", "unsealed", "key_manager_api", "none"],
  importKeystores: ["POST", "/eth/v1/keystores", "keys import_keystores (list list_keys)", "unsealed", "key_manager_api", "schema from limits"],
  deleteKeystores: ["DELETE", "/eth/v1/keystores", "keys delete_keys (list list_keys)", "unsealed", "key_manager_api", "schema from limits"],
  reload: ["POST", "/reload", "scope import_keystores", "unsealed", "server", "bodyless"],
  reloadStatus: ["GET", "/reload", "scope signer_status", "unsealed", "server", "none"],
  listSignerKeys: ["GET", "/api/v1/signer/keys", "keys signer_keys_list (list signer_keys_list)", "unsealed", "server", "none"],
  generateKeys: ["POST", "/api/v1/signer/keys/generate", "scope signer_keys_generate", "unsealed", "cloud_kv_keygen", "schema from limits"],
  importSignerKeys: ["POST", "/api/v1/signer/keys", "keys signer_keys_write (list signer_keys_list)", "unsealed", "cloud_kv_writable", "schema from limits"],
  deleteSignerKeys: ["DELETE", "/api/v1/signer/keys", "keys signer_keys_delete (list signer_keys_list)", "unsealed", "cloud_kv_writable", "schema from limits"],
  createPolicy: ["POST", "/api/v1/signer/auth/policies", "management", "unsealed", "server", "schema"],
  listPolicies: ["GET", "/api/v1/signer/auth/policies", "management", "unsealed", "server", "none"],
  getPolicy: ["GET", "/api/v1/signer/auth/policies/:name", "management", "unsealed", "server", "none"],
  updatePolicy: ["PUT", "/api/v1/signer/auth/policies/:name", "management", "unsealed", "server", "schema"],
  deletePolicy: ["DELETE", "/api/v1/signer/auth/policies/:name", "management", "unsealed", "server", "none"],
  createToken: ["POST", "/api/v1/signer/auth/tokens", "management", "unsealed", "server", "schema"],
  listTokens: ["GET", "/api/v1/signer/auth/tokens", "management", "unsealed", "server", "none"],
  revokeToken: ["DELETE", "/api/v1/signer/auth/tokens/:accessor", "management", "unsealed", "server", "none"],
  sealStatus: ["GET", "/api/v1/signer/sys/seal-status", "public", "sealed too", "server", "none"],
  init: ["POST", "/api/v1/signer/sys/init", "public", "sealed too", "server", "schema"],
  register: ["POST", "/api/v1/signer/sys/register", "public", "sealed too", "server", "schema"],
  share: ["GET", "/api/v1/signer/sys/share", "operator", "sealed too", "server", "none"],
  unseal: ["POST", "/api/v1/signer/sys/unseal", "operator", "sealed too", "server", "schema"],
  generateRoot: ["POST", "/api/v1/signer/sys/generate-root", "operator", "sealed too", "server", "schema"],
  seal: ["POST", "/api/v1/signer/sys/seal", "management", "sealed too", "server", "none"],
  startRotation: ["POST", "/api/v1/signer/sys/rotate-quorum", "management", "sealed too", "server", "schema"],
  cancelRotation: ["DELETE", "/api/v1/signer/sys/rotate-quorum", "management", "sealed too", "server", "none"],
  rotationShare: ["POST", "/api/v1/signer/sys/rotate-quorum/share", "operator", "sealed too", "server", "schema"],
};

function accessWords(access: Access): string {
  switch (access.kind) {
    case "scope":
    case "per_key":
      return `${access.kind} ${access.scope}`;
    case "keys":
      return `keys ${access.scope} (list ${access.list})`;
    default:
      return access.kind;
  }
}

function bodyWords(declaration: Declaration): Body {
  if (declaration.bodyless) return "bodyless";
  if (declaration.body === undefined) return "none";
  if (declaration.body === "read_by_service") return "read by the service";
  return typeof declaration.body === "function" ? "schema from limits" : "schema";
}

function rowOf(declaration: Declaration): Row {
  return [
    declaration.method,
    declaration.path,
    accessWords(declaration.access),
    declaration.servedWhileSealed ? "sealed too" : "unsealed",
    declaration.limits,
    bodyWords(declaration),
  ];
}

const declared = Object.entries(ROUTES as Record<string, Declaration>);

describe("the route table, pinned", () => {
  test.each(declared)("%s is declared as pinned", (name, declaration) => {
    expect({ route: name, declared: rowOf(declaration) }).toEqual({
      route: name,
      declared: PINNED[name] ?? (["not pinned"] as unknown as Row),
    });
  });

  test("every pinned route is in the table (none removed unnoticed)", () => {
    expect(Object.keys(PINNED).filter((name) => !(name in ROUTES))).toEqual([]);
  });

  test("no route that changes anything is public but the seal bootstrap, which spends a token from the body", () => {
    const open = declared
      .filter(([, d]) => d.access.kind === "public" && d.method !== "GET")
      .map(([name]) => name);
    expect(open.sort()).toEqual(["init", "register"]);
  });
});
