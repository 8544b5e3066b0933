import {
  CloneType,
  type Static,
  type TLiteral,
  type TSchema,
  type TUnion,
  Type,
} from "@sinclair/typebox";
import { CidrText, RuleSchema } from "../auth/schema";

/**
 * The one source of truth for configuration: types, defaults, CLI flags, which values are
 * secret, and the text of docs/configuration.md. Environment variable names are derived from
 * the path (`SIGNER_` + path upper-cased, `__` between levels).
 *
 * Extra annotations on a schema node (read by walk.ts, flags.ts, redact.ts, docs.ts):
 * - `flag`: CLI flag name without dashes; `flagList`: "repeat" (one value per flag) or "comma".
 * - `secret`: "value" (redact the whole value) or "url" (redact the password in a URL).
 * - `expected`: wording for an error message where the type alone would read poorly.
 * - `wireShape`: a wire shape the API also receives, checked and worded by wire/check.ts.
 */

const strict = { additionalProperties: false } as const;

function int(
  min: number,
  max: number,
  fallback: number | undefined,
  description: string,
  extra = {},
) {
  return Type.Integer({ minimum: min, maximum: max, default: fallback, description, ...extra });
}

function oneOf<const T extends readonly string[]>(values: T, options: Record<string, unknown>) {
  const members = values.map((value) => Type.Literal(value));
  // TypeBox cannot infer a union from a mapped array; the cast restores the literal types.
  return Type.Union(members, {
    expected: `one of ${values.join(", ")}`,
    ...options,
  }) as unknown as TUnion<TLiteral<T[number]>[]>;
}

const StringList = (description: string, extra = {}) =>
  Type.Array(Type.String(), { description, ...extra });

const FilePath = (description: string, flag: string) =>
  Type.String({ minLength: 1, description, flag });

/** Present = the signing API speaks https only (sigil extension, docs/tls.md). */
const ServerTls = Type.Object(
  {
    cert_file: FilePath(
      "PEM certificate of the signing listener, then any intermediates (setting server.tls turns https on).",
      "server-tls-cert-file",
    ),
    key_file: FilePath(
      "PEM private key of cert_file (PKCS#8, PKCS#1 or SEC1; never logged).",
      "server-tls-key-file",
    ),
    key_password_file: Type.Optional(
      FilePath(
        "File holding the password of an encrypted key_file (one line).",
        "server-tls-key-password-file",
      ),
    ),
    client_ca_file: Type.Optional(
      FilePath(
        "PEM CA certificate(s); when set, clients must present a certificate one of them signed (mutual TLS).",
        "server-tls-client-ca-file",
      ),
    ),
  },
  strict,
);

const Server = Type.Object(
  {
    listen_address: Type.String({
      default: "0.0.0.0",
      description: "Address the signing API listens on.",
      flag: "server-listen-address",
    }),
    listen_port: int(0, 65535, 9000, "Port of the signing API (0 picks a free port).", {
      flag: "server-listen-port",
    }),
    request_timeout_seconds: int(1, 3600, 30, "A request still unanswered after this gets 503.", {
      flag: "server-request-timeout-seconds",
    }),
    graceful_shutdown_timeout_seconds: int(
      0,
      3600,
      25,
      "On SIGTERM/SIGINT, time allowed for in-flight requests before connections are closed.",
      { flag: "server-graceful-shutdown-timeout-seconds" },
    ),
    keep_alive_timeout_seconds: int(
      1,
      255,
      120,
      "An idle keep-alive connection is closed after this; longer than the 90 s pools of Go and Rust clients, announced to others in Keep-Alive (at most 255: Bun's limit).",
      { flag: "server-keep-alive-timeout-seconds" },
    ),
    host_allowlist: Type.Array(Type.String({ minLength: 1 }), {
      default: ["localhost", "127.0.0.1", "::1"],
      description:
        'Host header names the signing API answers (DNS-rebinding protection); the listen address is always allowed too; "*" allows any.',
      flag: "server-host-allowlist",
      flagList: "comma",
    }),
    cors_allowed_origins: Type.Union([Type.Array(Type.String()), Type.Null()], {
      default: null,
      description: 'Origins allowed by CORS ("*" for any); null disables CORS headers.',
      flag: "cors-allowed-origins",
      flagList: "comma",
      expected: "a list of origins or null",
    }),
    seccomp: Type.Boolean({
      default: false,
      description:
        "Once started, allow only the system calls a signer needs: no program can be run, no process traced, no new listener opened (Linux x86_64 and aarch64; docs/seccomp.md).",
    }),
    max_request_body_bytes: int(
      1024,
      1 << 30,
      16 << 20,
      "Larger request bodies get 413 (sigil extension). 16 MiB: a Gloas execution payload envelope carries the whole payload as hex.",
    ),
    tls: Type.Optional(ServerTls),
  },
  strict,
);

const Metrics = Type.Object(
  {
    listen_address: Type.String({
      default: "127.0.0.1",
      description:
        "Address of the Prometheus metrics listener (plain http, no auth): loopback unless set, as Web3Signer's metrics-host.",
      flag: "metrics-listen-address",
    }),
    listen_port: int(0, 65535, 3000, "Port of the metrics listener.", {
      flag: "metrics-listen-port",
    }),
    refresh_interval_seconds: int(
      1,
      86400,
      30,
      "How often gauges that need a scan are refreshed.",
      {
        flag: "metrics-refresh-interval",
      },
    ),
  },
  strict,
);

const Filesystem = Type.Object(
  {
    paths: StringList("Directories of key descriptor files (Web3Signer format).", {
      default: [],
      flag: "filesystem-keystores-path",
      flagList: "repeat",
    }),
    keystore_load_concurrency: int(1, 4096, 128, "Keystores decrypted in parallel at start-up."),
    raw_load_concurrency: int(1, 4096, 128, "Raw key files read in parallel at start-up."),
    cache: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          description:
            "Keep the keystores' secrets sealed under a key derived from all their passwords, so a restart runs one KDF instead of one per keystore, and the raw keys' public keys, so a restart does not derive them (docs/keys.md).",
        }),
        path: Type.String({
          default: "./keystore_cache.json",
          minLength: 1,
          description:
            "Cache file (mode 0600), rewritten atomically when keys change; the raw keys' public-key cache is this path with .pubkeys appended.",
        }),
      },
      strict,
    ),
  },
  strict,
);

const Keygen = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description: "Enable POST /api/v1/signer/keys/generate.",
    }),
    max_items_per_request: int(1, 100_000, 100, "Keys per keygen request."),
    max_concurrent_keygen: int(1, 1024, 16, "Parallel keygen workers."),
    request_timeout_seconds: int(1, 86400, 600, "Timeout of a keygen request."),
    backup: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          description: "Return the mnemonic age-encrypted.",
        }),
        recipients: StringList("age public keys (age1…) the mnemonic is encrypted to.", {
          default: [],
        }),
      },
      strict,
    ),
  },
  strict,
);

const Writable = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: "Enable key import/delete in cloud_kv." }),
    max_concurrent_writes: int(1, 1024, 16, "Parallel write workers."),
    request_timeout_seconds: int(1, 86400, 600, "Timeout of an import request."),
    max_items_per_request: int(1, 100_000, 100, "Keys per import request."),
    max_request_body_bytes: int(
      1024,
      1 << 30,
      64 << 20,
      "Body limit of cloud_kv import/delete requests, which may carry slashing history (sigil extension).",
    ),
  },
  strict,
);

const CloudKv = Type.Object(
  {
    table: Type.Optional(Type.String({ minLength: 3, description: "DynamoDB table of keys." })),
    status_filter: StringList("Key statuses loaded.", { default: ["active"], minItems: 1 }),
    key_refresh_interval_minutes: int(0, 10080, 10, "Reload interval; 0 disables refresh."),
    max_concurrent_reads: int(1, 1024, 16, "Scan segments read at once."),
    unseal_timeout_minutes: Type.Optional(
      int(
        0,
        10080,
        undefined,
        "A partial unseal (and a pending generate-root or rotate-quorum) expires after this; unset or 0 never.",
      ),
    ),
    kms_key_arns: Type.Optional(StringList("KMS keys that wrap the unseal shares.")),
    kms_threshold: Type.Optional(int(1, 255, undefined, "Shares needed to unseal.")),
    keygen: Keygen,
    writable: Writable,
  },
  strict,
);

const KeyManagerApi = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description: "Serve the Key Manager API (/eth/v1/keystores).",
    }),
    max_concurrent_reads: int(1, 1024, 50, "Concurrent GET/DELETE requests."),
    max_concurrent_writes: int(1, 1024, 10, "Concurrent POST requests."),
    request_timeout_seconds: int(1, 3600, 30, "Timeout of a Key Manager API request."),
    max_items_per_request: int(1, 10_000, 100, "Keystores per import or delete request."),
    max_request_body_bytes: int(
      1024,
      1 << 30,
      64 << 20,
      "Body limit of Key Manager requests, which may carry slashing history (sigil extension).",
    ),
  },
  strict,
);

const LegacyKeyManagerApi = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: "Older form of key_sources.key_manager_api.enabled." }),
    ),
    max_concurrent: Type.Optional(
      int(1, 1024, undefined, "Older form of key_sources.key_manager_api.max_concurrent_writes."),
    ),
  },
  strict,
);

const Antislashing = Type.Object(
  {
    backend: oneOf(["noop", "sqlite", "postgres", "dynamodb"], {
      default: "sqlite",
      description: "Slashing protection database.",
      flag: "antislashing",
    }),
    path: Type.String({
      default: "./slashing_protection.sqlite",
      minLength: 1,
      description: "SQLite file (sqlite backend).",
      flag: "antislashing-sqlite-path",
    }),
    url: Type.Optional(
      Type.String({
        description:
          "postgres://user:pass@host/db; TLS unless ?sslmode=disable (postgres backend).",
        flag: "antislashing-postgres-url",
        secret: "url",
      }),
    ),
    pool_size: int(1, 1000, 16, "PostgreSQL connections.", {
      flag: "antislashing-postgres-pool-size",
    }),
    force_ipv4: Type.Boolean({
      default: false,
      description: "Resolve the PostgreSQL host to IPv4 only.",
      flag: "antislashing-postgres-force-ipv4",
    }),
    table: Type.Optional(
      Type.String({
        minLength: 3,
        description: "DynamoDB table (dynamodb backend).",
        flag: "antislashing-dynamodb-table",
      }),
    ),
    pruning_epochs_to_keep: int(
      0,
      Number.MAX_SAFE_INTEGER,
      0,
      "sqlite/postgres: keep this many recent epochs of history per validator; 0 keeps everything.",
    ),
    pruning_interval_hours: int(
      1,
      8760,
      24,
      "How often pruning runs (when enabled), starting at start-up.",
    ),
    max_future_epochs: int(
      0,
      1_000_000,
      2,
      "Refuse blocks and attestations more than this many epochs after the network's wall-clock epoch (off when the genesis time is unknown).",
    ),
  },
  strict,
);

const OpenTelemetry = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: "Export traces over OTLP gRPC." }),
    endpoint: Type.String({ default: "http://localhost:4317", description: "OTLP gRPC endpoint." }),
    service_name: Type.String({
      default: "signer-service",
      minLength: 1,
      description: "service.name of spans.",
    }),
  },
  strict,
);

const ForkVersion = (description: string) =>
  Type.Optional(
    Type.String({
      pattern: "^0x[0-9a-fA-F]{8}$",
      expected: "4 bytes of hex, like 0x00000000",
      description,
    }),
  );

const NetworkConfig = Type.Object(
  {
    genesis_fork_version: ForkVersion(
      "Genesis fork version (builder domain of VALIDATOR_REGISTRATION); a spec config `network` sets it instead.",
    ),
    capella_fork_version: ForkVersion(
      "Capella fork version (VOLUNTARY_EXIT domain from Deneb on, EIP-7044); a spec config `network` sets it instead.",
    ),
    deneb_fork_epoch: Type.Optional(
      int(
        0,
        Number.MAX_SAFE_INTEGER,
        undefined,
        "Deneb activation epoch, a huge value if not scheduled; a spec config `network` sets it instead.",
      ),
    ),
    gloas_fork_version: ForkVersion(
      "Gloas fork version; with gloas_fork_epoch, which container a bare AGGREGATE_AND_PROOF is hashed with. A spec config `network` sets it instead.",
    ),
    gloas_fork_epoch: Type.Optional(
      int(
        0,
        Number.MAX_SAFE_INTEGER,
        undefined,
        "Gloas activation epoch: schedules Gloas on a named network before a release knows it (mainnet, hoodi: not scheduled). A spec config `network` sets it instead.",
      ),
    ),
    genesis_validators_root: Type.Optional(
      Type.String({
        pattern: "^0x[0-9a-fA-F]{64}$",
        expected: "32 bytes of hex, like 0x4b36…fe95",
        description:
          "The chain's genesis validators root: written into a new slashing protection database, checked at every start.",
      }),
    ),
    genesis_time: Type.Optional(
      int(
        0,
        Number.MAX_SAFE_INTEGER,
        undefined,
        "Genesis time (Unix seconds) for antislashing.max_future_epochs; without it a spec config's MIN_GENESIS_TIME, else the bound is off.",
      ),
    ),
    seconds_per_slot: Type.Optional(
      int(
        1,
        3600,
        undefined,
        "Slot length in seconds, 12 if unset; a spec config `network` sets it instead.",
      ),
    ),
  },
  strict,
);

const Bls = Type.Object(
  {
    backend: oneOf(["auto", "blst", "noble"], {
      default: "auto",
      description:
        "BLS implementation: auto = blst (native) when it loads, else noble (pure TypeScript).",
      flag: "bls-backend",
    }),
    workers: Type.Optional(
      // No `default` key at all: unset means "from the core count", worked out at start-up.
      Type.Integer({
        minimum: 0,
        maximum: 256,
        description:
          "Worker threads that sign, each holding its share of the keys; 0 signs on the main thread; unset = one per core.",
        flag: "bls-workers",
      }),
    ),
  },
  strict,
);

const Logging = Type.Object(
  {
    level: Type.String({
      default: "info",
      description: "Level with EnvFilter directives, e.g. warn,antislashing=debug.",
    }),
    format: oneOf(["text", "json"], { default: "text", description: "Log line format." }),
    log_color: Type.Optional(
      Type.Boolean({ description: "Colour the level; unset = when stderr is a TTY." }),
    ),
  },
  strict,
);

const operationNames = () => StringList("Signing operation names.");
const scopeNames = () => StringList("Scope names.");

const legacyPolicyFields = {
  allowed_keys: Type.Optional(StringList("Public keys this policy may sign with (sign scope).")),
  allowed_scopes: Type.Optional(scopeNames()),
  denied_scopes: Type.Optional(scopeNames()),
  allowed_signing_operations: Type.Optional(operationNames()),
  denied_signing_operations: Type.Optional(operationNames()),
};

const LegacyPolicy = Type.Object(
  {
    token: Type.String({ description: "Basic-auth token or env:VAR.", secret: "value" }),
    ...legacyPolicyFields,
  },
  strict,
);

/**
 * A wire shape inside the config (a policy rule, a CIDR): checked whole by wire/check.ts, so a
 * problem in it reads as the Auth API and the CLI word it (load.ts).
 */
const wireShape = <T extends TSchema>(schema: T): T => CloneType(schema, { wireShape: true });

/** The Auth API's policy, with its rules; the name stays looser than the API's (any non-empty string). */
export const PolicySchema = Type.Object(
  { name: Type.String({ minLength: 1 }), rules: Type.Array(wireShape(RuleSchema)) },
  strict,
);

const StaticAuth = Type.Object(
  {
    policies: Type.Array(PolicySchema, { default: [] }),
    anonymous: Type.Optional(Type.Object({ policies: Type.Array(Type.String()) }, strict)),
    tokens: Type.Optional(
      Type.Array(
        Type.Object(
          {
            secret: Type.String({ description: "Token or env:VAR.", secret: "value" }),
            policies: Type.Array(Type.String(), { minItems: 1 }),
            token_bound_cidrs: Type.Optional(
              Type.Array(wireShape(CidrText), { description: "Source CIDRs." }),
            ),
          },
          strict,
        ),
      ),
    ),
  },
  strict,
);

/** A section's sqlite or PostgreSQL database: the file, or the URL and its pool. */
function sqlDatabaseFields(poolSize: number) {
  return {
    path: Type.Optional(
      Type.String({ minLength: 1, description: "SQLite file (sqlite backend)." }),
    ),
    url: Type.Optional(
      Type.String({ description: "PostgreSQL URL (postgres backend).", secret: "url" }),
    ),
    pool_size: int(1, 1000, poolSize, "PostgreSQL connections."),
    force_ipv4: Type.Boolean({
      default: false,
      description: "Resolve the PostgreSQL host to IPv4 only.",
    }),
  };
}

const SignerState = Type.Object(
  {
    backend: oneOf(["sqlite", "postgres", "dynamodb"], {
      description: "Store of stateful auth and seal data.",
    }),
    ...sqlDatabaseFields(4),
    table: Type.Optional(
      Type.String({ minLength: 3, description: "DynamoDB table (dynamodb backend)." }),
    ),
  },
  strict,
);

/** A Commit-Boost module allowed to ask for signatures (commit-boost-client `[[modules]]`). */
const CommitBoostModule = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      description: "The module's id: the `module` claim of its JWTs (Commit-Boost `id`).",
    }),
    jwt_secret: Type.String({
      minLength: 1,
      description: "The module's JWT secret (CB_SIGNER_JWT of the module) or env:VAR.",
      secret: "value",
    }),
    signing_id: Type.String({
      pattern: "^0x[0-9a-fA-F]{64}$",
      expected: "32 bytes of hex, like 0x6a33…431b",
      description:
        "The module's signing id, signed into every request (Commit-Boost `signing_id`).",
    }),
    pubkeys: Type.Optional(
      StringList(
        "Consensus keys the module may see and sign with (and delegate from); unset = every key.",
      ),
    ),
  },
  strict,
);

/** The Commit-Boost listener's https: server.tls's fields, without its CLI flags. */
const CommitBoostTls = Type.Object(
  {
    cert_file: Type.String({
      minLength: 1,
      description: "PEM certificate of the Commit-Boost listener, then any intermediates.",
    }),
    key_file: Type.String({ minLength: 1, description: "PEM private key of cert_file." }),
    key_password_file: Type.Optional(
      Type.String({ minLength: 1, description: "File holding the password of key_file." }),
    ),
    client_ca_file: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "PEM CA certificate(s) that must have signed client certificates (mutual TLS).",
      }),
    ),
  },
  strict,
);

/** The Commit-Boost proxy key store; signer_state's database when unset. */
const CommitBoostProxyStore = Type.Object(
  {
    backend: oneOf(["sqlite", "postgres", "dynamodb"], {
      description: "Where proxy keys are stored.",
    }),
    ...sqlDatabaseFields(2),
    table: Type.Optional(
      Type.String({
        minLength: 3,
        description: "DynamoDB table with signer_state's layout (dynamodb backend).",
      }),
    ),
  },
  strict,
);

/** The Commit-Boost signer API on its own listener (docs/commit-boost.md); off by default. */
const CommitBoost = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description: "Serve the Commit-Boost signer API (v0.10) on its own listener.",
      flag: "commit-boost-enabled",
    }),
    listen_address: Type.String({
      default: "127.0.0.1",
      description: "Address of the Commit-Boost listener.",
      flag: "commit-boost-listen-address",
    }),
    listen_port: int(
      0,
      65535,
      20000,
      "Port of the Commit-Boost listener (Commit-Boost's default).",
      {
        flag: "commit-boost-listen-port",
      },
    ),
    host_allowlist: Type.Array(Type.String({ minLength: 1 }), {
      default: ["localhost", "127.0.0.1", "::1"],
      description:
        'Host header names the Commit-Boost listener answers; its listen address is always allowed; "*" allows any.',
    }),
    tls: Type.Optional(CommitBoostTls),
    chain_id: Type.Optional(
      int(
        1,
        Number.MAX_SAFE_INTEGER,
        undefined,
        "Chain id signed into requests; default from the network (1, 11155111, 560048, a spec config's DEPOSIT_CHAIN_ID).",
      ),
    ),
    modules: Type.Array(CommitBoostModule, {
      default: [],
      description: "The modules allowed to sign, each with its JWT secret and signing id.",
    }),
    jwt_auth_fail_limit: int(
      1,
      1000,
      3,
      "Failed authentications from one address within jwt_auth_fail_window_seconds that block it.",
    ),
    jwt_auth_fail_window_seconds: int(1, 86400, 300, "Window in which failures are counted."),
    jwt_auth_block_seconds: int(
      1,
      86400,
      300,
      "How long a blocked address gets 429, from its last failure.",
    ),
    max_proxies_per_key: int(
      1,
      100_000,
      16,
      "Proxy keys one module may generate per consensus key; more get 400.",
    ),
    proxy_store: Type.Optional(CommitBoostProxyStore),
  },
  strict,
);

export const ConfigSchema = Type.Object(
  {
    server: Server,
    metrics: Metrics,
    network: Type.String({
      minLength: 1,
      default: "mainnet",
      expected: "mainnet, hoodi, sepolia, or the path of a consensus-spec config.yaml",
      description:
        "Ethereum network: mainnet, hoodi, sepolia, or the path of a devnet's consensus-spec config.yaml (PRESET_BASE mainnet or minimal).",
      flag: "network",
    }),
    network_config: Type.Optional(NetworkConfig),
    bls: Bls,
    key_sources: Type.Object(
      { filesystem: Filesystem, cloud_kv: CloudKv, key_manager_api: KeyManagerApi },
      strict,
    ),
    key_manager_api: Type.Optional(LegacyKeyManagerApi),
    max_concurrent_signing_jobs: int(1, 100_000, 500, "Signing jobs running at once.", {
      flag: "max-concurrent-signing-jobs",
    }),
    signing_queue_buffer_size: int(0, 10_000_000, 10000, "Signing jobs waiting; more get 503.", {
      flag: "signing-queue-buffer-size",
    }),
    antislashing: Antislashing,
    canary_keys: StringList(
      "Public keys that should never sign; signing them is logged and counted.",
      {
        default: [],
      },
    ),
    opentelemetry: OpenTelemetry,
    logging: Logging,
    auth_policies: Type.Optional(
      Type.Record(Type.String(), LegacyPolicy, {
        description: "Legacy Basic-auth policies by name.",
      }),
    ),
    unauthenticated_policy: Type.Optional(Type.Object(legacyPolicyFields, strict)),
    static_auth: Type.Optional(StaticAuth),
    signer_state: Type.Optional(SignerState),
    commit_boost: CommitBoost,
  },
  strict,
);

export type Config = Static<typeof ConfigSchema>;
export type LegacyPolicyConfig = Static<typeof LegacyPolicy>;
export type PolicyConfig = Static<typeof PolicySchema>;
