/**
 * What each client sends for the Gloas duties, read from each client's remote-signer code (the
 * header, body key, type name, shape and fork_info convention are the client's; the transport and
 * the answer parsing are its fixture for the earlier forks):
 *
 * - Lighthouse, validator_client/signing_method/src/web3signer.rs (`MessageType` carries
 *   "TODO(gloas) verify w/ web3signer specs"): `{type, fork_info?, signingRoot, <flattened
 *   object>}` with serde's snake_case names, bare: `PAYLOAD_ATTESTATION` with
 *   `payload_attestation_data`, `EXECUTION_PAYLOAD_ENVELOPE`, `PROPOSER_PREFERENCES`,
 *   `REQUEST_AUTH` with `request_auth` (builder_types::RequestAuth `{data (hex), slot}`);
 *   `BLOCK_V2 {version: GLOAS, block_header}`; aggregates always bare `AGGREGATE_AND_PROOF`.
 *   fork_info is the fork at the signing epoch with its activation epoch; request auth is signed
 *   over the genesis domain and modelled without fork_info (sigil ignores one if sent).
 * - Lodestar after #10071 (packages/validator/src/util/externalSignerClient.ts): the v1.4.0
 *   names, every new payload `{version, data}` with the fork at the message slot;
 *   `AGGREGATE_AND_PROOF_V2 {version, data}`; fork_info with the message's epoch; no fork_info
 *   for request auth (like VALIDATOR_REGISTRATION).
 * - Lodestar before #10071 (the same file at 0054395): `PAYLOAD_ATTESTATION` with
 *   `payload_attestation` and `EXECUTION_PAYLOAD_ENVELOPE`, both bare; no preferences, no
 *   request auth.
 * - Prysm (PR #16852, validator/keymanager/remote-web3signer/types/): the v1.4.0 names wrapped,
 *   fork_info with the activation epoch, none for `BUILDER_REQUEST_AUTH`; no bid;
 *   `AGGREGATE_AND_PROOF_V2 {version: GLOAS, data}`.
 * - Teku (ExternalSigner.java): no request for the new types (its Gloas work leaves them to
 *   remote-signing-api issue #23); blocks, attestations and bare aggregates as before.
 * - Nimbus: its remote path for the new types is not specified ("RequestAuth: remote signing
 *   not yet supported", PR #8834); blocks `{version, block_header}`, aggregates
 *   `AGGREGATE_AND_PROOF_V2` with the version in lower case, as before.
 * - remote-signing-api v1.4.0 (PR #28; Web3Signer PR #1192 accepts it, Teku's acceptance tests
 *   send it): all five types wrapped, the bid and a builder's own envelope included.
 */

import type { ClientFixture, Json, SignRequest } from "./common";
import {
  activationForkInfo,
  type GloasClient,
  type GloasDuty,
  type GloasDutyKind,
  gloasBlock,
  messageEpochForkInfo,
  wrapped,
} from "./gloas-common";
import { lighthouse } from "./lighthouse";
import { lodestar } from "./lodestar";
import { nimbus } from "./nimbus";
import { prysm } from "./prysm";
import { teku } from "./teku";

/** v1.4.0's type name and body key of each Gloas duty. */
const V140: Partial<Record<GloasDutyKind, { type: string; key: string }>> = {
  PAYLOAD_ATTESTATION: { type: "PAYLOAD_ATTESTATION_MESSAGE", key: "payload_attestation_message" },
  EXECUTION_PAYLOAD_ENVELOPE: {
    type: "EXECUTION_PAYLOAD_ENVELOPE",
    key: "execution_payload_envelope",
  },
  PROPOSER_PREFERENCES: { type: "PROPOSER_PREFERENCES", key: "proposer_preferences" },
  BUILDER_REQUEST_AUTH: { type: "BUILDER_REQUEST_AUTH", key: "builder_request_auth" },
  EXECUTION_PAYLOAD_BID: { type: "EXECUTION_PAYLOAD_BID", key: "execution_payload_bid" },
};

interface Dialect {
  /** fork_info for a duty signed over its fork's domain. */
  forkInfo(duty: GloasDuty): Json;
  /** The body of a duty, or undefined when the client never sends it. */
  body(duty: GloasDuty): { label: string; type: string; fields: Json } | undefined;
  /** Whether request auth carries fork_info. */
  authForkInfo?: boolean;
}

/** The v1.4.0 request of a new type, wrapped. */
function v140(duty: GloasDuty, version = "GLOAS") {
  const names = V140[duty.kind];
  if (!names) return undefined;
  return {
    label: `${names.type} {version, data}`,
    type: names.type,
    fields: { [names.key]: wrapped(duty, version) },
  };
}

/** The changed types, as most clients send them: header, V2 aggregate, attestation. */
function changedTypes(
  duty: GloasDuty,
  aggregate: "bare" | "V2" | "V2 lower case",
): { label: string; type: string; fields: Json } | undefined {
  switch (duty.kind) {
    case "ATTESTATION":
      return {
        label: "ATTESTATION (index 0 or 1)",
        type: "ATTESTATION",
        fields: { attestation: duty.payload },
      };
    case "BLOCK":
      return {
        label: "BLOCK_V2 {version: GLOAS, block_header}",
        type: "BLOCK_V2",
        fields: { beacon_block: gloasBlock(duty) },
      };
    case "AGGREGATE_AND_PROOF":
      if (aggregate === "bare") {
        return {
          label: "AGGREGATE_AND_PROOF (Gloas container, no version)",
          type: "AGGREGATE_AND_PROOF",
          fields: { aggregate_and_proof: duty.payload },
        };
      }
      return {
        label: `AGGREGATE_AND_PROOF_V2 {version${aggregate === "V2" ? "" : " (lower case)"}, data}`,
        type: "AGGREGATE_AND_PROOF_V2",
        fields: {
          aggregate_and_proof: wrapped(duty, aggregate === "V2" ? "GLOAS" : "gloas"),
        },
      };
    default:
      return undefined;
  }
}

const activation = (duty: GloasDuty) => activationForkInfo(duty.slot);

const DIALECTS: Record<string, { fixture: ClientFixture; source: string; dialect: Dialect }> = {
  Lighthouse: {
    fixture: lighthouse,
    source: "sigp/lighthouse validator_client/signing_method/src/web3signer.rs",
    dialect: {
      forkInfo: activation,
      body(duty) {
        const bare: Partial<Record<GloasDutyKind, [string, string]>> = {
          PAYLOAD_ATTESTATION: ["PAYLOAD_ATTESTATION", "payload_attestation_data"],
          EXECUTION_PAYLOAD_ENVELOPE: ["EXECUTION_PAYLOAD_ENVELOPE", "execution_payload_envelope"],
          PROPOSER_PREFERENCES: ["PROPOSER_PREFERENCES", "proposer_preferences"],
          BUILDER_REQUEST_AUTH: ["REQUEST_AUTH", "request_auth"],
        };
        const names = bare[duty.kind];
        if (names) {
          const [type, key] = names;
          return { label: `${type} / ${key} (bare)`, type, fields: { [key]: duty.payload } };
        }
        return duty.kind === "EXECUTION_PAYLOAD_BID" ? undefined : changedTypes(duty, "bare");
      },
    },
  },
  Lodestar: {
    fixture: lodestar,
    source: "ChainSafe/lodestar externalSignerClient.ts (after #10071)",
    dialect: {
      forkInfo: (duty) => messageEpochForkInfo(duty.slot),
      body: (duty) =>
        duty.kind === "EXECUTION_PAYLOAD_BID"
          ? undefined
          : (v140(duty) ?? changedTypes(duty, "V2")),
    },
  },
  "Lodestar before #10071": {
    fixture: lodestar,
    source: "ChainSafe/lodestar externalSignerClient.ts at 0054395",
    dialect: {
      forkInfo: (duty) => messageEpochForkInfo(duty.slot),
      body(duty) {
        if (duty.kind === "PAYLOAD_ATTESTATION") {
          return {
            label: "PAYLOAD_ATTESTATION / payload_attestation (bare)",
            type: "PAYLOAD_ATTESTATION",
            fields: { payload_attestation: duty.payload },
          };
        }
        if (duty.kind === "EXECUTION_PAYLOAD_ENVELOPE") {
          return {
            label: "EXECUTION_PAYLOAD_ENVELOPE (bare)",
            type: "EXECUTION_PAYLOAD_ENVELOPE",
            fields: { execution_payload_envelope: duty.payload },
          };
        }
        return changedTypes(duty, "V2");
      },
    },
  },
  Prysm: {
    fixture: prysm,
    source: "OffchainLabs/prysm validator/keymanager/remote-web3signer (PR #16852)",
    dialect: {
      forkInfo: activation,
      body: (duty) =>
        duty.kind === "EXECUTION_PAYLOAD_BID"
          ? undefined
          : (v140(duty) ?? changedTypes(duty, "V2")),
    },
  },
  Teku: {
    fixture: teku,
    source: "Consensys/teku validator/client/.../signer/ExternalSigner.java",
    dialect: { forkInfo: activation, body: (duty) => changedTypes(duty, "bare") },
  },
  Nimbus: {
    fixture: nimbus,
    source: "status-im/nimbus-eth2 beacon_chain/spec/eth2_apis/eth2_rest_serialization.nim",
    dialect: { forkInfo: activation, body: (duty) => changedTypes(duty, "V2 lower case") },
  },
  "remote-signing-api v1.4.0": {
    fixture: { ...lodestar, name: "remote-signing-api v1.4.0" },
    source: "ethereum/remote-signing-api PR #28 (v1.4.0); Consensys/web3signer PR #1192",
    dialect: {
      forkInfo: activation,
      body: (duty) => v140(duty) ?? changedTypes(duty, "V2"),
    },
  },
};

function requestOf(
  dialect: Dialect,
  duty: GloasDuty,
  signingRoot: string,
): SignRequest | undefined {
  const body = dialect.body(duty);
  if (!body) return undefined;
  const genesis = duty.kind === "BUILDER_REQUEST_AUTH";
  const forkInfo = genesis && !dialect.authForkInfo ? {} : { fork_info: dialect.forkInfo(duty) };
  const label = genesis ? `${body.label} (no fork_info)` : body.label;
  return { label, body: { type: body.type, ...forkInfo, signingRoot, ...body.fields } };
}

export const GLOAS_CLIENTS: readonly GloasClient[] = Object.entries(DIALECTS).map(
  ([name, { fixture, source, dialect }]) => ({
    name,
    source,
    fixture,
    request: (duty, signingRoot) => requestOf(dialect, duty, signingRoot),
  }),
);
