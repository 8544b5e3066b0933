/**
 * Gloas request handling that the Lodestar oracle (test/signing/gloas-oracle.test.ts) does not
 * reach: refusals and their messages, the genesis domain of request auth, which container a bare
 * aggregate gets, and the Gloas schedule of each network.
 */
import { describe, expect, test } from "bun:test";
import { SigilError } from "../errors";
import { SIGNING_OPERATIONS } from "../wire/operations";
import { FAR_FUTURE_EPOCH, NETWORKS, resolveNetwork } from "./network";
import { parseSigningRequest } from "./parse";
import { PRESETS } from "./preset";
import { requestTypesOf } from "./request-types";
import { parseSpecConfig } from "./spec-config";

const mainnet = NETWORKS.mainnet;
const GVR = `0x${"4b".repeat(32)}`;
const ROOT = `0x${"ab".repeat(32)}`;
const SIG = `0x${"11".repeat(96)}`;
const hex = (bytes: Uint8Array | undefined) =>
  bytes ? `0x${Buffer.from(bytes).toString("hex")}` : undefined;

const forkInfo = (current = "0x07000000", previous = "0x06000000") => ({
  fork: { previous_version: previous, current_version: current, epoch: "500000" },
  genesis_validators_root: GVR,
});

const ptcData = {
  beacon_block_root: ROOT,
  slot: "16000000",
  payload_present: true,
  blob_data_available: false,
};
const requestAuth = { data: "0x6275696c6465722e6578616d706c652e6f7267", slot: "16000000" };

function root(body: Record<string, unknown>, network = mainnet): string {
  return hex(parseSigningRequest(body, network).signingRoot) ?? "";
}

function failure(body: Record<string, unknown>, network = mainnet): SigilError {
  try {
    parseSigningRequest(body, network);
  } catch (error) {
    if (error instanceof SigilError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("Gloas request shapes", () => {
  test("wrapped, bare and the aliases of a payload attestation sign the same root", () => {
    const roots = [
      {
        type: "PAYLOAD_ATTESTATION_MESSAGE",
        payload_attestation_message: { version: "GLOAS", data: ptcData },
      },
      { type: "PAYLOAD_ATTESTATION_MESSAGE", payload_attestation_message: ptcData },
      { type: "PAYLOAD_ATTESTATION", payload_attestation_data: ptcData },
      { type: "payload_attestation", payload_attestation: ptcData },
    ].map((body) => {
      const request = parseSigningRequest({ ...body, fork_info: forkInfo() }, mainnet);
      expect(request.operation).toBe("PAYLOAD_ATTESTATION_MESSAGE");
      expect(request.slashable).toBeUndefined();
      return hex(request.signingRoot);
    });
    expect(new Set(roots).size).toBe(1);
  });

  test("a missing payload names every key the type is read from", () => {
    const error = failure({
      type: "PAYLOAD_ATTESTATION",
      fork_info: forkInfo(),
      attestation: ptcData,
    });
    expect(error.code).toBe("invalid_request");
    expect(error.message).toBe(
      "payload_attestation_message: required for type PAYLOAD_ATTESTATION_MESSAGE (or payload_attestation_data, payload_attestation)",
    );
  });

  test("an unknown version is refused 400, naming the versions this build knows", () => {
    const ptc = failure({
      type: "PAYLOAD_ATTESTATION_MESSAGE",
      fork_info: forkInfo(),
      payload_attestation_message: { version: "HEZE", data: ptcData },
    });
    expect(ptc.code).toBe("invalid_request");
    expect(ptc.message).toBe(
      'payload_attestation_message.version: expected one of GLOAS, got the string "HEZE"',
    );
    const block = failure({
      type: "BLOCK_V2",
      fork_info: forkInfo(),
      beacon_block: { version: "HEZE", block_header: {} },
    });
    expect(block.message).toBe(
      'beacon_block.version: expected one of PHASE0, ALTAIR, BELLATRIX, CAPELLA, DENEB, ELECTRA, FULU, GLOAS, got the string "HEZE"',
    );
    // A Gloas-only type under an older version is refused the same way.
    const older = failure({
      type: "PROPOSER_PREFERENCES",
      fork_info: forkInfo(),
      proposer_preferences: { version: "FULU", data: {} },
    });
    expect(older.message).toStartWith("proposer_preferences.version: expected one of GLOAS,");
  });

  test("a Gloas type needs fork_info, except request auth", () => {
    const error = failure({ type: "PROPOSER_PREFERENCES", proposer_preferences: {} });
    expect(error.message).toBe("fork_info: required for type PROPOSER_PREFERENCES");
  });

  test("request auth: genesis version and a zero root, whatever fork_info says; both names", () => {
    const bare = parseSigningRequest(
      {
        type: "BUILDER_REQUEST_AUTH",
        builder_request_auth: { version: "GLOAS", data: requestAuth },
      },
      mainnet,
    );
    expect(bare.operation).toBe("BUILDER_REQUEST_AUTH");
    expect(bare.genesisValidatorsRoot).toBeUndefined();
    const lighthouse = root({
      type: "REQUEST_AUTH",
      fork_info: forkInfo(),
      request_auth: requestAuth,
    });
    expect(lighthouse).toBe(hex(bare.signingRoot) ?? "");
    // Another genesis fork version, another root.
    const hoodi = root({ type: "REQUEST_AUTH", request_auth: requestAuth }, NETWORKS.hoodi);
    expect(hoodi).not.toBe(lighthouse);
  });

  test("field errors name the field: booleans, byte lists, uint256", () => {
    const notBoolean = failure({
      type: "PAYLOAD_ATTESTATION_MESSAGE",
      fork_info: forkInfo(),
      payload_attestation_message: {
        version: "GLOAS",
        data: { ...ptcData, payload_present: "true" },
      },
    });
    expect(notBoolean.message).toBe(
      'payload_attestation_message.data.payload_present: expected true or false, got the string "true"',
    );
    const tooLong = failure({
      type: "BUILDER_REQUEST_AUTH",
      builder_request_auth: { data: `0x${"61".repeat(4097)}`, slot: "1" },
    });
    expect(tooLong.message).toBe(
      "builder_request_auth.data: 4097 bytes exceed the limit of 4096 bytes",
    );
    // builder-specs: a zero-length request auth `data` is invalid, in every shape and name.
    const empty = "must not be empty (builder-specs: a zero-length RequestAuth data is invalid)";
    const emptyWrapped = failure({
      type: "BUILDER_REQUEST_AUTH",
      builder_request_auth: { version: "GLOAS", data: { data: "0x", slot: "1" } },
    });
    expect(emptyWrapped.code).toBe("invalid_request");
    expect(emptyWrapped.message).toBe(`builder_request_auth.data.data: ${empty}`);
    const emptyBare = failure({ type: "REQUEST_AUTH", request_auth: { data: "0x", slot: "1" } });
    expect(emptyBare.message).toBe(`request_auth.data: ${empty}`);
    expect(root({ type: "REQUEST_AUTH", request_auth: { data: "0x00", slot: "1" } })).toStartWith(
      "0x",
    );
    const oddHex = failure({ type: "REQUEST_AUTH", request_auth: { data: "0x123", slot: "1" } });
    expect(oddHex.message).toBe(
      'request_auth.data: expected 0x-prefixed hex of at most 4096 bytes, got "0x123", which is not 0x-prefixed hex of whole bytes',
    );
  });
});

describe("which container an aggregate gets", () => {
  const aggregate = {
    aggregator_index: "7",
    aggregate: {
      aggregation_bits: "0x0f",
      data: {
        slot: "16000000",
        index: "0",
        beacon_block_root: ROOT,
        source: { epoch: "499998", root: ROOT },
        target: { epoch: "500000", root: ROOT },
      },
      signature: SIG,
      committee_bits: "0x0100000000000000",
    },
    selection_proof: SIG,
  };
  const versioned = (version: string, info = forkInfo()) =>
    root({
      type: "AGGREGATE_AND_PROOF_V2",
      fork_info: info,
      aggregate_and_proof: { version, data: aggregate },
    });

  test("GLOAS hashes the progressive Attestation: another root than FULU's for the same JSON", () => {
    expect(versioned("GLOAS")).not.toBe(versioned("FULU"));
    expect(versioned("FULU")).toBe(versioned("ELECTRA"));
  });

  test("bare (Lighthouse): Gloas' container when fork_info's version is the network's Gloas one", () => {
    // Mainnet has not scheduled Gloas, but fork_info says the message is in it.
    const bare = (info: ReturnType<typeof forkInfo>) =>
      root({ type: "AGGREGATE_AND_PROOF", fork_info: info, aggregate_and_proof: aggregate });
    expect(bare(forkInfo())).toBe(versioned("GLOAS"));
    const fulu = forkInfo("0x06000000", "0x05000000");
    expect(bare(fulu)).toBe(versioned("FULU", fulu));
  });

  test("bare: Gloas' container from the network's Gloas epoch on", () => {
    const scheduled = resolveNetwork("mainnet", { gloas_fork_epoch: 500_000 });
    const fulu = forkInfo("0x06000000", "0x05000000");
    const bare = root(
      { type: "AGGREGATE_AND_PROOF", fork_info: fulu, aggregate_and_proof: aggregate },
      scheduled,
    );
    const gloas = root(
      {
        type: "AGGREGATE_AND_PROOF_V2",
        fork_info: fulu,
        aggregate_and_proof: { version: "GLOAS", data: aggregate },
      },
      scheduled,
    );
    expect(bare).toBe(gloas);
  });
});

describe("the Gloas schedule of each network", () => {
  test("Sepolia's is built in; mainnet and hoodi are not scheduled", () => {
    expect(hex(NETWORKS.sepolia.gloasForkVersion)).toBe("0x90000076");
    expect(NETWORKS.sepolia.gloasForkEpoch).toBe(353024n);
    expect(hex(NETWORKS.mainnet.gloasForkVersion)).toBe("0x07000000");
    expect(NETWORKS.mainnet.gloasForkEpoch).toBe(FAR_FUTURE_EPOCH);
    expect(hex(NETWORKS.hoodi.gloasForkVersion)).toBe("0x80000910");
    expect(NETWORKS.hoodi.gloasForkEpoch).toBe(FAR_FUTURE_EPOCH);
  });

  test("network_config schedules it on a named network without making it another chain", () => {
    const scheduled = resolveNetwork("mainnet", {
      gloas_fork_epoch: 420_000,
      gloas_fork_version: "0x07000000",
    });
    expect(scheduled.gloasForkEpoch).toBe(420_000n);
    expect(scheduled.name).toBe("mainnet (fork schedule from network_config)");
    expect(hex(scheduled.genesisValidatorsRoot)).toBe(hex(NETWORKS.mainnet.genesisValidatorsRoot));
    expect(scheduled.genesisTime).toBe(NETWORKS.mainnet.genesisTime);
    // With another key it is a devnet, as before: no root, no clock of mainnet's.
    const devnet = resolveNetwork("mainnet", {
      gloas_fork_epoch: 1,
      genesis_fork_version: "0x00000001",
    });
    expect(devnet.gloasForkEpoch).toBe(1n);
    expect(devnet.genesisValidatorsRoot).toBeUndefined();
  });

  test("a spec config gives it, or leaves it unscheduled; a bad value is refused, named", () => {
    const base = `PRESET_BASE: 'minimal'
GENESIS_FORK_VERSION: 0x10000038
CAPELLA_FORK_VERSION: 0x40000038
DENEB_FORK_EPOCH: 0
SECONDS_PER_SLOT: 6
`;
    const unscheduled = parseSpecConfig(base, "config.yaml");
    if (!unscheduled.ok) throw new Error(JSON.stringify(unscheduled.problems));
    expect(unscheduled.network.gloasForkEpoch).toBe(FAR_FUTURE_EPOCH);
    expect(unscheduled.network.gloasForkVersion).toBeUndefined();
    const scheduled = parseSpecConfig(
      `${base}GLOAS_FORK_VERSION: 0x80000038\nGLOAS_FORK_EPOCH: 12\n`,
      "config.yaml",
    );
    if (!scheduled.ok) throw new Error(JSON.stringify(scheduled.problems));
    expect(scheduled.network.gloasForkEpoch).toBe(12n);
    expect(hex(scheduled.network.gloasForkVersion)).toBe("0x80000038");
    // Next to a spec config, network_config may not schedule it: the file does.
    const overridden = parseSpecConfig(base, "config.yaml", { gloas_fork_epoch: 3 });
    expect(overridden.ok ? [] : overridden.problems.map((p) => p.where)).toEqual([
      "network_config.gloas_fork_epoch",
    ]);
    const bad = parseSpecConfig(`${base}GLOAS_FORK_EPOCH: soon\n`, "config.yaml");
    expect(bad.ok ? [] : bad.problems.map((p) => p.message)).toEqual([
      'config.yaml: GLOAS_FORK_EPOCH: expected an unsigned 64-bit integer, got "soon"',
    ]);
  });
});

test("every request type's operation is a named operation, and every operation has a request type", () => {
  for (const preset of Object.values(PRESETS)) {
    const operations = new Set([...requestTypesOf(preset).values()].map((t) => t.operation));
    expect([...operations].sort()).toEqual([...SIGNING_OPERATIONS].sort());
  }
});
