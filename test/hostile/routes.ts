// The routes the hostile suite attacks, as data: method, path, auth, a valid-shaped body and what
// each of its fields holds (test/hostile/cases.ts turns them into cases).
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { interopSecret } from "../support/interop";
import { attestationRequest, blockRequest } from "../support/slashing";
import type { Field, RouteSpec } from "./cases";

/**
 * An EIP-2335 keystore (JSON text, cheap PBKDF2) of interop key `index`, for a key the signer does
 * not load.
 */
export async function keystoreOfUnloadedKey(index: number, password: string): Promise<string> {
  const secret = interopSecret(index);
  const pubkey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
  const cheap = { ...defaultPbkdfModule(), params: { ...defaultPbkdfModule().params, c: 1024 } };
  const path = `m/12381/3600/${index}/0/0`;
  return JSON.stringify(await create(password, secret, pubkey, path, "", cheap));
}

/** Values the route table needs from the running signer and the test's fixtures. */
export interface RouteValues {
  /** A loaded key: a hostile sign request that were accepted would really sign. */
  readonly signKey: string;
  /** A well-formed public key that is not loaded. */
  readonly unknownKey: string;
  /** An EIP-2335 keystore (JSON text) of a key that is not loaded, and a wrong password for it. */
  readonly keystore: string;
  readonly wrongPassword: string;
  /** A policy that exists (its update must not happen). */
  readonly policy: string;
  readonly ageRecipient: string;
  readonly bodyLimit: number;
  readonly keyManagerBodyLimit: number;
}

const hex = (bytes: number) => ({ kind: "hex", bytes }) as const;
const UINT64 = { kind: "uint64" } as const;
const INTEGER = { kind: "integer" } as const;
const ENUM = { kind: "enum" } as const;
const TEXT = { kind: "text" } as const;
const OBJECT = { kind: "object" } as const;
const LIST = { kind: "list" } as const;

const field = (at: Field["at"], type: Field["type"], required = true): Field => ({
  at,
  type,
  required,
});

const FORK_INFO: Field[] = [
  field(["fork_info"], OBJECT),
  field(["fork_info", "fork"], OBJECT),
  field(["fork_info", "fork", "previous_version"], hex(4)),
  field(["fork_info", "fork", "current_version"], hex(4)),
  field(["fork_info", "fork", "epoch"], UINT64),
  field(["fork_info", "genesis_validators_root"], hex(32)),
];

/** Shared by every sign variant: the type, and a signing root that is absent from the base. */
const ENVELOPE: Field[] = [field(["type"], ENUM), field(["signingRoot"], hex(32), false)];

const ATTESTATION_FIELDS: Field[] = [
  ...ENVELOPE,
  ...FORK_INFO,
  field(["attestation"], OBJECT),
  field(["attestation", "slot"], UINT64),
  field(["attestation", "index"], UINT64),
  field(["attestation", "beacon_block_root"], hex(32)),
  ...(["source", "target"] as const).flatMap((side) => [
    field(["attestation", side], OBJECT),
    field(["attestation", side, "epoch"], UINT64),
    field(["attestation", side, "root"], hex(32)),
  ]),
];

const HEADER = ["beacon_block", "block_header"] as const;
const BLOCK_FIELDS: Field[] = [
  ...ENVELOPE,
  ...FORK_INFO,
  field(["beacon_block"], OBJECT),
  field(["beacon_block", "version"], ENUM),
  field([...HEADER], OBJECT),
  field([...HEADER, "slot"], UINT64),
  field([...HEADER, "proposer_index"], UINT64),
  field([...HEADER, "parent_root"], hex(32)),
  field([...HEADER, "state_root"], hex(32)),
  field([...HEADER, "body_root"], hex(32)),
];

const REGISTRATION = ["validator_registration"] as const;
const REGISTRATION_FIELDS: Field[] = [
  ...ENVELOPE,
  field([...REGISTRATION], OBJECT),
  field([...REGISTRATION, "fee_recipient"], hex(20)),
  field([...REGISTRATION, "gas_limit"], UINT64),
  field([...REGISTRATION, "timestamp"], UINT64),
  field([...REGISTRATION, "pubkey"], hex(48)),
];

const RULE_FIELDS: Field[] = [
  field(["rules"], LIST),
  field(["rules", 0], OBJECT, false),
  field(["rules", 0, "effect"], ENUM),
  field(["rules", 0, "scopes"], LIST, false),
  field(["rules", 0, "scopes", 0], ENUM, false),
  field(["rules", 0, "keys", 0], hex(48), false),
  field(["rules", 0, "operations", 0], ENUM, false),
];

/** A keystore import (Key Manager API and cloud_kv): keystore and password contents are per item. */
const IMPORT_FIELDS: Field[] = [
  field(["keystores"], LIST),
  { at: ["keystores", 0], type: { kind: "text", jsonText: true }, perItem: true },
  field(["passwords"], LIST),
  { at: ["passwords", 0], type: TEXT, perItem: true },
  field(["slashing_protection"], { kind: "text", jsonText: true }, false),
];

/** `[]` is a valid (empty) delete: the list is required, its element is not. */
const DELETE_FIELDS: Field[] = [field(["pubkeys"], LIST), field(["pubkeys", 0], hex(48), false)];

const SHARE_FIELDS: Field[] = [field(["share"], TEXT)];

/** A share that has the right shape (33 bytes, base64) and belongs to no one. */
const foreignShare = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(33))).toString("base64");

/** Every route of an in-process signer in stateful mode with the Key Manager API (no cloud_kv). */
export function signerRoutes(v: RouteValues): RouteSpec[] {
  const json = v.bodyLimit;
  const sign = (variant: string, base: unknown, fields: Field[], slowLoris = false): RouteSpec => ({
    name: `POST /api/v1/eth2/sign/{identifier} (${variant})`,
    method: "POST",
    path: "/api/v1/eth2/sign/{identifier}",
    params: { identifier: v.signKey },
    auth: "management",
    body: { base, fields },
    refusals: [400],
    bodyLimit: json,
    slowLoris,
  });
  const get = (path: string, auth?: RouteSpec["auth"]): RouteSpec => ({
    name: `GET ${path}`,
    method: "GET",
    path,
    auth,
    refusals: [400],
    bodyLimit: json,
  });
  const rule = {
    effect: "allow",
    scopes: ["sign"],
    keys: [v.signKey],
    operations: ["ATTESTATION"],
  };
  const sys = "/api/v1/signer/sys";
  return [
    sign("ATTESTATION", attestationRequest(900, 901, 900).body, ATTESTATION_FIELDS, true),
    sign("BLOCK_V2", blockRequest(900, 900).body, BLOCK_FIELDS),
    sign(
      "VALIDATOR_REGISTRATION",
      {
        type: "VALIDATOR_REGISTRATION",
        validator_registration: {
          fee_recipient: `0x${"ab".repeat(20)}`,
          gas_limit: "30000000",
          timestamp: "1700000000",
          pubkey: v.signKey,
        },
      },
      REGISTRATION_FIELDS,
    ),
    get("/api/v1/eth2/publicKeys", "management"),
    get("/upcheck"),
    get("/healthcheck"),
    get("/api/v1/signer/status", "management"),
    get("/api/v1/eth2/highWatermark", "management"),
    {
      ...get("/api/v1/signer/keys", "management"),
      query: { base: { limit: "10" }, fields: [field(["limit"], INTEGER, false)] },
    },
    get("/eth/v1/keystores", "management"),
    {
      name: "POST /eth/v1/keystores",
      method: "POST",
      path: "/eth/v1/keystores",
      auth: "management",
      body: {
        base: { keystores: [v.keystore], passwords: [v.wrongPassword] },
        fields: IMPORT_FIELDS,
      },
      refusals: [400],
      bodyLimit: v.keyManagerBodyLimit,
      slowLoris: true,
    },
    {
      name: "DELETE /eth/v1/keystores",
      method: "DELETE",
      path: "/eth/v1/keystores",
      auth: "management",
      body: {
        base: { pubkeys: [v.unknownKey] },
        fields: DELETE_FIELDS,
      },
      refusals: [400],
      bodyLimit: v.keyManagerBodyLimit,
    },
    get("/api/v1/signer/auth/policies", "management"),
    {
      name: "POST /api/v1/signer/auth/policies",
      method: "POST",
      path: "/api/v1/signer/auth/policies",
      auth: "management",
      body: {
        base: { name: "hostile-new", rules: [rule] },
        fields: [field(["name"], TEXT), ...RULE_FIELDS],
      },
      refusals: [400],
      bodyLimit: json,
      slowLoris: true,
    },
    {
      ...get("/api/v1/signer/auth/policies/{name}", "management"),
      params: { name: v.policy },
      refusals: [404],
    },
    {
      name: "PUT /api/v1/signer/auth/policies/{name}",
      method: "PUT",
      path: "/api/v1/signer/auth/policies/{name}",
      params: { name: v.policy },
      auth: "management",
      body: { base: { rules: [rule] }, fields: RULE_FIELDS },
      refusals: [400],
      bodyLimit: json,
    },
    {
      name: "DELETE /api/v1/signer/auth/policies/{name}",
      method: "DELETE",
      path: "/api/v1/signer/auth/policies/{name}",
      params: { name: "no-such-policy" },
      auth: "management",
      body: "ignored",
      refusals: [404],
      bodyLimit: json,
    },
    get("/api/v1/signer/auth/tokens", "management"),
    {
      name: "POST /api/v1/signer/auth/tokens",
      method: "POST",
      path: "/api/v1/signer/auth/tokens",
      auth: "management",
      body: {
        base: { policies: [v.policy], ttl_seconds: 60, token_bound_cidrs: ["10.0.0.0/8"] },
        fields: [
          field(["policies"], LIST),
          field(["policies", 0], TEXT),
          field(["ttl_seconds"], INTEGER),
          field(["token_bound_cidrs"], LIST, false),
          field(["token_bound_cidrs", 0], TEXT, false),
        ],
      },
      refusals: [400],
      bodyLimit: json,
    },
    {
      name: "DELETE /api/v1/signer/auth/tokens/{accessor}",
      method: "DELETE",
      path: "/api/v1/signer/auth/tokens/{accessor}",
      params: { accessor: "0123456789abcdef01234567" },
      auth: "management",
      body: "ignored",
      refusals: [404],
      bodyLimit: json,
    },
    get(`${sys}/seal-status`),
    {
      name: `POST ${sys}/init`,
      method: "POST",
      path: `${sys}/init`,
      body: {
        base: {
          setup_token: `sgl_${"A".repeat(43)}`,
          share_wrap: [`age:${v.ageRecipient}`],
          threshold: 1,
        },
        fields: [
          field(["setup_token"], TEXT),
          field(["share_wrap"], LIST),
          field(["share_wrap", 0], TEXT),
          field(["threshold"], INTEGER),
        ],
      },
      // Already initialized: a well-formed init is 409, so a hostile one may be refused either way.
      refusals: [400, 409],
      bodyLimit: json,
    },
    {
      name: `POST ${sys}/register`,
      method: "POST",
      path: `${sys}/register`,
      body: {
        base: { registration_token: `sgr_${"A".repeat(43)}` },
        fields: [field(["registration_token"], TEXT)],
      },
      refusals: [400, 401],
      bodyLimit: json,
    },
    get(`${sys}/share`, "operator"),
    ...(["unseal", "generate-root", "rotate-quorum/share"] as const).map(
      (operation): RouteSpec => ({
        name: `POST ${sys}/${operation}`,
        method: "POST",
        path: `${sys}/${operation}`,
        auth: "operator",
        body: { base: { share: foreignShare() }, fields: SHARE_FIELDS },
        // unseal: already unsealed (409); rotate-quorum/share: no rotation (409).
        refusals: operation === "generate-root" ? [400] : [400, 409],
        bodyLimit: json,
      }),
    ),
    {
      name: `POST ${sys}/rotate-quorum`,
      method: "POST",
      path: `${sys}/rotate-quorum`,
      auth: "management",
      body: {
        base: { share_wrap: [`age:${v.ageRecipient}`], threshold: 1 },
        fields: [
          field(["share_wrap"], LIST),
          field(["share_wrap", 0], TEXT),
          field(["threshold"], INTEGER),
        ],
      },
      refusals: [400],
      bodyLimit: json,
    },
    ...(
      [
        ["POST", `${sys}/seal`],
        ["DELETE", `${sys}/rotate-quorum`],
      ] as const
    ).map(
      ([method, path]): RouteSpec => ({
        name: `${method} ${path}`,
        method,
        path,
        auth: "management",
        body: "ignored",
        refusals: [400, 409],
        bodyLimit: json,
      }),
    ),
  ];
}

/** The cloud_kv key routes (keygen and writable enabled) of a signer with a cloud_kv table. */
export function cloudKvRoutes(v: RouteValues & { cloudKvBodyLimit: number }): RouteSpec[] {
  const keys = "/api/v1/signer/keys";
  return [
    {
      name: `POST ${keys}/generate`,
      method: "POST",
      path: `${keys}/generate`,
      auth: "management",
      body: { base: { count: 1 }, fields: [field(["count"], INTEGER)] },
      refusals: [400],
      bodyLimit: v.bodyLimit,
    },
    {
      name: `POST ${keys}`,
      method: "POST",
      path: keys,
      auth: "management",
      body: {
        base: { keystores: [v.keystore], passwords: [v.wrongPassword] },
        fields: IMPORT_FIELDS,
      },
      refusals: [400],
      bodyLimit: v.cloudKvBodyLimit,
      slowLoris: true,
    },
    {
      name: `DELETE ${keys}`,
      method: "DELETE",
      path: keys,
      auth: "management",
      body: { base: { pubkeys: [v.unknownKey] }, fields: DELETE_FIELDS },
      refusals: [400],
      bodyLimit: v.cloudKvBodyLimit,
    },
  ];
}
