/**
 * Every request example of Web3Signer's OpenAPI sign endpoint, parsed with its documented
 * signingRoot. Most must be accepted on mainnet. The rest are named below with the reason they
 * cannot be, and the test shows that reason is the only one.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { ssz as lodestarSsz } from "@lodestar/types";
import { parse as parseYaml } from "yaml";
import { type ErrorCode, SigilError } from "../../src/errors";
import { NETWORKS, resolveNetwork } from "../../src/signing/network";
import { parseSigningRequest } from "../../src/signing/parse";
import { parseSpecConfig } from "../../src/signing/spec-config";
import { DOMAIN_AGGREGATE_AND_PROOF } from "../../src/signing/ssz";
import { fromHex, lodestarDomain, lodestarSigningRoot, toHex } from "./lodestar";

type Body = Record<string, unknown> & { type: string; signingRoot: string };

const SIGN_YAML = new URL(
  "../vectors/web3signer-eth2-openapi/signing/paths/sign.yaml",
  import.meta.url,
);
const spec = parseYaml(readFileSync(SIGN_YAML, "utf8")) as {
  post: {
    requestBody: { content: { "application/json": { examples: Record<string, { value: Body }> } } };
  };
};
const examples = spec.post.requestBody.content["application/json"].examples;
const mainnet = NETWORKS.mainnet;

function failure(body: unknown, network = mainnet): SigilError {
  try {
    parseSigningRequest(body, network);
  } catch (err) {
    if (err instanceof SigilError) return err;
    throw err;
  }
  throw new Error("expected the example to be refused");
}

function example(name: string): Body {
  const entry = examples[name];
  if (!entry) throw new Error(`no example named ${name}`);
  return structuredClone(entry.value);
}

/** Recursively rename camelCase keys to snake_case. */
function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      snakeKeys(v),
    ]),
  );
}

/**
 * A minimal-preset devnet as Web3Signer's examples assume it: consensus-specs' minimal config
 * (genesis fork version 0x00000001), loaded the way an operator's `network: config.yaml` is.
 */
const minimalDevnet = (() => {
  const loaded = parseSpecConfig(
    [
      "PRESET_BASE: 'minimal'",
      "CONFIG_NAME: 'minimal'",
      "GENESIS_FORK_VERSION: 0x00000001",
      "ALTAIR_FORK_VERSION: 0x01000001",
      "ALTAIR_FORK_EPOCH: 18446744073709551615",
      "CAPELLA_FORK_VERSION: 0x03000001",
      "DENEB_FORK_EPOCH: 18446744073709551615",
      "SECONDS_PER_SLOT: 6",
    ].join("\n"),
    "minimal.yaml",
  );
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  return loaded.network;
})();

/** The example signs with its documented root on the minimal-preset devnet. */
function signsOnMinimal(name: string): void {
  const body = example(name);
  expect(toHex(parseSigningRequest(body, minimalDevnet).signingRoot)).toBe(body.signingRoot);
}

/** Examples that sigil (mainnet preset, snake_case JSON) must refuse, with the reason. */
const REFUSED: Record<string, { code: ErrorCode; reason: string; proof: () => void }> = {
  "BLOCK_V2 (ALTAIR)": {
    code: "invalid_request",
    reason:
      "built for the minimal preset: sync_committee_bits has 32 bits (minimal SYNC_COMMITTEE_SIZE), mainnet has 512",
    proof: () => signsOnMinimal("BLOCK_V2 (ALTAIR)"),
  },
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: {
    code: "invalid_request",
    reason:
      "built for the minimal preset: aggregation_bits has 8 bits (minimal SYNC_COMMITTEE_SIZE / SUBNET_COUNT), mainnet has 128",
    proof: () => signsOnMinimal("SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF"),
  },
  VALIDATOR_REGISTRATION: {
    code: "signing_root_mismatch",
    reason:
      "signed with genesis fork version 0x00000001 (the minimal preset config); mainnet's is 0x00000000",
    proof: () => {
      const devnet = resolveNetwork("mainnet", { genesis_fork_version: "0x00000001" });
      const req = parseSigningRequest(example("VALIDATOR_REGISTRATION"), devnet);
      expect(req.operation).toBe("VALIDATOR_REGISTRATION");
      signsOnMinimal("VALIDATOR_REGISTRATION");
    },
  },
  "AGGREGATE_AND_PROOF_V2 (ELECTRA)": {
    code: "signing_root_mismatch",
    reason:
      "the documented signingRoot matches no preset: committee_bits has 8 bytes (mainnet Bitvector[64]; minimal's Bitvector[4] cannot decode it), and Lodestar's mainnet Electra AggregateAndProof gives sigil's root",
    proof: () => electraAgreesWithLodestar("AGGREGATE_AND_PROOF_V2 (ELECTRA)"),
  },
  "AGGREGATE_AND_PROOF_V2 (FULU)": {
    code: "signing_root_mismatch",
    reason: "same payload and root as the ELECTRA example",
    proof: () => electraAgreesWithLodestar("AGGREGATE_AND_PROOF_V2 (FULU)"),
  },
  "BLOCK (DEPRECATED)": {
    code: "invalid_request",
    reason:
      "stale camelCase keys (fork.previousVersion, block.proposerIndex, …); Web3Signer and every client use snake_case",
    proof: () => acceptedOnceSnakeCased("BLOCK (DEPRECATED)"),
  },
  AGGREGATION_SLOT: {
    code: "invalid_request",
    reason: "stale camelCase keys in fork_info (previousVersion, currentVersion)",
    proof: () => acceptedOnceSnakeCased("AGGREGATION_SLOT"),
  },
  DEPOSIT: {
    code: "unsupported_operation",
    reason: "DEPOSIT is not one of sigil's signing operations",
    proof: () => {},
  },
};

function electraAgreesWithLodestar(name: string): void {
  const body = example(name);
  const data = (body.aggregate_and_proof as { data: unknown }).data;
  const type = lodestarSsz.electra.AggregateAndProof;
  const objectRoot = type.hashTreeRoot(type.fromJson(data));
  const forkInfo = body.fork_info as {
    fork: { current_version: string };
    genesis_validators_root: string;
  };
  const domain = lodestarDomain(
    DOMAIN_AGGREGATE_AND_PROOF,
    fromHex(forkInfo.fork.current_version),
    fromHex(forkInfo.genesis_validators_root),
  );
  const lodestarRoot = toHex(lodestarSigningRoot(objectRoot, domain));
  const { signingRoot: _documented, ...withoutRoot } = body;
  const sigil = parseSigningRequest(withoutRoot, mainnet);
  expect(toHex(sigil.signingRoot)).toBe(lodestarRoot);
  expect(lodestarRoot).not.toBe(body.signingRoot);
}

function acceptedOnceSnakeCased(name: string): void {
  const body = example(name);
  // signingRoot becomes signing_root, which sigil checks just the same.
  const snake = snakeKeys(body) as Record<string, unknown>;
  expect(snake.signing_root).toBe(body.signingRoot);
  expect(toHex(parseSigningRequest(snake, mainnet).signingRoot)).toBe(body.signingRoot);
}

const EXPECTED_OPERATION: Record<string, string> = {
  BLOCK_V2: "BLOCK_V2",
  BLOCK: "BLOCK_V2",
  ATTESTATION: "ATTESTATION",
  AGGREGATE_AND_PROOF: "AGGREGATE_AND_PROOF",
  AGGREGATE_AND_PROOF_V2: "AGGREGATE_AND_PROOF",
  RANDAO_REVEAL: "RANDAO_REVEAL",
  VOLUNTARY_EXIT: "VOLUNTARY_EXIT",
  SYNC_COMMITTEE_MESSAGE: "SYNC_COMMITTEE_MESSAGE",
  SYNC_COMMITTEE_SELECTION_PROOF: "SYNC_COMMITTEE_SELECTION_PROOF",
  SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF: "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
  AGGREGATION_SLOT: "AGGREGATION_SLOT",
  VALIDATOR_REGISTRATION: "VALIDATOR_REGISTRATION",
};

const names = Object.keys(examples);
const accepted = names.filter((name) => !(name in REFUSED));

describe("Web3Signer OpenAPI sign examples", () => {
  test("the spec still has the examples this test names", () => {
    expect(names.length).toBeGreaterThanOrEqual(25);
    for (const name of Object.keys(REFUSED)) expect(names).toContain(name);
  });

  test.each(accepted)("%s: accepted on mainnet with its documented signingRoot", (name) => {
    const body = example(name);
    const req = parseSigningRequest(body, mainnet);
    expect(req.operation).toBe(EXPECTED_OPERATION[body.type] as typeof req.operation);
    expect(toHex(req.signingRoot)).toBe(body.signingRoot);
    if (req.operation === "BLOCK_V2") expect(req.slashable).toEqual({ kind: "block", slot: 0n });
    if (req.operation === "ATTESTATION") {
      expect(req.slashable).toEqual({ kind: "attestation", sourceEpoch: 0n, targetEpoch: 0n });
    }
  });

  describe.each(Object.entries(REFUSED))("%s", (name, { code, reason, proof }) => {
    test(`refused with ${code}: ${reason}`, () => {
      expect(failure(example(name)).code).toBe(code);
    });
    test("and that reason is the only one", proof);
  });
});
