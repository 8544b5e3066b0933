import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { resolve } from "node:path";
import type { RunningSigner } from "../../src/app/signer";
import { createNobleBackend } from "../../src/bls/noble";
import { TempDir } from "../support/cli";
import { scrapeMetrics } from "../support/metrics";
import { bytesToHex, hexToBytes, oracleAttestationRoot } from "../support/oracle";
import { startInProcessSigner } from "../support/signer";

// The example interop keys; their public keys are published (examples/keys/README.md).
const KEY_0 =
  "0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c";
const KEY_1 =
  "0xb89bebc699769726a318c8e9971bd3171297c61aea4a6578a7a4f94b547dcba5bac16a89108b6b6a1fe3695d1a874a0b";
const KEY_2 =
  "0xa3a32b0f8b4ddb83f1a0a853d81dd725dfe577d4f4c3db8ece52ce2b026eca84815c1a7e8e92a4de3d755733bf7e4a9b";
const KEY_3 =
  "0x88c141df77cd9d8d7a71a75c826c41a9c9f03c6ee1b180f3e7852f6a280099ded351b58d66e653af8e42816a4d8f532e";
const UNKNOWN = `0x${"ab".repeat(48)}`;

const MAINNET_GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
// Mainnet Electra: activated at epoch 364032 on top of Deneb.
const FORK_INFO = {
  fork: { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" },
  genesis_validators_root: MAINNET_GVR,
};
// The request in examples/sign-attestation.json, which the README's curl sends: target epoch
// 364100 is after Electra's activation, so the current version (0x05000000) applies.
const EXAMPLE = JSON.parse(readFileSync("examples/sign-attestation.json", "utf8")) as {
  attestation: Record<string, unknown>;
};
const ATTESTATION_DATA = EXAMPLE.attestation;

const dir = new TempDir();
let logLines: string[] = [];
let signer: RunningSigner;
let base: string;

beforeAll(async () => {
  const started = await startInProcessSigner(dir, "signing", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      "antislashing: {backend: noop}",
      `canary_keys: ["${KEY_1}"]`,
    ],
    logLevel: "debug",
  });
  signer = started.signer;
  logLines = started.logs;
  base = signer.http.url;
});

afterAll(async () => {
  await signer.stop();
  dir.remove();
});

function sign(
  pubkey: string,
  body: unknown,
  headers: Record<string, string> = { accept: "application/json" },
) {
  return fetch(`${base}/api/v1/eth2/sign/${pubkey}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function postWithoutAccept(path: string, body: string) {
  return new Promise<{ status: number; contentType: string; body: string }>((done, fail) => {
    const url = new URL(path, base);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () =>
          done({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"]),
            body: text,
          }),
        );
      },
    );
    req.on("error", fail);
    req.end(body);
  });
}

const attestation = (extra: Record<string, unknown> = {}) => ({
  type: "ATTESTATION",
  fork_info: FORK_INFO,
  attestation: ATTESTATION_DATA,
  ...extra,
});

describe("POST /api/v1/eth2/sign/{pubkey}", () => {
  test("signs an attestation: a valid BLS signature over the root Lodestar computes", async () => {
    const root = oracleAttestationRoot(ATTESTATION_DATA, "0x05000000", MAINNET_GVR);
    const response = await sign(KEY_0, attestation({ signingRoot: bytesToHex(root) }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("application/json");
    const { signature } = (await response.json()) as { signature: string };
    expect(signature).toMatch(/^0x[0-9a-f]{192}$/);
    expect(createNobleBackend().verify(hexToBytes(KEY_0), root, hexToBytes(signature))).toBe(true);
  });

  test("JSON for application/json and */*; bare hex otherwise; the same signature", async () => {
    const json = (await (await sign(KEY_2, attestation())).json()) as { signature: string };
    const wildcard = await sign(KEY_2, attestation(), { accept: "*/*" });
    expect(wildcard.headers.get("content-type")).toStartWith("application/json");
    expect(((await wildcard.json()) as { signature: string }).signature).toBe(json.signature);
    const text = await sign(KEY_2, attestation(), { accept: "text/plain" });
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toStartWith("text/plain");
    expect(await text.text()).toBe(json.signature);
    // fetch always adds `Accept: */*`; Teku and Prysm send no Accept header at all.
    const bare = await postWithoutAccept(
      `/api/v1/eth2/sign/${KEY_2}`,
      JSON.stringify(attestation()),
    );
    expect(bare.status).toBe(200);
    expect(bare.contentType).toStartWith("text/plain");
    expect(bare.body).toBe(json.signature);
  });

  test("the README example request (examples/sign-attestation.json) signs", async () => {
    const response = await sign(KEY_0, readFileSync("examples/sign-attestation.json", "utf8"));
    expect(response.status).toBe(200);
  });

  test("the pubkey in the path is case-insensitive and 0x is optional; keystore keys sign too", async () => {
    const root = oracleAttestationRoot(ATTESTATION_DATA, "0x05000000", MAINNET_GVR);
    const response = await sign(KEY_3.slice(2).toUpperCase(), attestation());
    expect(response.status).toBe(200);
    const { signature } = (await response.json()) as { signature: string };
    expect(createNobleBackend().verify(hexToBytes(KEY_3), root, hexToBytes(signature))).toBe(true);
  });

  test("an unknown key is 404 unknown_pubkey", async () => {
    const response = await sign(UNKNOWN, attestation());
    expect(response.status).toBe(404);
    expect(((await response.json()) as { code: string }).code).toBe("unknown_pubkey");
  });

  const malformed: [string, () => Promise<Response>, number, string][] = [
    ["bad JSON", () => sign(KEY_0, '{"type": "ATTESTATION",'), 400, "malformed_json"],
    [
      "missing payload",
      () => sign(KEY_0, { type: "ATTESTATION", fork_info: FORK_INFO }),
      400,
      "invalid_request",
    ],
    [
      "wrong hex length",
      () =>
        sign(
          KEY_0,
          attestation({
            attestation: { ...ATTESTATION_DATA, beacon_block_root: `0x${"11".repeat(31)}` },
          }),
        ),
      400,
      "invalid_request",
    ],
    [
      "uint64 overflow",
      () =>
        sign(
          KEY_0,
          attestation({ attestation: { ...ATTESTATION_DATA, slot: "18446744073709551616" } }),
        ),
      400,
      "invalid_request",
    ],
    [
      "unknown type",
      () => sign(KEY_0, { ...attestation(), type: "DEPOSIT" }),
      400,
      "unsupported_operation",
    ],
    [
      "root mismatch",
      () => sign(KEY_0, attestation({ signingRoot: `0x${"00".repeat(32)}` })),
      400,
      "signing_root_mismatch",
    ],
    ["malformed pubkey in the path", () => sign("0x1234", attestation()), 400, "invalid_request"],
  ];
  for (const [name, send, status, code] of malformed) {
    test(`${name} → ${status} ${code}`, async () => {
      const response = await send();
      expect(response.status).toBe(status);
      const body = (await response.json()) as { code: string; message: string };
      expect(body.code).toBe(code);
      expect(body.message.length).toBeGreaterThan(0);
    });
  }

  test("request auth with an empty data is 400 invalid_request; one byte of data signs", async () => {
    const auth = (data: string) => ({
      type: "BUILDER_REQUEST_AUTH",
      builder_request_auth: { version: "GLOAS", data: { data, slot: "16000000" } },
    });
    const refused = await sign(KEY_0, auth("0x"));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      code: "invalid_request",
      message:
        "builder_request_auth.data.data: must not be empty (builder-specs: a zero-length RequestAuth data is invalid)",
    });
    const signed = await sign(KEY_0, auth("0x61"));
    expect(signed.status).toBe(200);
  });

  test("a canary key signs, and a warning naming it and the operation is logged", async () => {
    const before = logLines.length;
    const response = await sign(KEY_1, attestation());
    expect(response.status).toBe(200);
    const warnings = logLines
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record.level === "warn" && record.msg === "canary key signed");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.pubkey).toBe(KEY_1);
    expect(warnings[0]?.operation).toBe("ATTESTATION");
  });
});

describe("GET /api/v1/eth2/publicKeys and /healthcheck", () => {
  test("lists every loaded key, lower-case", async () => {
    const response = await fetch(`${base}/api/v1/eth2/publicKeys`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as string[]).sort()).toEqual(
      [KEY_0, KEY_1, KEY_2, KEY_3].sort(),
    );
  });

  test("healthcheck reports the loaded and failed key counts", async () => {
    const report = (await (await fetch(`${base}/healthcheck`)).json()) as {
      checks: { id: string; status: string; data: Record<string, number> }[];
    };
    const keys = report.checks.find((check) => check.id === "keys");
    expect(keys?.status).toBe("UP");
    expect(keys?.data).toEqual({ filesystem_loaded: 4, filesystem_failed: 0 });
  });

  test("the noop backend shows in the health check and a gauge: nothing is protected", async () => {
    const report = (await (await fetch(`${base}/healthcheck`)).json()) as {
      checks: Record<string, unknown>[];
    };
    expect(report.checks.find((check) => check.id === "slashing_protection")).toEqual({
      id: "slashing_protection",
      status: "UP",
      data: {
        backend: "noop",
        warning:
          "antislashing.backend is noop: NOTHING protects these keys from double votes or surround votes; testing only",
      },
    });
    const metrics = await scrapeMetrics(signer.metricsUrl);
    expect(metrics.get('signer_slashing_protection_enabled{backend="noop"}')).toBe(0);
  });
});
