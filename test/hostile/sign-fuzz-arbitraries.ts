// The fast-check arbitraries of the sign-route fuzz: where a request goes (path key, Content-Type)
// and its body: random JSON or text, or a valid request of one of the fifteen operations (the
// five Gloas ones under every name, key and shape clients use) with up to three mutations. Epochs, slots and roots are drawn from narrow ranges so that repeats, double
// votes, surrounds and watermark refusals are frequent.
import fc from "fast-check";
import { GVR, INTEROP_KEYS } from "../support/slashing";
import { type Path, setAt, valueAt } from "./cases";
import { isObject, judgeSignRequest } from "./sign-oracle";

export interface Target {
  readonly identifier: string;
  /** The normalised public key, or undefined when the identifier is malformed. */
  readonly pubkey?: string;
  readonly loaded: boolean;
}

export type Mutation =
  | { readonly kind: "drop"; readonly pick: number }
  | { readonly kind: "retype"; readonly pick: number; readonly variant: number }
  | { readonly kind: "flipHex"; readonly pick: number; readonly variant: number }
  | { readonly kind: "bigNumber"; readonly pick: number; readonly variant: number }
  | { readonly kind: "forkInfo"; readonly variant: number }
  | { readonly kind: "extra"; readonly pick: number; readonly value: unknown }
  | { readonly kind: "signingRoot"; readonly variant: number }
  | {
      readonly kind: "duplicate";
      readonly pick: number;
      readonly value: unknown;
      readonly last: boolean;
    }
  | { readonly kind: "inflate" };

export type Body =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "json"; readonly value: unknown; readonly mutations: readonly Mutation[] };

export interface Sample {
  readonly target: Target;
  readonly contentType?: string;
  readonly body: Body;
}

const EPOCH = 370_000;
const SLOT = EPOCH * 32;
const UNKNOWN_KEY = `0x${"ab".repeat(48)}`;
const OTHER_GVR = `0x${"77".repeat(32)}`;
const MAINNET_FORK_INFO = {
  fork: { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" },
  genesis_validators_root: GVR,
};

// ---- Where the request goes ----

const targetArb: fc.Arbitrary<Target> = fc.oneof(
  {
    weight: 14,
    arbitrary: fc
      .record({ k: fc.integer({ min: 0, max: 3 }), style: fc.constantFrom("0x", "upper", "bare") })
      .map(({ k, style }) => {
        const pubkey = INTEROP_KEYS[k] ?? "";
        const digits = pubkey.slice(2);
        const identifier =
          style === "0x" ? pubkey : style === "upper" ? `0X${digits.toUpperCase()}` : digits;
        return { identifier, pubkey, loaded: true };
      }),
  },
  {
    weight: 1,
    arbitrary: fc.constant({ identifier: UNKNOWN_KEY, pubkey: UNKNOWN_KEY, loaded: false }),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom("0x1234", `0x${"zz".repeat(48)}`, `${UNKNOWN_KEY}00`, "%00")
      .map((identifier) => ({ identifier, loaded: false })),
  },
);

const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 40, arbitrary: fc.constant("application/json") },
  { weight: 2, arbitrary: fc.constant("application/json; charset=utf-8") },
  { weight: 1, arbitrary: fc.constantFrom("text/plain", "application/x-www-form-urlencoded") },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

// ---- Valid requests ----

/** A uint64 in [min, max], as a decimal string or a JSON number (both valid). */
const uint = (min: number, max: number) =>
  fc.integer({ min, max }).chain((n) => fc.constantFrom<string | number>(String(n), n));
const hex = (bytes: number) =>
  fc
    .uint8Array({ minLength: bytes, maxLength: bytes })
    .map((b) => `0x${Buffer.from(b).toString("hex")}`);
/** Two roots only: the same slot or target with another root is a double vote. */
const root = fc.constantFrom(`0x${"11".repeat(32)}`, `0x${"22".repeat(32)}`);
const typeName = (name: string) => fc.constantFrom(name, name.toLowerCase());
/**
 * Gloas by fork_info: mainnet has not scheduled it, so a bare aggregate with committee_bits is
 * Gloas' only when fork_info gives Gloas' version for its epoch (around EPOCH: both ways).
 */
const GLOAS_FORK_INFO = fc.record({
  fork: fc.record({
    previous_version: fc.constant("0x06000000"),
    current_version: fc.constant("0x07000000"),
    epoch: uint(EPOCH, EPOCH + 10),
  }),
  genesis_validators_root: fc.constant(GVR),
});
const forkInfo = fc.oneof(
  { weight: 8, arbitrary: fc.constant(MAINNET_FORK_INFO) },
  { weight: 3, arbitrary: GLOAS_FORK_INFO },
  {
    weight: 1,
    arbitrary: fc.record({
      fork: fc.record({
        previous_version: fc.constantFrom("0x03000000", "0x04000000"),
        current_version: fc.constantFrom("0x05000000", "0x06000000"),
        epoch: uint(0, 400_000),
      }),
      genesis_validators_root: fc.constantFrom(GVR, OTHER_GVR),
    }),
  },
);
const bitlist = fc.uint8Array({ minLength: 1, maxLength: 4 }).map((b) => {
  const bytes = Uint8Array.from(b);
  bytes[bytes.length - 1] ||= 1;
  return `0x${Buffer.from(bytes).toString("hex")}`;
});
/** Source a few epochs before target, now and then after it; all within 200 epochs. */
const votes = fc
  .record({ target: fc.integer({ min: 0, max: 200 }), gap: fc.integer({ min: -1, max: 6 }) })
  .chain(({ target, gap }) =>
    fc.record({
      source: fc.record({
        epoch: uint(EPOCH + Math.max(0, target - gap), EPOCH + Math.max(0, target - gap)),
        root,
      }),
      target: fc.record({ epoch: uint(EPOCH + target, EPOCH + target), root }),
    }),
  );
const attestationData = fc
  .record({ slot: uint(SLOT, SLOT + 300), index: uint(0, 3), beacon_block_root: root, votes })
  .map(({ votes: { source, target }, ...rest }) => ({ ...rest, source, target }));
const aggregate = (electra: boolean) =>
  fc.record({
    aggregator_index: uint(0, 1000),
    aggregate: fc.record({
      aggregation_bits: bitlist,
      data: attestationData,
      signature: hex(96),
      ...(electra ? { committee_bits: hex(8) } : {}),
    }),
    selection_proof: hex(96),
  });

const envelope = (type: string, key: string, payload: fc.Arbitrary<unknown>) =>
  fc.record({ type: typeName(type), fork_info: forkInfo, [key]: payload });

// ---- Gloas: the five new types, each under every name and body key, wrapped or bare ----

/** A uint64 that is small, or anywhere up to 2^64-1 as a decimal string. */
const anyUint64 = fc.oneof(
  uint(0, 1_000_000),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
);
const hexList = (min: number, max: number) =>
  fc
    .uint8Array({ minLength: min, maxLength: max })
    .map((b) => `0x${Buffer.from(b).toString("hex")}`);
const upTo = <T>(arbitrary: fc.Arbitrary<T>, n: number) => fc.array(arbitrary, { maxLength: n });
const gloasSlot = uint(SLOT, SLOT + 300);

/** A Gloas request: one of `types` with one of `keys`, `{version: GLOAS, data}` or bare. */
function gloasRequest(
  types: readonly string[],
  keys: readonly string[],
  data: fc.Arbitrary<unknown>,
  forkInfoRequired = true,
) {
  return fc
    .record({
      type: fc.constantFrom(...types.flatMap((t) => [t, t.toLowerCase()])),
      key: fc.constantFrom(...keys),
      forkInfo,
      sendForkInfo: forkInfoRequired ? fc.constant(true) : fc.boolean(),
      payload: fc.oneof(data, fc.record({ version: fc.constantFrom("GLOAS", "gloas"), data })),
    })
    .map(({ type, key, forkInfo: info, sendForkInfo, payload }) => ({
      type,
      ...(sendForkInfo ? { fork_info: info } : {}),
      [key]: payload,
    }));
}

const executionPayload = fc.record({
  parent_hash: hex(32),
  fee_recipient: hex(20),
  state_root: hex(32),
  receipts_root: hex(32),
  logs_bloom: hex(256),
  prev_randao: hex(32),
  block_number: anyUint64,
  gas_limit: anyUint64,
  gas_used: anyUint64,
  timestamp: anyUint64,
  extra_data: hexList(0, 32),
  base_fee_per_gas: fc.oneof(
    uint(0, 1_000_000),
    fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map(String),
  ),
  block_hash: hex(32),
  transactions: upTo(hexList(0, 8), 2),
  withdrawals: upTo(
    fc.record({
      index: anyUint64,
      validator_index: anyUint64,
      address: hex(20),
      amount: anyUint64,
    }),
    1,
  ),
  blob_gas_used: anyUint64,
  excess_blob_gas: anyUint64,
  block_access_list: hexList(0, 4),
  slot_number: gloasSlot,
});

const executionRequests = fc.record({
  deposits: upTo(
    fc.record({
      pubkey: hex(48),
      withdrawal_credentials: hex(32),
      amount: anyUint64,
      signature: hex(96),
      index: anyUint64,
    }),
    1,
  ),
  withdrawals: upTo(
    fc.record({ source_address: hex(20), validator_pubkey: hex(48), amount: anyUint64 }),
    1,
  ),
  consolidations: upTo(
    fc.record({ source_address: hex(20), source_pubkey: hex(48), target_pubkey: hex(48) }),
    1,
  ),
  builder_deposits: upTo(
    fc.record({
      pubkey: hex(48),
      withdrawal_credentials: hex(32),
      amount: anyUint64,
      signature: hex(96),
    }),
    1,
  ),
  builder_exits: upTo(fc.record({ source_address: hex(20), pubkey: hex(48) }), 1),
});

const GLOAS_REQUESTS: fc.Arbitrary<unknown>[] = [
  gloasRequest(
    ["PAYLOAD_ATTESTATION_MESSAGE", "PAYLOAD_ATTESTATION"],
    ["payload_attestation_message", "payload_attestation_data", "payload_attestation"],
    fc.record({
      beacon_block_root: root,
      slot: gloasSlot,
      payload_present: fc.boolean(),
      blob_data_available: fc.boolean(),
    }),
  ),
  gloasRequest(
    ["EXECUTION_PAYLOAD_ENVELOPE"],
    ["execution_payload_envelope"],
    fc.record({
      payload: executionPayload,
      execution_requests: executionRequests,
      // The self-build index (the proposer's own key signs) half the time.
      builder_index: fc.oneof(fc.constant("18446744073709551615"), uint(0, 100)),
      beacon_block_root: root,
      parent_beacon_block_root: hex(32),
    }),
  ),
  gloasRequest(
    ["PROPOSER_PREFERENCES"],
    ["proposer_preferences"],
    fc.record({
      dependent_root: hex(32),
      proposal_slot: gloasSlot,
      validator_index: uint(0, 1000),
      fee_recipient: hex(20),
      target_gas_limit: anyUint64,
    }),
  ),
  gloasRequest(
    ["EXECUTION_PAYLOAD_BID"],
    ["execution_payload_bid"],
    fc.record({
      parent_block_hash: hex(32),
      parent_block_root: root,
      block_hash: hex(32),
      prev_randao: hex(32),
      fee_recipient: hex(20),
      gas_limit: anyUint64,
      builder_index: anyUint64,
      slot: gloasSlot,
      value: anyUint64,
      execution_payment: anyUint64,
      blob_kzg_commitments: upTo(hex(48), 2),
      execution_requests_root: hex(32),
    }),
  ),
  // Over the genesis domain: fork_info is not needed (and changes nothing when sent).
  gloasRequest(
    ["BUILDER_REQUEST_AUTH", "REQUEST_AUTH"],
    ["builder_request_auth", "request_auth"],
    fc.record({ data: hexList(1, 40), slot: gloasSlot }),
    false,
  ),
];

const VALID_REQUESTS: fc.Arbitrary<unknown>[] = [
  envelope("ATTESTATION", "attestation", attestationData),
  envelope(
    "BLOCK_V2",
    "beacon_block",
    fc.record({
      version: fc.constantFrom("ELECTRA", "DENEB", "FULU", "electra", "PHASE0", "GLOAS", "gloas"),
      block_header: fc.record({
        slot: uint(SLOT, SLOT + 60),
        proposer_index: uint(0, 100),
        parent_root: root,
        state_root: hex(32),
        body_root: hex(32),
      }),
    }),
  ),
  envelope("AGGREGATION_SLOT", "aggregation_slot", fc.record({ slot: uint(SLOT, SLOT + 300) })),
  fc.oneof(
    envelope("AGGREGATE_AND_PROOF", "aggregate_and_proof", aggregate(false)),
    envelope("AGGREGATE_AND_PROOF", "aggregate_and_proof", aggregate(true)),
    fc.constantFrom("ELECTRA", "FULU", "DENEB", "PHASE0", "GLOAS").chain((version) =>
      envelope(
        "AGGREGATE_AND_PROOF_V2",
        "aggregate_and_proof",
        fc.record({
          version: fc.constant(version),
          data: aggregate(["ELECTRA", "FULU", "GLOAS"].includes(version)),
        }),
      ),
    ),
  ),
  envelope("RANDAO_REVEAL", "randao_reveal", fc.record({ epoch: uint(EPOCH, EPOCH + 10) })),
  envelope(
    "VOLUNTARY_EXIT",
    "voluntary_exit",
    // Around the Deneb epoch (269568), where the exit domain switches to Capella's.
    fc.record({ epoch: uint(260_000, 280_000), validator_index: uint(0, 1000) }),
  ),
  envelope(
    "SYNC_COMMITTEE_MESSAGE",
    "sync_committee_message",
    fc.record({ beacon_block_root: hex(32), slot: uint(SLOT, SLOT + 300) }),
  ),
  envelope(
    "SYNC_COMMITTEE_SELECTION_PROOF",
    "sync_aggregator_selection_data",
    fc.record({ slot: uint(SLOT, SLOT + 300), subcommittee_index: uint(0, 3) }),
  ),
  envelope(
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
    "contribution_and_proof",
    fc.record({
      aggregator_index: uint(0, 1000),
      contribution: fc.record({
        slot: uint(SLOT, SLOT + 300),
        beacon_block_root: hex(32),
        subcommittee_index: uint(0, 3),
        aggregation_bits: hex(16),
        signature: hex(96),
      }),
      selection_proof: hex(96),
    }),
  ),
  fc.record(
    {
      type: typeName("VALIDATOR_REGISTRATION"),
      fork_info: forkInfo,
      validator_registration: fc.record({
        fee_recipient: hex(20),
        gas_limit: uint(0, 60_000_000),
        timestamp: uint(1_600_000_000, 1_800_000_000),
        pubkey: hex(48),
      }),
    },
    { requiredKeys: ["type", "validator_registration"] },
  ),
  ...GLOAS_REQUESTS,
];

// ---- Mutations ----

const often = <T>(arbitrary: fc.Arbitrary<T>) => ({ weight: 4, arbitrary });
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  often(fc.record({ kind: fc.constant("drop" as const), pick: fc.nat() })),
  often(fc.record({ kind: fc.constant("retype" as const), pick: fc.nat(), variant: fc.nat() })),
  often(fc.record({ kind: fc.constant("flipHex" as const), pick: fc.nat(), variant: fc.nat() })),
  often(fc.record({ kind: fc.constant("bigNumber" as const), pick: fc.nat(), variant: fc.nat() })),
  often(fc.record({ kind: fc.constant("forkInfo" as const), variant: fc.nat() })),
  often(
    fc.record({
      kind: fc.constant("extra" as const),
      pick: fc.nat(),
      value: fc.jsonValue({ maxDepth: 2 }),
    }),
  ),
  often(fc.record({ kind: fc.constant("signingRoot" as const), variant: fc.nat() })),
  often(
    fc.record({
      kind: fc.constant("duplicate" as const),
      pick: fc.nat(),
      value: fc.jsonValue({ maxDepth: 1 }),
      last: fc.boolean(),
    }),
  ),
  // Over the body limit: only needs to happen now and then.
  { weight: 1, arbitrary: fc.constant({ kind: "inflate" as const }) },
);

const RETYPES: unknown[] = [true, 7, "x", [], {}, null, 1.5, "-1", -3];
const BIG_NUMBERS: unknown[] = [
  "18446744073709551615",
  "18446744073709551616",
  "9007199254740993",
  9007199254740991,
  9007199254740992,
  1e21,
  -1,
  "0",
  0,
  "00000000000000000001",
  "000000000000000000001",
];

type Node = Record<string | number, unknown>;

/** Every path in a JSON value below its root, containers included. */
function pathsOf(value: unknown, at: Path = []): Path[] {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const path = [...at, Array.isArray(value) ? Number(key) : key];
    return [path, ...pathsOf(child, path)];
  });
}

const pick = <T>(items: readonly T[], n: number): T | undefined =>
  items[n % Math.max(items.length, 1)];

function flip(hexText: string, variant: number): string {
  const position = 2 + (variant % Math.max(hexText.length - 2, 1));
  const digit = hexText[position] ?? "0";
  switch (variant % 4) {
    case 0: // another valid digit
      return `${hexText.slice(0, position)}${digit === "0" ? "1" : "0"}${hexText.slice(position + 1)}`;
    case 1: // not hex
      return `${hexText.slice(0, position)}g${hexText.slice(position + 1)}`;
    case 2: // one digit short
      return hexText.slice(0, -1);
    default: // upper case: still valid
      return `0x${hexText.slice(2).toUpperCase()}`;
  }
}

function mutateForkInfo(body: Node, variant: number): void {
  // A retype may have left a string or a list where fork_info or its fork was.
  const info = isObject(body.fork_info) ? body.fork_info : undefined;
  const fork = isObject(info?.fork) ? info.fork : undefined;
  switch (variant % 8) {
    case 0:
      delete body.fork_info;
      return;
    case 1:
      body.fork_info = null;
      return;
    case 2:
      if (fork)
        [fork.previous_version, fork.current_version] = [
          fork.current_version,
          fork.previous_version,
        ];
      return;
    case 3:
      if (fork) fork.epoch = "18446744073709551615";
      return;
    case 4:
      if (fork) fork.epoch = "0";
      return;
    case 5:
      if (info) info.genesis_validators_root = OTHER_GVR;
      return;
    case 6:
      if (info) info.genesis_validators_root = "0x1234";
      return;
    default:
      if (fork) fork.previous_version = "0x0400000000";
  }
}

function applyMutation(body: unknown, mutation: Mutation): void {
  const paths = pathsOf(body);
  const ofKind = (test: (v: unknown) => boolean) => paths.filter((p) => test(valueAt(body, p)));
  switch (mutation.kind) {
    case "drop": {
      const path = pick(paths, mutation.pick);
      if (path) setAt(body, path, undefined, true);
      return;
    }
    case "retype": {
      const path = pick(paths, mutation.pick);
      // A copy: RETYPES' [] and {} are shared by every sample, and a later mutation of this body
      // (an extra field, a retype inside it) must not change them, nor make them cyclic.
      if (path) setAt(body, path, structuredClone(pick(RETYPES, mutation.variant)));
      return;
    }
    case "flipHex": {
      const path = pick(
        ofKind((v) => typeof v === "string" && v.startsWith("0x")),
        mutation.pick,
      );
      if (path) setAt(body, path, flip(valueAt(body, path) as string, mutation.variant));
      return;
    }
    case "bigNumber": {
      const isUint = (v: unknown) =>
        (typeof v === "string" && /^[0-9]+$/.test(v)) ||
        (typeof v === "number" && Number.isInteger(v));
      const path = pick(ofKind(isUint), mutation.pick);
      if (path) setAt(body, path, pick(BIG_NUMBERS, mutation.variant));
      return;
    }
    case "forkInfo":
      if (typeof body === "object" && body !== null) mutateForkInfo(body as Node, mutation.variant);
      return;
    case "extra": {
      const objects = [[], ...ofKind(isObject)];
      const path = pick(objects, mutation.pick) ?? [];
      const target = valueAt(body, path);
      // Prefixed: an extra field never lands on a field name the request has a meaning for.
      // A copy, for the same reason as a retype's: the sample's own value stays as generated.
      if (typeof target === "object" && target !== null) {
        (target as Node).x_extra = structuredClone(mutation.value);
      }
      return;
    }
    case "signingRoot": {
      if (typeof body !== "object" || body === null) return;
      const node = body as Node;
      const verdict = judgeSignRequest(body);
      const right = verdict.ok
        ? `0x${Buffer.from(verdict.root).toString("hex")}`
        : `0x${"00".repeat(32)}`;
      const choices = [
        right,
        right.toUpperCase().replace("0X", "0x"),
        `0x${"5a".repeat(32)}`,
        "0x1234",
        null,
      ];
      node[mutation.variant % 2 === 0 ? "signingRoot" : "signing_root"] = pick(
        choices,
        mutation.variant,
      );
      return;
    }
    case "inflate":
      if (typeof body === "object" && body !== null) (body as Node).x_padding = "a".repeat(70_000);
      return;
    case "duplicate":
      return; // applied to the text, in renderBody
  }
}

/** The body as sent: JSON text after the mutations, a duplicated key written into the text. */
export function renderBody(body: Body): string {
  if (body.kind === "text") return body.text;
  const value = structuredClone(body.value);
  for (const mutation of body.mutations) applyMutation(value, mutation);
  let text = JSON.stringify(value) ?? "null";
  for (const mutation of body.mutations) {
    if (mutation.kind !== "duplicate" || typeof value !== "object" || value === null) continue;
    if (Array.isArray(value) || !text.startsWith("{") || text === "{}") continue;
    const key = pick(Object.keys(value), mutation.pick);
    if (key === undefined) continue;
    const entry = `${JSON.stringify(key)}:${JSON.stringify(mutation.value) ?? "null"}`;
    // JSON.parse keeps the last of two equal keys: first, the original wins; last, the duplicate.
    text = mutation.last ? `${text.slice(0, -1)},${entry}}` : `{${entry},${text.slice(1)}`;
  }
  return text;
}

const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc
      .jsonValue({ maxDepth: 3 })
      .map((value) => ({ kind: "json" as const, value, mutations: [] })),
  },
  {
    weight: 1,
    arbitrary: fc.string({ maxLength: 200 }).map((text) => ({ kind: "text" as const, text })),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("json" as const),
      value: fc.oneof(...VALID_REQUESTS),
      mutations: fc.array(mutationArb, { maxLength: 3 }),
    }),
  },
);

export const sampleArb: fc.Arbitrary<Sample> = fc.record({
  target: targetArb,
  contentType: contentTypeArb,
  body: bodyArb,
});
