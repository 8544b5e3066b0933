/**
 * Client compatibility: every sign request Lighthouse, Teku, Prysm, Nimbus and Lodestar (current
 * and 1.5.x) send, in each fork as that client shapes it (headers, body, fork_info convention,
 * extras), against one in-process sigil (mainnet, the interop keys of examples/keys, sqlite
 * slashing protection). Each answer is read the way that client reads it, and the signature is
 * checked with the noble backend (sigil signs with blst) over the signing root Lodestar computes
 * on its own (getDomain per fork, EIP-7044 exits, the builder domain).
 *
 * The fixtures reproduce each client's remote-signer code (see the header of each module). No
 * real client library drives sigil here: `@lodestar/validator` (whose `externalSignerPostSignature`
 * would be the one usable from npm) is not in node_modules, only `@lodestar/{config,params,types,
 * utils}` are, and this suite installs nothing. The other clients are Rust, Java, Go and Nim.
 *
 * Slashing safety: requests are sent in fork order, one fresh epoch per request, so every key's
 * block slots and attestation epochs only rise; the refusal tests then use epochs no other test
 * touches. No client sends DEPOSIT while validating, so it is not in the matrix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { createNobleBackend } from "../../src/bls/noble";
import { fromHex, toHex } from "../signing/lodestar";
import { TempDir } from "../support/cli";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";
import {
  atLeast,
  buildDuty,
  type ClientFixture,
  DUTY_KINDS,
  type Duty,
  type DutyKind,
  type DutyOptions,
  dutyExists,
  expectedSigningRoot,
  type FailureKind,
  FORKS,
  type Fork,
  forkStartEpoch,
  getFrom,
  mediaType,
  type Outcome,
  postSign,
  type RawResponse,
  type SignRequest,
  SLOTS_PER_EPOCH,
} from "./common";
import { lighthouse } from "./lighthouse";
import { lodestar, lodestarLegacy } from "./lodestar";
import { NIMBUS_RETRIED_STATUSES, nimbus } from "./nimbus";
import { prysm } from "./prysm";
import { teku } from "./teku";

const CLIENTS: readonly ClientFixture[] = [
  lighthouse,
  teku,
  prysm,
  nimbus,
  lodestar,
  lodestarLegacy,
];

const [KEY_0, KEY_1, KEY_2, KEY_3] = INTEROP_KEYS as unknown as [string, string, string, string];
/** Raw keys (0, 1) and keystores (2: PBKDF2, 3: scrypt) all take part. */
const KEY_OF: Record<string, string> = {
  Lighthouse: KEY_0,
  Teku: KEY_1,
  Prysm: KEY_2,
  Nimbus: KEY_3,
  Lodestar: KEY_0,
  "Lodestar 1.5.x": KEY_1,
};
const UNKNOWN_KEY = `0x${"ab".repeat(48)}`;

const keyOf = (client: ClientFixture): string => {
  const key = KEY_OF[client.name];
  if (!key) throw new Error(`no key for ${client.name}`);
  return key;
};

// ---- The plan: every (fork, operation, client) request, in an order safe for slashing ----

interface Case {
  readonly name: string;
  readonly client: ClientFixture;
  readonly pubkey: string;
  readonly duty: Duty;
  readonly root: Uint8Array;
  readonly request: SignRequest;
}

/** ATTESTATION first, so a fork's first epoch (message epoch = fork.epoch) is attested to. */
const PLAN_ORDER: readonly DutyKind[] = [
  "ATTESTATION",
  ...DUTY_KINDS.filter((kind) => kind !== "ATTESTATION"),
];

function plan(): Case[] {
  const cases: Case[] = [];
  let salt = 0;
  for (const fork of FORKS) {
    let index = 0;
    for (const kind of PLAN_ORDER) {
      if (!dutyExists(kind, fork)) continue;
      const variants: DutyOptions[] =
        kind === "BLOCK" && atLeast(fork, "bellatrix") ? [{}, { blinded: true }] : [{}];
      for (const options of variants) {
        for (const client of CLIENTS) {
          // One fresh epoch per request.
          const epoch = forkStartEpoch(fork) + index;
          const slot = epoch * SLOTS_PER_EPOCH + (index % SLOTS_PER_EPOCH);
          salt += 1;
          const duty = buildDuty(kind, slot, salt, keyOf(client), options);
          if (duty.fork !== fork) throw new Error(`epoch ${epoch} is not in ${fork}`);
          const root = expectedSigningRoot(duty);
          const request = client.request(duty, toHex(root));
          if (!request) continue;
          index += 1;
          cases.push({
            name: `${fork} · ${client.name} · ${request.label}`,
            client,
            pubkey: keyOf(client),
            duty,
            root,
            request,
          });
        }
      }
    }
  }
  return cases;
}

const CASES = plan();

// ---- The signer ----

const dir = new TempDir();
const noble = createNobleBackend();
let signer: InProcessSigner;
let base: string;

beforeAll(async () => {
  signer = await startInProcessSigner(dir, "clients", {
    yaml: [
      "network: mainnet",
      "bls: {backend: blst}",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${resolve(dir.path, "slashing.sqlite")}"}`,
    ],
  });
  base = signer.url;
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

const send = (client: ClientFixture, pubkey: string, body: unknown): Promise<RawResponse> =>
  postSign(base, pubkey, client.headers, JSON.stringify(body));

/** sigil's documented rule (docs/signing.md): JSON for application/json, application/* and * /*. */
function answersJson(client: ClientFixture): boolean {
  const accept =
    Object.entries(client.headers).find(([name]) => name.toLowerCase() === "accept")?.[1] ?? "";
  return accept
    .split(",")
    .map((range) => range.split(";")[0]?.trim())
    .some((range) => range === "application/json" || range === "*/*" || range === "application/*");
}

function verified(pubkey: string, root: Uint8Array, outcome: Outcome): boolean {
  if (!outcome.ok) throw new Error(`the client rejected the answer: ${outcome.message}`);
  return noble.verify(fromHex(pubkey), root, fromHex(outcome.signature));
}

// ---- The matrix ----

describe("every client × operation × fork signs, and the client reads a valid signature", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const response = await send(c.client, c.pubkey, c.request.body);
      expect(response.status, response.body).toBe(200);
      expect(mediaType(response.contentType)).toBe(
        answersJson(c.client) ? "application/json" : "text/plain",
      );
      const outcome = c.client.parse(response, c.duty);
      expect(verified(c.pubkey, c.root, outcome)).toBe(true);
    });
  }
});

/** Forks as a compact string: "phase0..fulu", or a list when not contiguous. */
function forkSpan(forks: readonly Fork[]): string {
  const sorted = [...new Set(forks)].sort((a, b) => FORKS.indexOf(a) - FORKS.indexOf(b));
  const first = sorted[0];
  const last = sorted[sorted.length - 1];
  if (!first || !last) return "";
  const contiguous = FORKS.indexOf(last) - FORKS.indexOf(first) === sorted.length - 1;
  if (sorted.length === 1) return first;
  return contiguous ? `${first}..${last}` : sorted.join(",");
}

function coverage(): Record<string, Record<string, string>> {
  const seen: Record<string, Record<string, Fork[]>> = {};
  for (const c of CASES) {
    const byLabel = seen[c.client.name] ?? {};
    seen[c.client.name] = byLabel;
    byLabel[c.request.label] = [...(byLabel[c.request.label] ?? []), c.duty.fork];
  }
  return Object.fromEntries(
    Object.entries(seen).map(([client, labels]) => [
      client,
      Object.fromEntries(Object.entries(labels).map(([label, forks]) => [label, forkSpan(forks)])),
    ]),
  );
}

/** What each client sends, in which forks: the matrix this suite covers (see docs/clients.md). */
const EXPECTED_COVERAGE: Record<string, Record<string, string>> = {
  Lighthouse: {
    ATTESTATION: "phase0..fulu",
    AGGREGATION_SLOT: "phase0..fulu",
    AGGREGATE_AND_PROOF: "phase0..deneb",
    "BLOCK_V2 {version, block}": "phase0..altair",
    RANDAO_REVEAL: "phase0..fulu",
    VOLUNTARY_EXIT: "phase0..capella",
    SYNC_COMMITTEE_MESSAGE: "altair..fulu",
    SYNC_COMMITTEE_SELECTION_PROOF: "altair..fulu",
    SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "altair..fulu",
    "BLOCK_V2 {version, block_header}": "bellatrix..fulu",
    "BLOCK_V2 {version, block_header} (blinded)": "bellatrix..fulu",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..fulu",
    "VOLUNTARY_EXIT (fork_info {capella, capella, exit epoch})": "deneb..fulu",
    "AGGREGATE_AND_PROOF (Electra container, no version)": "electra..fulu",
  },
  Teku: {
    ATTESTATION: "phase0..fulu",
    AGGREGATION_SLOT: "phase0..fulu",
    AGGREGATE_AND_PROOF: "phase0..deneb",
    "BLOCK {block} (legacy)": "phase0",
    RANDAO_REVEAL: "phase0..fulu",
    VOLUNTARY_EXIT: "phase0..fulu",
    "BLOCK_V2 {version, block}": "altair",
    SYNC_COMMITTEE_MESSAGE: "altair..fulu",
    SYNC_COMMITTEE_SELECTION_PROOF: "altair..fulu",
    SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "altair..fulu",
    "BLOCK_V2 {version, block_header}": "bellatrix..fulu",
    "BLOCK_V2 {version, block_header} (blinded)": "bellatrix..fulu",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..fulu",
    "AGGREGATE_AND_PROOF (Electra container, no version)": "electra..fulu",
  },
  Prysm: {
    ATTESTATION: "phase0..fulu",
    AGGREGATION_SLOT: "phase0..fulu",
    AGGREGATE_AND_PROOF: "phase0..deneb",
    "BLOCK {block} (legacy)": "phase0",
    RANDAO_REVEAL: "phase0..fulu",
    VOLUNTARY_EXIT: "phase0..fulu",
    "BLOCK_V2 {version, block}": "altair",
    SYNC_COMMITTEE_MESSAGE: "altair..fulu",
    SYNC_COMMITTEE_SELECTION_PROOF: "altair..fulu",
    SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "altair..fulu",
    "BLOCK_V2 {version, block_header}": "bellatrix..fulu",
    "BLOCK_V2 {version, block_header} (blinded)": "bellatrix..fulu",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..fulu",
    "AGGREGATE_AND_PROOF_V2 {version, data}": "electra..fulu",
  },
  Nimbus: {
    ATTESTATION: "phase0..fulu",
    AGGREGATION_SLOT: "phase0..fulu",
    AGGREGATE_AND_PROOF: "phase0..deneb",
    RANDAO_REVEAL: "phase0..fulu",
    VOLUNTARY_EXIT: "phase0..capella",
    SYNC_COMMITTEE_MESSAGE: "altair..fulu",
    SYNC_COMMITTEE_SELECTION_PROOF: "altair..fulu",
    SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "altair..fulu",
    "BLOCK_V2 {version, block_header} + proofs": "bellatrix..fulu",
    "BLOCK_V2 {version, block_header} (blinded) + proofs": "bellatrix..fulu",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..fulu",
    "VOLUNTARY_EXIT (fork_info {capella, capella, 0})": "deneb..fulu",
    "AGGREGATE_AND_PROOF_V2 {version (lower case), data}": "electra..fulu",
  },
  Lodestar: {
    "ATTESTATION [fork_info.epoch = message epoch]": "phase0..fulu",
    "AGGREGATION_SLOT [fork_info.epoch = message epoch]": "phase0..fulu",
    "AGGREGATE_AND_PROOF [fork_info.epoch = message epoch]": "phase0..deneb",
    "BLOCK_V2 {version, block} [fork_info.epoch = message epoch]": "phase0..altair",
    "RANDAO_REVEAL [fork_info.epoch = message epoch]": "phase0..fulu",
    "VOLUNTARY_EXIT [fork_info.epoch = message epoch]": "phase0..capella",
    "SYNC_COMMITTEE_MESSAGE [fork_info.epoch = message epoch]": "altair..fulu",
    "SYNC_COMMITTEE_SELECTION_PROOF [fork_info.epoch = message epoch]": "altair..fulu",
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF [fork_info.epoch = message epoch]": "altair..fulu",
    "BLOCK_V2 {version, block_header} [fork_info.epoch = message epoch]": "bellatrix..fulu",
    "BLOCK_V2 {version, block_header} (blinded) [fork_info.epoch = message epoch]":
      "bellatrix..fulu",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..fulu",
    "VOLUNTARY_EXIT (fork_info: the Capella fork) [fork_info.epoch = message epoch]": "deneb..fulu",
    "AGGREGATE_AND_PROOF_V2 {version, data} [fork_info.epoch = message epoch]": "electra..fulu",
  },
  "Lodestar 1.5.x": {
    "ATTESTATION [fork_info.epoch = message epoch]": "phase0..capella",
    "AGGREGATION_SLOT [fork_info.epoch = message epoch]": "phase0..capella",
    "AGGREGATE_AND_PROOF [fork_info.epoch = message epoch]": "phase0..capella",
    "BLOCK_V2 {version, block} [fork_info.epoch = message epoch]": "phase0..altair",
    "RANDAO_REVEAL [fork_info.epoch = message epoch]": "phase0..capella",
    "VOLUNTARY_EXIT [fork_info.epoch = message epoch]": "phase0..capella",
    "SYNC_COMMITTEE_MESSAGE [fork_info.epoch = message epoch]": "altair..capella",
    "SYNC_COMMITTEE_SELECTION_PROOF [fork_info.epoch = message epoch]": "altair..capella",
    "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF [fork_info.epoch = message epoch]": "altair..capella",
    "BLOCK_V2 {version, block_header} [fork_info.epoch = message epoch]": "bellatrix..capella",
    "BLOCK_V2 {version, block_header} (blinded) [fork_info.epoch = message epoch]":
      "bellatrix..capella",
    "VALIDATOR_REGISTRATION (no fork_info)": "bellatrix..capella",
  },
};

test("the matrix covers what each client sends, in the forks it sends it", () => {
  expect(coverage()).toEqual(EXPECTED_COVERAGE);
  // Every operation of the signing API is exercised by every current client.
  for (const client of CLIENTS.filter((c) => c !== lodestarLegacy)) {
    const kinds = new Set(CASES.filter((c) => c.client === client).map((c) => c.duty.kind));
    expect([...kinds].sort()).toEqual([...DUTY_KINDS].sort());
  }
});

// ---- Refusals, as each client reports them ----

/** The request `client` sends for `kind` at `slot`. */
function prepared(
  client: ClientFixture,
  kind: DutyKind,
  slot: number,
  salt: number,
  pubkey = keyOf(client),
) {
  const duty = buildDuty(kind, slot, salt, pubkey);
  const root = expectedSigningRoot(duty);
  const request = client.request(duty, toHex(root));
  if (!request) throw new Error(`${client.name} sends no ${kind} at slot ${slot}`);
  return { duty, root, request, pubkey };
}

/** sigil's error body: exactly {code, message}, as JSON. */
function expectErrorBody(response: RawResponse, code: string, message: RegExp): void {
  expect(mediaType(response.contentType)).toBe("application/json");
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["code", "message"]);
  expect(body.code).toBe(code);
  expect(String(body.message)).toMatch(message);
}

interface Refusal {
  readonly kind: FailureKind;
  readonly message: (response: RawResponse, duty: Duty) => string;
}

/** How each client reports sigil's 412 (slashable) and 404 (unknown key), from its source. */
const REFUSALS: Record<string, { slashing: Refusal; unknownKey: Refusal }> = {
  // Lighthouse has no 412 case: error_for_status() → Web3SignerRequestFailed (its own local
  // slashing database, on by default for web3signer keys, is the first line of defence).
  Lighthouse: {
    slashing: {
      kind: "failed",
      message: () =>
        'Web3SignerRequestFailed("HTTP status client error (412 Precondition Failed) for url ...")',
    },
    unknownKey: {
      kind: "failed",
      message: () =>
        'Web3SignerRequestFailed("HTTP status client error (404 Not Found) for url ...")',
    },
  },
  Teku: {
    slashing: {
      kind: "slashing",
      message: (_r, duty) =>
        duty.kind === "BLOCK"
          ? `External signer refused to sign block at slot ${duty.slot} as it may violate a slashing condition`
          : `External signer refused to sign attestation at slot ${duty.slot} with source epoch ${duty.epoch - 1} and target epoch ${duty.epoch} because it may violate a slashing condition`,
    },
    unknownKey: { kind: "failed", message: () => "Invalid response status code: 404" },
  },
  Prysm: {
    slashing: {
      kind: "slashing",
      message: () => "signing operation failed due to slashing protection rules",
    },
    unknownKey: { kind: "unknown_key", message: () => "public key not found" },
  },
  // sigil's error body is {code, message}, not {error}: Nimbus falls back to its fixed texts.
  Nimbus: {
    slashing: {
      kind: "slashing",
      message: () => "Error412: Remote signer returns 412 Slashing Protection Error",
    },
    unknownKey: {
      kind: "unknown_key",
      message: () => "Error404: Remote signer returns 404 Validator's Key Not Found Error",
    },
  },
  // Lodestar throws Error(body text) for any non-ok status; its own slashing protection is local.
  Lodestar: {
    slashing: { kind: "failed", message: (response) => response.body },
    unknownKey: { kind: "failed", message: (response) => response.body },
  },
  "Lodestar 1.5.x": {
    slashing: { kind: "failed", message: (response) => response.body },
    unknownKey: { kind: "failed", message: (response) => response.body },
  },
};

const refusalOf = (client: ClientFixture) => {
  const refusal = REFUSALS[client.name];
  if (!refusal) throw new Error(`no refusal expectations for ${client.name}`);
  return refusal;
};

describe("refusals: sigil's 412 and 404, and what each client makes of them", () => {
  CLIENTS.forEach((client, i) => {
    // Epochs no other test uses, in the newest fork the client knows.
    const fork: Fork = client === lodestarLegacy ? "capella" : "fulu";
    const epoch = forkStartEpoch(fork) + 900 + 4 * i;
    const { slashing, unknownKey } = refusalOf(client);

    test(`${client.name}: a second block at a signed slot is 412 slashing_protection → ${slashing.kind}`, async () => {
      const slot = epoch * SLOTS_PER_EPOCH + 3;
      const first = prepared(client, "BLOCK", slot, 90_000 + i);
      const second = prepared(client, "BLOCK", slot, 91_000 + i);
      const signed = await send(client, first.pubkey, first.request.body);
      expect(signed.status, signed.body).toBe(200);
      expect(verified(first.pubkey, first.root, client.parse(signed, first.duty))).toBe(true);

      const refused = await send(client, second.pubkey, second.request.body);
      expect(refused.status).toBe(412);
      expectErrorBody(refused, "slashing_protection", /^double_block_proposal/);
      expect(client.parse(refused, second.duty)).toEqual({
        ok: false,
        kind: slashing.kind,
        message: slashing.message(refused, second.duty),
      });
    });

    test(`${client.name}: a second attestation for a signed target is 412 slashing_protection → ${slashing.kind}`, async () => {
      const slot = (epoch + 2) * SLOTS_PER_EPOCH + 5;
      const first = prepared(client, "ATTESTATION", slot, 92_000 + i);
      const second = prepared(client, "ATTESTATION", slot, 93_000 + i);
      const signed = await send(client, first.pubkey, first.request.body);
      expect(signed.status, signed.body).toBe(200);
      expect(verified(first.pubkey, first.root, client.parse(signed, first.duty))).toBe(true);

      const refused = await send(client, second.pubkey, second.request.body);
      expect(refused.status).toBe(412);
      expectErrorBody(refused, "slashing_protection", /^double_vote/);
      expect(client.parse(refused, second.duty)).toEqual({
        ok: false,
        kind: slashing.kind,
        message: slashing.message(refused, second.duty),
      });
    });

    test(`${client.name}: a key sigil does not hold is 404 unknown_pubkey → ${unknownKey.kind}`, async () => {
      const slot = (epoch + 3) * SLOTS_PER_EPOCH + 7;
      const request = prepared(client, "ATTESTATION", slot, 94_000 + i, UNKNOWN_KEY);
      const response = await send(client, UNKNOWN_KEY, request.request.body);
      expect(response.status).toBe(404);
      expectErrorBody(response, "unknown_pubkey", /no key loaded/);
      expect(client.parse(response, request.duty)).toEqual({
        ok: false,
        kind: unknownKey.kind,
        message: unknownKey.message(response, request.duty),
      });
    });
  });

  test("Nimbus's retries: the refused request stays refused, a signed one is signed again identically", async () => {
    const epoch = forkStartEpoch("fulu") + 960;
    const slot = epoch * SLOTS_PER_EPOCH + 1;
    const first = prepared(nimbus, "BLOCK", slot, 95_000);
    const second = prepared(nimbus, "BLOCK", slot, 95_001);
    const signed = await send(nimbus, first.pubkey, first.request.body);
    const refused = await send(nimbus, second.pubkey, second.request.body);
    expect([signed.status, refused.status]).toEqual([200, 412]);
    expect(NIMBUS_RETRIED_STATUSES).toContain(refused.status);
    // Nimbus resends the same body after 10 ms, 100 ms, … (a lost answer is resent the same way).
    for (let attempt = 0; attempt < 2; attempt++) {
      const retried = await send(nimbus, second.pubkey, second.request.body);
      expect(retried.status).toBe(412);
      expectErrorBody(retried, "slashing_protection", /^double_block_proposal/);
      const again = await send(nimbus, first.pubkey, first.request.body);
      expect(again.status).toBe(200);
      expect(again.body).toBe(signed.body);
    }
  });
});

// ---- Key discovery and liveness ----

const ALL_KEYS = [...INTEROP_KEYS].sort();

describe("the GETs clients make: key discovery and upcheck", () => {
  for (const client of CLIENTS) {
    const { publicKeys, upcheck } = client;
    if (publicKeys) {
      test(`${client.name}: GET /api/v1/eth2/publicKeys lists the four keys`, async () => {
        const response = await getFrom(base, "/api/v1/eth2/publicKeys", publicKeys.headers);
        expect(response.status).toBe(200);
        expect(publicKeys.parse(response)?.sort()).toEqual(ALL_KEYS);
      });
    }
    if (upcheck && client !== lodestarLegacy) {
      test(`${client.name}: GET /upcheck reads as up`, async () => {
        const response = await getFrom(base, "/upcheck", upcheck.headers);
        expect(response.status).toBe(200);
        expect(upcheck.parse(response)).toBe(true);
      });
    }
  }

  // Lodestar 1.5.x's upcheck sends Content-Type: application/json with Accept */* and JSON.parses
  // the body: sigil answers JSON to a GET that declares a JSON content type.
  const legacyUpcheck = lodestarLegacy.upcheck;
  if (legacyUpcheck) {
    test("Lodestar 1.5.x: GET /upcheck with Accept */* reads as up", async () => {
      const response = await getFrom(base, "/upcheck", legacyUpcheck.headers);
      expect(response.status).toBe(200);
      expect(legacyUpcheck.parse(response)).toBe(true);
    });
  }
});

// ---- The parsers themselves: each reads responses the way its client does ----

const SIG = `0x${"a1".repeat(96)}`;
const SYNTHETIC: Record<string, RawResponse> = {
  json: { status: 200, contentType: "application/json", body: JSON.stringify({ signature: SIG }) },
  "json; charset": {
    status: 200,
    contentType: "application/json; charset=utf-8",
    body: JSON.stringify({ signature: SIG }),
  },
  "text/plain hex": { status: 200, contentType: "text/plain; charset=utf-8", body: SIG },
  "no Content-Type, JSON": {
    status: 200,
    contentType: undefined,
    body: JSON.stringify({ signature: SIG }),
  },
  "no Content-Type, hex": { status: 200, contentType: undefined, body: SIG },
  "*/* JSON": { status: 200, contentType: "*/*", body: JSON.stringify({ signature: SIG }) },
};

/** Which synthetic 200s each client reads a signature from (✓) or rejects, from its source. */
const READS: Record<string, Record<string, boolean>> = {
  // reqwest `.json()` parses the body whatever the Content-Type.
  Lighthouse: {
    json: true,
    "json; charset": true,
    "text/plain hex": false,
    "no Content-Type, JSON": true,
    "no Content-Type, hex": false,
    "*/* JSON": true,
  },
  // Content-Type starting with application/json → JSON, anything else → hex.
  Teku: {
    json: true,
    "json; charset": true,
    "text/plain hex": true,
    "no Content-Type, JSON": false,
    "no Content-Type, hex": true,
    "*/* JSON": false,
  },
  Prysm: {
    json: true,
    "json; charset": true,
    "text/plain hex": true,
    "no Content-Type, JSON": false,
    "no Content-Type, hex": true,
    "*/* JSON": false,
  },
  // Missing or wildcard Content-Type is InvalidContentType; text/plain is hex.
  Nimbus: {
    json: true,
    "json; charset": true,
    "text/plain hex": true,
    "no Content-Type, JSON": false,
    "no Content-Type, hex": false,
    "*/* JSON": false,
  },
  // The media type must be application/json.
  Lodestar: {
    json: true,
    "json; charset": true,
    "text/plain hex": false,
    "no Content-Type, JSON": false,
    "no Content-Type, hex": false,
    "*/* JSON": false,
  },
  // JSON.parse whatever the Content-Type.
  "Lodestar 1.5.x": {
    json: true,
    "json; charset": true,
    "text/plain hex": false,
    "no Content-Type, JSON": true,
    "no Content-Type, hex": false,
    "*/* JSON": true,
  },
};

describe("each fixture reads a 200 the way its client does", () => {
  for (const client of CLIENTS) {
    test(client.name, () => {
      const reads = Object.fromEntries(
        Object.entries(SYNTHETIC).map(([name, response]) => {
          const outcome = client.parse(response);
          if (outcome.ok) expect(outcome.signature).toBe(SIG);
          else expect(outcome.kind).toBe("invalid_response");
          return [name, outcome.ok];
        }),
      );
      expect(reads).toEqual(READS[client.name] ?? {});
    });
  }
});
