/**
 * Client compatibility from the Gloas fork on: every Gloas-era sign request each client sends
 * (the five new types under every name and shape a client uses, and the changed BLOCK_V2,
 * aggregate and attestation), as that client shapes it, against one in-process sigil on Sepolia
 * (Gloas at 353024, built in), the interop keys of examples/keys and sqlite slashing protection.
 * Each answer is read the way the client reads it, and the signature is checked with blst over
 * the signing root Lodestar computes on its own (ssz.gloas containers, getDomain at the message's
 * slot, the genesis domain for request auth). gloas-clients.ts says where each shape was read.
 *
 * Slashing safety: one fresh epoch per request, in plan order, so every key's block slots and
 * attestation targets only rise; the refusal tests use epochs no other test touches.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import {
  BuilderRequestAuth,
  ExecutionPayload,
  ExecutionPayloadBid,
  ExecutionPayloadEnvelope,
  ExecutionRequests,
  PayloadAttestationData,
  ProposerPreferences,
} from "../../src/signing/ssz-gloas";
import { toHex } from "../signing/lodestar";
import { TempDir } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";
import { postSign, type RawResponse, type SignRequest } from "./common";
import { GLOAS_CLIENTS } from "./gloas-clients";
import {
  buildGloasDuty,
  GLOAS_DUTY_KINDS,
  GLOAS_EPOCH,
  type GloasClient,
  type GloasDuty,
  SLOTS_PER_EPOCH,
} from "./gloas-common";

const keyOf = (client: GloasClient): string =>
  INTEROP_KEYS[GLOAS_CLIENTS.indexOf(client) % INTEROP_KEYS.length] ?? "";

interface Case {
  readonly name: string;
  readonly client: GloasClient;
  readonly pubkey: string;
  readonly duty: GloasDuty;
  readonly request: SignRequest;
}

/** Envelopes: built by the proposer (every client), and by a builder (v1.4.0, builder keys). */
const envelopeVariants = (client: GloasClient) =>
  client.name === "remote-signing-api v1.4.0" ? [true, false] : [true];

function plan(): Case[] {
  const cases: Case[] = [];
  let index = 0;
  for (const kind of GLOAS_DUTY_KINDS) {
    for (const client of GLOAS_CLIENTS) {
      const variants = kind === "EXECUTION_PAYLOAD_ENVELOPE" ? envelopeVariants(client) : [true];
      for (const selfBuilt of variants) {
        // One fresh epoch per request, the first at the fork's first epoch.
        const epoch = GLOAS_EPOCH + index;
        const slot = epoch * SLOTS_PER_EPOCH + (index % SLOTS_PER_EPOCH);
        const duty = buildGloasDuty(kind, slot, index + 1, { selfBuilt });
        const request = client.request(duty, toHex(duty.signingRoot));
        if (!request) continue;
        index += 1;
        const builder =
          kind === "EXECUTION_PAYLOAD_ENVELOPE"
            ? selfBuilt
              ? " [self-built]"
              : " [builder's]"
            : "";
        cases.push({
          name: `${client.name} · ${request.label}${builder}`,
          client,
          pubkey: keyOf(client),
          duty,
          request: { ...request, label: `${request.label}${builder}` },
        });
      }
    }
  }
  return cases;
}

const CASES = plan();

const dir = new TempDir();
let signer: InProcessSigner;

beforeAll(async () => {
  signer = await startInProcessSigner(dir, "gloas-clients", {
    yaml: [
      "network: sepolia",
      "bls: {backend: blst}",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      // The widest future bound: Sepolia's Gloas epochs are signed whatever this machine's clock.
      `antislashing: {backend: sqlite, path: "${resolve(dir.path, "slashing.sqlite")}", max_future_epochs: 1000000}`,
    ],
  });
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

const send = (client: GloasClient, pubkey: string, body: unknown): Promise<RawResponse> =>
  postSign(signer.url, pubkey, client.fixture.headers, JSON.stringify(body));

function verified(
  c: { client: GloasClient; pubkey: string; duty: GloasDuty },
  response: RawResponse,
) {
  const outcome = c.client.fixture.parse(response);
  if (!outcome.ok) throw new Error(`the client rejected the answer: ${outcome.message}`);
  return verifiesAgainstOracle(
    { pubkey: c.pubkey, signingRoot: toHex(c.duty.signingRoot) },
    outcome.signature,
  );
}

describe("every client's Gloas requests sign, and the client reads a signature over Lodestar's root", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const response = await send(c.client, c.pubkey, c.request.body);
      expect(response.status, response.body).toBe(200);
      expect(verified(c, response)).toBe(true);
    });
  }
});

/** A validator client speaking remote-signing-api v1.4.0: request label → duty kind. */
const V140_VALIDATOR: Record<string, string> = {
  "ATTESTATION (index 0 or 1)": "ATTESTATION",
  "BLOCK_V2 {version: GLOAS, block_header}": "BLOCK",
  "AGGREGATE_AND_PROOF_V2 {version, data}": "AGGREGATE_AND_PROOF",
  "PAYLOAD_ATTESTATION_MESSAGE {version, data}": "PAYLOAD_ATTESTATION",
  "EXECUTION_PAYLOAD_ENVELOPE {version, data} [self-built]": "EXECUTION_PAYLOAD_ENVELOPE",
  "PROPOSER_PREFERENCES {version, data}": "PROPOSER_PREFERENCES",
  "BUILDER_REQUEST_AUTH {version, data} (no fork_info)": "BUILDER_REQUEST_AUTH",
};

/** What each client sends from Gloas on: request label → duty kind. */
const EXPECTED: Record<string, Record<string, string>> = {
  Lighthouse: {
    "ATTESTATION (index 0 or 1)": "ATTESTATION",
    "BLOCK_V2 {version: GLOAS, block_header}": "BLOCK",
    "AGGREGATE_AND_PROOF (Gloas container, no version)": "AGGREGATE_AND_PROOF",
    "PAYLOAD_ATTESTATION / payload_attestation_data (bare)": "PAYLOAD_ATTESTATION",
    "EXECUTION_PAYLOAD_ENVELOPE / execution_payload_envelope (bare) [self-built]":
      "EXECUTION_PAYLOAD_ENVELOPE",
    "PROPOSER_PREFERENCES / proposer_preferences (bare)": "PROPOSER_PREFERENCES",
    "REQUEST_AUTH / request_auth (bare) (no fork_info)": "BUILDER_REQUEST_AUTH",
  },
  Lodestar: V140_VALIDATOR,
  "Lodestar before #10071": {
    "ATTESTATION (index 0 or 1)": "ATTESTATION",
    "BLOCK_V2 {version: GLOAS, block_header}": "BLOCK",
    "AGGREGATE_AND_PROOF_V2 {version, data}": "AGGREGATE_AND_PROOF",
    "PAYLOAD_ATTESTATION / payload_attestation (bare)": "PAYLOAD_ATTESTATION",
    "EXECUTION_PAYLOAD_ENVELOPE (bare) [self-built]": "EXECUTION_PAYLOAD_ENVELOPE",
  },
  Prysm: V140_VALIDATOR,
  Teku: {
    "ATTESTATION (index 0 or 1)": "ATTESTATION",
    "BLOCK_V2 {version: GLOAS, block_header}": "BLOCK",
    "AGGREGATE_AND_PROOF (Gloas container, no version)": "AGGREGATE_AND_PROOF",
  },
  Nimbus: {
    "ATTESTATION (index 0 or 1)": "ATTESTATION",
    "BLOCK_V2 {version: GLOAS, block_header}": "BLOCK",
    "AGGREGATE_AND_PROOF_V2 {version (lower case), data}": "AGGREGATE_AND_PROOF",
  },
  // A builder's signer: the bid and its own envelope too.
  "remote-signing-api v1.4.0": {
    ...V140_VALIDATOR,
    "EXECUTION_PAYLOAD_ENVELOPE {version, data} [builder's]": "EXECUTION_PAYLOAD_ENVELOPE",
    "EXECUTION_PAYLOAD_BID {version, data}": "EXECUTION_PAYLOAD_BID",
  },
};

test("the plan covers what each client sends from Gloas on, under its own names", () => {
  const covered: Record<string, Record<string, string>> = {};
  for (const c of CASES) {
    covered[c.client.name] ??= {};
    (covered[c.client.name] as Record<string, string>)[c.request.label] = c.duty.kind;
  }
  expect(covered).toEqual(EXPECTED);
  // The wire names as the client writes them: type and body key of one request per shape.
  const body = (client: string, kind: string) =>
    CASES.find((c) => c.client.name === client && c.duty.kind === kind)?.request.body ?? {};
  expect(Object.keys(body("Lighthouse", "PAYLOAD_ATTESTATION"))).toContain(
    "payload_attestation_data",
  );
  expect(body("Lighthouse", "BUILDER_REQUEST_AUTH").type).toBe("REQUEST_AUTH");
  expect(body("Lodestar before #10071", "PAYLOAD_ATTESTATION").type).toBe("PAYLOAD_ATTESTATION");
  expect(body("Prysm", "BUILDER_REQUEST_AUTH").fork_info).toBeUndefined();
});

describe("from Gloas on, a vote for the other payload status is a double vote: 412, as each client reads it", () => {
  const voters = GLOAS_CLIENTS.filter((client) =>
    client.request(buildGloasDuty("ATTESTATION", GLOAS_EPOCH * SLOTS_PER_EPOCH, 1), "0x"),
  );
  voters.forEach((client, i) => {
    test(client.name, async () => {
      // Epochs the plan does not reach; index 0, then index 1 for the same target.
      const slot = (GLOAS_EPOCH + 900 + 2 * i) * SLOTS_PER_EPOCH + 4;
      const [empty, full] = [2, 3].map((salt) => buildGloasDuty("ATTESTATION", slot, salt));
      if (!empty || !full) throw new Error("no attestations");
      expect([empty.payload.index, full.payload.index]).toEqual(["0", "1"]);
      const pubkey = keyOf(client);
      const first = client.request(empty, toHex(empty.signingRoot));
      const second = client.request(full, toHex(full.signingRoot));
      if (!first || !second) throw new Error(`${client.name} sends no attestation`);
      const signed = await send(client, pubkey, first.body);
      expect(signed.status, signed.body).toBe(200);
      expect(verified({ client, pubkey, duty: empty }, signed)).toBe(true);

      const refused = await send(client, pubkey, second.body);
      expect(refused.status).toBe(412);
      expect((JSON.parse(refused.body) as { code: string }).code).toBe("slashing_protection");
      const outcome = client.fixture.parse(refused);
      expect(outcome.ok).toBe(false);
    });
  });
});

/**
 * The JSON field names each Gloas object carries, as the clients' own code writes them (Prysm's
 * remote-web3signer types and mappers, Web3Signer's gloas schema classes and ExecutionRequests,
 * Lighthouse's builder_types::RequestAuth), written out here rather than taken from Lodestar: the
 * duties above are Lodestar's JSON, and sigil and Lodestar could share a misreading of the wire.
 */
const WIRE_NAMES: Record<string, readonly string[]> = {
  PAYLOAD_ATTESTATION: ["beacon_block_root", "slot", "payload_present", "blob_data_available"],
  PROPOSER_PREFERENCES: [
    "dependent_root",
    "proposal_slot",
    "validator_index",
    "fee_recipient",
    "target_gas_limit",
  ],
  BUILDER_REQUEST_AUTH: ["data", "slot"],
  EXECUTION_PAYLOAD_BID: [
    "parent_block_hash",
    "parent_block_root",
    "block_hash",
    "prev_randao",
    "fee_recipient",
    "gas_limit",
    "builder_index",
    "slot",
    "value",
    "execution_payment",
    "blob_kzg_commitments",
    "execution_requests_root",
  ],
  EXECUTION_PAYLOAD_ENVELOPE: [
    "payload",
    "execution_requests",
    "builder_index",
    "beacon_block_root",
    "parent_beacon_block_root",
  ],
  "EXECUTION_PAYLOAD_ENVELOPE.payload": [
    "parent_hash",
    "fee_recipient",
    "state_root",
    "receipts_root",
    "logs_bloom",
    "prev_randao",
    "block_number",
    "gas_limit",
    "gas_used",
    "timestamp",
    "extra_data",
    "base_fee_per_gas",
    "block_hash",
    "transactions",
    "withdrawals",
    "blob_gas_used",
    "excess_blob_gas",
    "block_access_list",
    "slot_number",
  ],
  "EXECUTION_PAYLOAD_ENVELOPE.execution_requests": [
    "deposits",
    "withdrawals",
    "consolidations",
    "builder_deposits",
    "builder_exits",
  ],
};

test("the Gloas objects carry the field names the clients write, in sigil's container order", () => {
  const sigil: Record<string, { fields: object }> = {
    PAYLOAD_ATTESTATION: PayloadAttestationData,
    PROPOSER_PREFERENCES: ProposerPreferences,
    BUILDER_REQUEST_AUTH: BuilderRequestAuth,
    EXECUTION_PAYLOAD_BID: ExecutionPayloadBid,
    EXECUTION_PAYLOAD_ENVELOPE: ExecutionPayloadEnvelope,
    "EXECUTION_PAYLOAD_ENVELOPE.payload": ExecutionPayload,
    "EXECUTION_PAYLOAD_ENVELOPE.execution_requests": ExecutionRequests,
  };
  for (const [name, fields] of Object.entries(WIRE_NAMES)) {
    const [kind, inner] = name.split(".") as [GloasDuty["kind"], string | undefined];
    const payload = buildGloasDuty(kind, GLOAS_EPOCH * SLOTS_PER_EPOCH, 1).payload;
    const json = inner ? (payload[inner] as Record<string, unknown>) : payload;
    expect(Object.keys(json), `Lodestar's JSON of ${name}`).toEqual([...fields]);
    expect(Object.keys(sigil[name]?.fields ?? {}), `sigil's ${name}`).toEqual([...fields]);
  }
});
