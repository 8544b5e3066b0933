/**
 * The OpenAPI tooling really validates: the Key Manager spec's own examples pass for
 * GET/POST/DELETE /eth/v1/keystores, and bodies that break the spec (wrong enum, missing field,
 * wrong type, bad pubkey) are refused with readable errors. Also covers $ref resolution across
 * files, cycles, and the OpenAPI 3.0 keywords that are not JSON Schema.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  expectValidRequest,
  expectValidResponse,
  type HttpMethod,
  type JsonSchema,
  loadOpenApi,
  type OpenApiDoc,
  operationExamples,
  operationSchemas,
  schemaExample,
  toAjvSchema,
  validateAgainst,
} from "./openapi";

const KEYMANAGER = fileURLToPath(
  new URL("../vectors/keymanager-api-spec/keymanager-oapi.yaml", import.meta.url),
);
const WEB3SIGNER = fileURLToPath(
  new URL("../vectors/web3signer-eth2-openapi/web3signer.yaml", import.meta.url),
);
const KEYSTORES = "/eth/v1/keystores";
/** The example of types/public_key.yaml. */
const PUBKEY =
  "0x93247f2209abcacf57b75a51dafae777f9dd38bc7053d1af526f220a7489a6d3a2753e5f3e8b1cfe39b56f43611df74a";

const doc = loadOpenApi(KEYMANAGER);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function schemaOf(schema: JsonSchema | undefined): JsonSchema {
  if (!schema) throw new Error("schema not documented");
  return schema;
}

function requestSchema(method: HttpMethod): JsonSchema {
  return schemaOf(operationSchemas(doc, method, KEYSTORES).requestBody);
}

function responseSchema(method: HttpMethod, status: string): JsonSchema {
  return schemaOf(operationSchemas(doc, method, KEYSTORES).responses[status]);
}

/** The spec's examples of a body: media-type examples if any, plus the one assembled from field `example`s. */
function specExamples(method: HttpMethod, status?: string): unknown[] {
  const media = operationExamples(doc, method, KEYSTORES);
  const schema = status === undefined ? requestSchema(method) : responseSchema(method, status);
  const out = status === undefined ? [...media.request] : [...(media.responses[status] ?? [])];
  const assembled = schemaExample(schema);
  if (assembled !== undefined) out.push(assembled);
  return out;
}

/** The assembled spec example of a body, as a mutable record. */
function example(method: HttpMethod, status?: string): Record<string, unknown> {
  const schema = status === undefined ? requestSchema(method) : responseSchema(method, status);
  const value = schemaExample(schema);
  if (!isRecord(value)) throw new Error(`no example for ${method} ${status ?? "request"}`);
  return value;
}

/** Every object reachable from `root`, each once (the resolved document may share objects). */
function reachable(root: unknown): Record<string, unknown>[] {
  const seen = new Set<unknown>();
  const out: Record<string, unknown>[] = [];
  const walk = (node: unknown): void => {
    if (typeof node !== "object" || node === null || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (!isRecord(node)) return;
    out.push(node);
    Object.values(node).forEach(walk);
  };
  walk(root);
  return out;
}

describe("loadOpenApi on the Key Manager spec", () => {
  test("resolves every $ref into one self-contained document", () => {
    expect(doc.openapi).toBe("3.0.3");
    expect(Object.keys(doc.paths)).toContain(KEYSTORES);
    expect(reachable(doc).filter((node) => "$ref" in node)).toEqual([]);
    // apis/*.yaml -> ../keymanager-oapi.yaml#/components/... -> ./types/*.yaml, and in-file refs.
    const get = responseSchema("get", "200");
    expect(get).toMatchObject({
      required: ["data"],
      properties: {
        data: {
          items: { properties: { validating_pubkey: { pattern: "^0x[a-fA-F0-9]{96}$" } } },
        },
      },
    });
    expect(responseSchema("get", "401")).toMatchObject({ required: ["message"] });
    // types/voluntary_exit.yaml's "#/VoluntaryExit" is relative to that file, not the root.
    const exit = operationSchemas(doc, "post", "/eth/v1/validator/{pubkey}/voluntary_exit");
    expect(exit.responses["200"]).toMatchObject({
      properties: {
        data: {
          properties: {
            message: {
              properties: { epoch: { allOf: [{ pattern: "^(0|[1-9][0-9]{0,19})$" }, {}] } },
            },
            signature: { format: "hex", pattern: "^0x[a-fA-F0-9]{192}$" },
          },
        },
      },
    });
  });

  test("one target resolves to one shared object", () => {
    const pubkey = doc.components?.schemas;
    const listed = responseSchema("get", "200");
    const item = (listed.properties as { data: { items: { properties: Record<string, unknown> } } })
      .data.items.properties.validating_pubkey;
    expect(isRecord(pubkey) && pubkey.Pubkey).toBe(item);
  });

  test("operationSchemas: request bodies and JSON schemas per documented status", () => {
    const get = operationSchemas(doc, "get", KEYSTORES);
    expect(get.requestBody).toBeUndefined();
    expect(get.requestBodyRequired).toBe(false);
    expect(Object.keys(get.responses).sort()).toEqual(["200", "401", "403", "500"]);
    for (const method of ["post", "delete"] as const) {
      const op = operationSchemas(doc, method, KEYSTORES);
      expect(op.requestBodyRequired).toBe(true);
      expect(op.requestBody).toBeDefined();
      expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "403", "500"]);
      for (const schema of Object.values(op.responses)) expect(schema).toBeDefined();
    }
    // A response without content (202 "successfully updated") has no schema.
    const set = operationSchemas(doc, "post", "/eth/v1/validator/{pubkey}/feerecipient");
    expect(Object.hasOwn(set.responses, "202")).toBe(true);
    expect(set.responses["202"]).toBeUndefined();
  });

  test("unknown paths and methods throw instead of validating nothing", () => {
    expect(() => operationSchemas(doc, "get", "/eth/v1/nope")).toThrow(/no path/);
    expect(() => operationSchemas(doc, "put", KEYSTORES)).toThrow(/documents no PUT/);
  });
});

describe("the spec's own examples validate", () => {
  test("GET /eth/v1/keystores", () => {
    expect(example("get", "200")).toEqual({
      data: [{ validating_pubkey: PUBKEY, derivation_path: "m/12381/3600/0/0/0" }],
    });
    for (const status of ["200", "401", "403", "500"]) {
      const examples = specExamples("get", status);
      expect(examples.length).toBeGreaterThan(0);
      for (const body of examples)
        expect(expectValidResponse(doc, "get", KEYSTORES, status, body)).toEqual([]);
    }
    expect(expectValidRequest(doc, "get", KEYSTORES, undefined)).toEqual([]);
  });

  test("POST /eth/v1/keystores", () => {
    const request = example("post");
    expect(Object.keys(request).sort()).toEqual(["keystores", "passwords", "slashing_protection"]);
    const [keystore] = request.keystores as string[];
    expect(JSON.parse(keystore ?? "")).toMatchObject({ version: 4, pubkey: PUBKEY });
    for (const body of specExamples("post"))
      expect(expectValidRequest(doc, "post", KEYSTORES, body)).toEqual([]);

    expect(example("post", "200")).toEqual({ data: [{ status: "imported" }] });
    for (const status of ["200", "400", "401", "403", "500"]) {
      for (const body of specExamples("post", status)) {
        expect(expectValidResponse(doc, "post", KEYSTORES, status, body)).toEqual([]);
      }
    }
  });

  test("DELETE /eth/v1/keystores", () => {
    expect(example("delete")).toEqual({ pubkeys: [PUBKEY] });
    for (const body of specExamples("delete"))
      expect(expectValidRequest(doc, "delete", KEYSTORES, body)).toEqual([]);

    const response = example("delete", "200");
    expect(response.data).toEqual([{ status: "deleted" }]);
    expect(JSON.parse(String(response.slashing_protection))).toMatchObject({
      metadata: { interchange_format_version: "5" },
    });
    for (const status of ["200", "400", "401", "403", "500"]) {
      for (const body of specExamples("delete", status)) {
        expect(expectValidResponse(doc, "delete", KEYSTORES, status, body)).toEqual([]);
      }
    }
  });

  test("every status of each enum, every optional field and upper-case hex are accepted", () => {
    for (const status of ["imported", "duplicate", "error"]) {
      const body = { data: [{ status, message: "m" }] };
      expect(expectValidResponse(doc, "post", KEYSTORES, 200, body)).toEqual([]);
    }
    for (const status of ["deleted", "not_active", "not_found", "error"]) {
      const body = { data: [{ status, message: "m" }], slashing_protection: "{}" };
      expect(expectValidResponse(doc, "delete", KEYSTORES, 200, body)).toEqual([]);
    }
    const upper = `0x${PUBKEY.slice(2).toUpperCase()}`;
    const listed = { data: [{ validating_pubkey: upper, derivation_path: "", readonly: true }] };
    expect(expectValidResponse(doc, "get", KEYSTORES, 200, listed)).toEqual([]);
    expect(expectValidRequest(doc, "delete", KEYSTORES, { pubkeys: [upper] })).toEqual([]);
  });

  test("every schema-level example in the whole spec validates against its own schema", () => {
    const schemas = new Set<Record<string, unknown>>();
    for (const item of Object.values(doc.paths)) {
      for (const method of ["get", "post", "delete"] as const) {
        if (!isRecord(item[method])) continue;
        const path = Object.keys(doc.paths).find((p) => doc.paths[p] === item) ?? "";
        const op = operationSchemas(doc, method, path);
        for (const s of [op.requestBody, ...Object.values(op.responses)]) {
          for (const node of reachable(s))
            if ("example" in node && "type" in node) schemas.add(node);
        }
      }
    }
    expect(schemas.size).toBeGreaterThanOrEqual(10);
    for (const schema of schemas) expect(validateAgainst(schema, schema.example)).toEqual([]);
  });
});

describe("bodies that break the spec are refused", () => {
  test("a status outside the enum", () => {
    const errors = expectValidResponse(doc, "post", KEYSTORES, 200, {
      data: [{ status: "imported_ok" }],
    });
    expect(errors).toEqual([
      'POST /eth/v1/keystores 200 /data/0/status: must be equal to one of the allowed values "imported" | "duplicate" | "error", got "imported_ok"',
    ]);
    const deleted = { data: [{ status: "removed" }], slashing_protection: "{}" };
    expect(expectValidResponse(doc, "delete", KEYSTORES, 200, deleted)).toHaveLength(1);
    // The import enum is not the delete enum.
    const imported = { data: [{ status: "imported" }], slashing_protection: "{}" };
    expect(expectValidResponse(doc, "delete", KEYSTORES, 200, imported)[0]).toContain(
      "/data/0/status",
    );
  });

  test("missing required fields", () => {
    for (const method of ["get", "post"] as const) {
      expect(expectValidResponse(doc, method, KEYSTORES, 200, {})).toEqual([
        `${method.toUpperCase()} /eth/v1/keystores 200 (body): must have required property 'data'`,
      ]);
    }
    // DELETE must always carry slashing_protection, even when nothing was found.
    const noInterchange = { data: [{ status: "not_found" }] };
    expect(expectValidResponse(doc, "delete", KEYSTORES, 200, noInterchange)).toEqual([
      "DELETE /eth/v1/keystores 200 (body): must have required property 'slashing_protection'",
    ]);
    expect(expectValidResponse(doc, "post", KEYSTORES, 200, { data: [{ message: "x" }] })).toEqual([
      "POST /eth/v1/keystores 200 /data/0: must have required property 'status'",
    ]);
    expect(
      expectValidResponse(doc, "get", KEYSTORES, 200, { data: [{ readonly: false }] })[0],
    ).toContain("required property 'validating_pubkey'");
    const { passwords: _, ...noPasswords } = example("post");
    expect(expectValidRequest(doc, "post", KEYSTORES, noPasswords)).toEqual([
      "POST /eth/v1/keystores request (body): must have required property 'passwords'",
    ]);
    expect(expectValidRequest(doc, "delete", KEYSTORES, {})).toHaveLength(1);
    expect(expectValidResponse(doc, "post", KEYSTORES, 400, {})).toHaveLength(1);
  });

  test("keystores not an array, and keystores/slashing_protection as objects instead of JSON strings", () => {
    const request = example("post");
    const keystore = (request.keystores as string[])[0] ?? "";
    expect(expectValidRequest(doc, "post", KEYSTORES, { ...request, keystores: keystore })).toEqual(
      [
        `POST /eth/v1/keystores request /keystores: must be array, got ${JSON.stringify(keystore).slice(0, 77)}...`,
      ],
    );
    const parsed = { ...request, keystores: [JSON.parse(keystore)] };
    expect(expectValidRequest(doc, "post", KEYSTORES, parsed)[0]).toContain(
      "/keystores/0: must be string",
    );
    const interchange = {
      ...request,
      slashing_protection: JSON.parse(String(request.slashing_protection)),
    };
    expect(expectValidRequest(doc, "post", KEYSTORES, interchange)[0]).toContain(
      "/slashing_protection: must be string",
    );
    const response = example("delete", "200");
    const objectInterchange = { ...response, slashing_protection: { metadata: {}, data: [] } };
    expect(expectValidResponse(doc, "delete", KEYSTORES, 200, objectInterchange)).toHaveLength(1);
  });

  test("pubkeys that do not match ^0x[a-fA-F0-9]{96}$", () => {
    for (const bad of [
      PUBKEY.slice(2),
      PUBKEY.slice(0, -2),
      `${PUBKEY}00`,
      `0X${PUBKEY.slice(2)}`,
      `${PUBKEY.slice(0, -1)}g`,
    ]) {
      expect(expectValidRequest(doc, "delete", KEYSTORES, { pubkeys: [PUBKEY, bad] })).toEqual([
        `DELETE /eth/v1/keystores request /pubkeys/1: must match pattern "^0x[a-fA-F0-9]{96}$", got ${JSON.stringify(bad).slice(0, 77)}...`,
      ]);
    }
    const listed = { data: [{ validating_pubkey: "0x1234" }] };
    expect(expectValidResponse(doc, "get", KEYSTORES, 200, listed)[0]).toContain(
      "must match pattern",
    );
  });

  test("wrong types are not coerced", () => {
    const cases: [HttpMethod, number | undefined, unknown, string][] = [
      ["get", 200, { data: {} }, "/data: must be array"],
      ["get", 200, { data: null }, "/data: must be array"],
      [
        "get",
        200,
        { data: [{ validating_pubkey: PUBKEY, readonly: "true" }] },
        "/data/0/readonly: must be boolean",
      ],
      [
        "get",
        200,
        { data: [{ validating_pubkey: PUBKEY, derivation_path: 0 }] },
        "/data/0/derivation_path: must be string",
      ],
      ["get", 200, [], "(body): must be object"],
      [
        "post",
        200,
        { data: [{ status: "error", message: 42 }] },
        "/data/0/message: must be string",
      ],
      ["post", 200, { data: [{ status: 0 }] }, "/data/0/status: must be string"],
      [
        "delete",
        200,
        { data: [], slashing_protection: null },
        "/slashing_protection: must be string",
      ],
      ["post", 500, { message: 500 }, "/message: must be string"],
      ["post", undefined, { keystores: [], passwords: [123] }, "/passwords/0: must be string"],
      ["post", undefined, { keystores: [], passwords: "pw" }, "/passwords: must be array"],
      ["delete", undefined, { pubkeys: PUBKEY }, "/pubkeys: must be array"],
      ["delete", undefined, [PUBKEY], "(body): must be object"],
    ];
    for (const [method, status, body, error] of cases) {
      const errors =
        status === undefined
          ? expectValidRequest(doc, method, KEYSTORES, body)
          : expectValidResponse(doc, method, KEYSTORES, status, body);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0]).toContain(error);
    }
  });

  test("statuses the spec does not document, and missing bodies", () => {
    expect(expectValidResponse(doc, "delete", KEYSTORES, 404, { message: "gone" })).toEqual([
      "DELETE /eth/v1/keystores 404: status not documented (documented: 200, 400, 401, 403, 500)",
    ]);
    expect(expectValidResponse(doc, "get", KEYSTORES, 400, { message: "bad" })[0]).toContain(
      "not documented",
    );
    expect(expectValidResponse(doc, "get", KEYSTORES, 200, undefined)[0]).toContain(
      "none was sent",
    );
    expect(expectValidRequest(doc, "post", KEYSTORES, undefined)).toEqual([
      "POST /eth/v1/keystores request: body is required",
    ]);
    expect(expectValidRequest(doc, "get", KEYSTORES, { data: [] })[0]).toContain(
      "no JSON request body",
    );
  });

  test("the spec allows what it does not forbid: extra properties, empty arrays, unequal lengths", () => {
    const extra = { data: [{ status: "imported", detail: 1 }], meta: "x" };
    expect(expectValidResponse(doc, "post", KEYSTORES, 200, extra)).toEqual([]);
    expect(
      expectValidRequest(doc, "post", KEYSTORES, { keystores: [], passwords: ["a", "b"] }),
    ).toEqual([]);
    expect(expectValidRequest(doc, "delete", KEYSTORES, { pubkeys: [] })).toEqual([]);
    expect(
      expectValidResponse(doc, "post", KEYSTORES, 401, { message: "no token", code: 401 }),
    ).toEqual([]);
  });
});

describe("paths with parameters", () => {
  const feeRecipient = `/eth/v1/validator/${PUBKEY}/feerecipient`;

  test("a concrete path matches its template", () => {
    const body = { ethaddress: "0xAbcF8e0d4e9587369b2301D0790347320302cc09" };
    expect(expectValidRequest(doc, "post", feeRecipient, body)).toEqual([]);
    expect(expectValidRequest(doc, "post", feeRecipient, { ethaddress: "0x12" })[0]).toContain(
      "must match pattern",
    );
    expect(expectValidResponse(doc, "post", feeRecipient, 202, undefined)).toEqual([]);
    expect(expectValidResponse(doc, "post", feeRecipient, 202, { data: 1 })[0]).toContain(
      "without a JSON body",
    );
    expect(expectValidResponse(doc, "delete", feeRecipient, 204, "")).toEqual([]);
  });
});

describe("OpenAPI 3.0 keywords", () => {
  test("nullable adds null only where a type is given", () => {
    const nullableString = { type: "string", nullable: true };
    expect(validateAgainst(nullableString, null)).toEqual([]);
    expect(validateAgainst(nullableString, "x")).toEqual([]);
    expect(validateAgainst(nullableString, 1)).toEqual(["(body): must be string,null, got 1"]);
    expect(validateAgainst({ type: "string" }, null)).toEqual(["(body): must be string, got null"]);
    const nullableEnum = { type: "string", enum: ["a"], nullable: true };
    expect(validateAgainst(nullableEnum, null)).toEqual([]);
    expect(validateAgainst(nullableEnum, "b")).toHaveLength(1);
    expect(toAjvSchema({ type: "integer", nullable: false })).toEqual({ type: "integer" });
  });

  test("boolean exclusiveMinimum/exclusiveMaximum", () => {
    const schema = {
      type: "integer",
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 10,
      exclusiveMaximum: true,
    };
    expect(toAjvSchema(schema)).toEqual({
      type: "integer",
      exclusiveMinimum: 0,
      exclusiveMaximum: 10,
    });
    expect(validateAgainst(schema, 0)).toHaveLength(1);
    expect(validateAgainst(schema, 5)).toEqual([]);
    expect(validateAgainst(schema, 10)).toHaveLength(1);
    expect(validateAgainst({ type: "integer", minimum: 0, exclusiveMinimum: false }, 0)).toEqual(
      [],
    );
  });

  test("example and x-* are dropped, but properties named like them are kept", () => {
    const schema = {
      type: "object",
      example: { example: 1 },
      "x-internal": true,
      required: ["example"],
      properties: { example: { type: "integer", example: 3 }, nullable: { type: "boolean" } },
    };
    expect(toAjvSchema(schema)).toEqual({
      type: "object",
      required: ["example"],
      properties: { example: { type: "integer" }, nullable: { type: "boolean" } },
    });
    expect(validateAgainst(schema, { example: 1 })).toEqual([]);
    expect(validateAgainst(schema, { example: "1", nullable: "no" })).toHaveLength(2);
  });

  test("formats: hex is checked, an unknown format throws rather than passing", () => {
    const hex = { type: "string", format: "hex" };
    expect(validateAgainst(hex, "0x00ff")).toEqual([]);
    expect(validateAgainst(hex, "0x0")).toEqual(['(body): must match format "hex", got "0x0"']);
    expect(validateAgainst(hex, "00ff")).toHaveLength(1);
    expect(validateAgainst({ type: "string", format: "uri" }, "https://remote.signer")).toEqual([]);
    expect(validateAgainst({ type: "string", format: "uri" }, "remote.signer")).toHaveLength(1);
    expect(() => validateAgainst({ type: "string", format: "made-up" }, "x")).toThrow(
      /format "made-up" is unknown/,
    );
  });

  test("an unresolved $ref is refused", () => {
    expect(() => validateAgainst({ $ref: "#/components/schemas/Pubkey" }, "x")).toThrow(
      /unresolved \$ref/,
    );
  });
});

describe("loadOpenApi on synthetic specs", () => {
  let dir = "";

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "sigil-openapi-"));
    mkdirSync(join(dir, "schemas"));
    writeFileSync(
      join(dir, "root.yaml"),
      `openapi: "3.0.3"
info: { title: t, version: "1" }
paths:
  /tree:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: { $ref: "./schemas/node.yaml#/Node" }
        4XX:
          $ref: "#/components/responses/Err"
        default:
          description: other
          content:
            application/json; charset=utf-8:
              schema: { $ref: "#/components/schemas/a~1b~0c" }
              example: 7
components:
  responses:
    Err:
      description: e
      content:
        application/json:
          schema: { $ref: "#/components/schemas/Err" }
          examples:
            one: { value: { message: "nope" } }
  schemas:
    Err: { type: object, required: [message], properties: { message: { type: string } } }
    a/b~c: { type: integer }
    Forest:
      type: object
      properties:
        trees: { type: array, items: { $ref: "./schemas/node.yaml#/Node" } }
`,
    );
    writeFileSync(
      join(dir, "schemas", "node.yaml"),
      `Node:
  type: object
  required: [name]
  properties:
    name: { type: string }
    children: { type: array, items: { $ref: "#/Node" } }
    forest: { $ref: "../root.yaml#/components/schemas/Forest" }
`,
    );
    writeFileSync(
      join(dir, "loop.yaml"),
      `openapi: "3.0.3"
paths: {}
components:
  schemas:
    A: { $ref: "#/components/schemas/B" }
    B: { $ref: "#/components/schemas/A" }
`,
    );
    writeFileSync(
      join(dir, "missing.yaml"),
      `openapi: "3.0.3"
paths: {}
components:
  schemas:
    A: { $ref: "./schemas/node.yaml#/Nope" }
`,
    );
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function synthetic(): OpenApiDoc {
    return loadOpenApi(join(dir, "root.yaml"));
  }

  test("recursive schemas, within and across files, become cycles and still validate", () => {
    const spec = synthetic();
    const node = schemaOf(operationSchemas(spec, "get", "/tree").responses["200"]);
    const props = node.properties as Record<string, Record<string, unknown>>;
    expect(props.children?.items).toBe(node);
    const forest = props.forest?.properties as Record<string, Record<string, unknown>>;
    expect(forest.trees?.items).toBe(node);

    const tree = {
      name: "root",
      children: [
        { name: "a", children: [] },
        { name: "b", forest: { trees: [{ name: "c" }] } },
      ],
    };
    expect(expectValidResponse(spec, "get", "/tree", 200, tree)).toEqual([]);
    const broken = {
      name: "root",
      children: [{ name: "a", forest: { trees: [{ name: 1 }, {}] } }],
    };
    expect(expectValidResponse(spec, "get", "/tree", 200, broken)).toEqual([
      "GET /tree 200 /children/0/forest/trees/0/name: must be string, got 1",
      "GET /tree 200 /children/0/forest/trees/1: must have required property 'name'",
    ]);
  });

  test("status ranges, default, escaped pointers and media-type examples", () => {
    const spec = synthetic();
    expect(expectValidResponse(spec, "get", "/tree", 404, { message: "no" })).toEqual([]);
    expect(expectValidResponse(spec, "get", "/tree", 418, {})[0]).toContain(
      "required property 'message'",
    );
    expect(expectValidResponse(spec, "get", "/tree", 500, 7)).toEqual([]);
    expect(expectValidResponse(spec, "get", "/tree", 500, 7.5)).toEqual([
      "GET /tree 500 (body): must be integer, got 7.5",
    ]);
    expect(operationExamples(spec, "get", "/tree")).toEqual({
      request: [],
      responses: { "200": [], "4XX": [{ message: "nope" }], default: [7] },
    });
  });

  test("a $ref cycle that never reaches a schema, and a missing target, throw", () => {
    expect(() => loadOpenApi(join(dir, "loop.yaml"))).toThrow(/\$ref cycle without any schema/);
    expect(() => loadOpenApi(join(dir, "missing.yaml"))).toThrow(/does not exist \(no "Nope"\)/);
  });
});

describe("a second vendored spec: Web3Signer", () => {
  test("all its media-type examples validate, and a changed discriminator value does not", () => {
    const spec = loadOpenApi(WEB3SIGNER);
    let checked = 0;
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const method of ["get", "post", "delete", "put"] as const) {
        if (!isRecord(item[method])) continue;
        const schemas = operationSchemas(spec, method, path);
        const examples = operationExamples(spec, method, path);
        for (const body of examples.request) {
          checked++;
          expect(expectValidRequest(spec, method, path, body)).toEqual([]);
        }
        for (const [status, bodies] of Object.entries(examples.responses)) {
          for (const body of bodies) {
            checked++;
            expect(validateAgainst(schemaOf(schemas.responses[status]), body)).toEqual([]);
          }
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(25);

    const sign = "/api/v1/eth2/sign/{identifier}";
    const [first] = operationExamples(spec, "post", sign).request;
    expect(isRecord(first)).toBe(true);
    expect(
      expectValidRequest(spec, "post", sign, {
        ...(isRecord(first) ? first : {}),
        type: "NOT_A_TYPE",
      }).length,
    ).toBeGreaterThan(0);
  });
});
