import { describe, expect, test } from "bun:test";
import { SigilError } from "../errors";
import { decodeJson } from "./json";
import { NETWORKS } from "./network";
import { parseSigningRequest } from "./parse";
import { PRESETS } from "./preset";
import { presetTypes } from "./ssz";

const mainnet = NETWORKS.mainnet;
const { BeaconBlockBody } = presetTypes(mainnet.preset);
const ROOT_A = `0x${"ab".repeat(32)}`;
const ROOT_B = `0x${"cd".repeat(32)}`;
const GVR = `0x${"4b".repeat(32)}`;
const SIG = `0x${"11".repeat(96)}`;

const forkInfo = () => ({
  fork: { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" },
  genesis_validators_root: GVR,
});

const attestationRequest = (): Record<string, unknown> => ({
  type: "ATTESTATION",
  fork_info: forkInfo(),
  attestation: {
    slot: "11649024",
    index: "3",
    beacon_block_root: ROOT_A,
    source: { epoch: "364030", root: ROOT_B },
    target: { epoch: "364032", root: ROOT_A },
  },
});

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

/** A sync committee contribution whose aggregation_bits are `bits`. */
const contributionRequest = (bits: string) => ({
  type: "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
  fork_info: forkInfo(),
  contribution_and_proof: {
    aggregator_index: "1",
    selection_proof: SIG,
    contribution: {
      slot: "1",
      beacon_block_root: ROOT_A,
      subcommittee_index: "0",
      aggregation_bits: bits,
      signature: SIG,
    },
  },
});

function failure(body: unknown): SigilError {
  try {
    parseSigningRequest(body, mainnet);
  } catch (err) {
    if (err instanceof SigilError) return err;
    throw err;
  }
  throw new Error("expected parseSigningRequest to throw");
}

/** The attestation request with one field replaced (path of keys into the body). */
function withField(path: string[], value: unknown): Record<string, unknown> {
  const body = attestationRequest();
  let node: Record<string, unknown> = body;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path[path.length - 1] ?? "";
  if (value === undefined) delete node[last];
  else node[last] = value;
  return body;
}

describe("parseSigningRequest envelope", () => {
  test("a well-formed attestation gives the operation, root, slashing facts and gvr", () => {
    const req = parseSigningRequest(attestationRequest(), mainnet);
    expect(req.operation).toBe("ATTESTATION");
    expect(req.signingRoot).toHaveLength(32);
    expect(req.slashable).toEqual({
      kind: "attestation",
      sourceEpoch: 364030n,
      targetEpoch: 364032n,
    });
    expect(hex(req.genesisValidatorsRoot ?? new Uint8Array())).toBe(GVR);
  });

  test.each([
    ["null", null],
    ["an array", []],
    ["a string", "ATTESTATION"],
    ["a number", 42],
  ])("a body that is %s → invalid_request", (_name, body) => {
    const err = failure(body);
    expect(err.code).toBe("invalid_request");
    expect(err.message).toContain("JSON object");
  });

  test("missing type → invalid_request", () => {
    const err = failure(withField(["type"], undefined));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("type: required");
  });

  test("non-string type → invalid_request", () => {
    expect(failure(withField(["type"], 7)).code).toBe("invalid_request");
  });

  test.each(["DEPOSIT", "BLS_TO_EXECUTION_CHANGE", "garbage", "constructor", "__proto__"])(
    "type %s → unsupported_operation naming it",
    (type) => {
      const err = failure(withField(["type"], type));
      expect(err.code).toBe("unsupported_operation");
      expect(err.message).toContain(JSON.stringify(type));
    },
  );

  test("type is case-insensitive", () => {
    const lower = parseSigningRequest(withField(["type"], "attestation"), mainnet);
    const mixed = parseSigningRequest(withField(["type"], "Attestation"), mainnet);
    const upper = parseSigningRequest(attestationRequest(), mainnet);
    expect(lower.operation).toBe("ATTESTATION");
    expect(hex(lower.signingRoot)).toBe(hex(upper.signingRoot));
    expect(hex(mixed.signingRoot)).toBe(hex(upper.signingRoot));
  });

  test("missing payload → invalid_request naming the key", () => {
    const err = failure(withField(["attestation"], undefined));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("attestation: required for type ATTESTATION");
  });

  test("missing fork_info → invalid_request", () => {
    const err = failure(withField(["fork_info"], undefined));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("fork_info: required for type ATTESTATION");
  });

  test("fork_info fields are checked with their path", () => {
    const err = failure(withField(["fork_info", "fork", "current_version"], "0x050000"));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe(
      "fork_info.fork.current_version: expected 0x-prefixed hex of 4 bytes, got 3 bytes",
    );
  });

  test("unknown extra fields are ignored at every level", () => {
    const plain = parseSigningRequest(attestationRequest(), mainnet);
    const body = attestationRequest();
    body.proofs = [{ anything: true }];
    (body.attestation as Record<string, unknown>).extra = "x";
    (body.fork_info as { fork: Record<string, unknown> }).fork.note = 1;
    const extra = parseSigningRequest(body, mainnet);
    expect(hex(extra.signingRoot)).toBe(hex(plain.signingRoot));
  });
});

describe("signing root supplied by the client", () => {
  const computed = hex(parseSigningRequest(attestationRequest(), mainnet).signingRoot);

  test.each(["signingRoot", "signing_root"])("a matching %s is accepted", (key) => {
    const req = parseSigningRequest({ ...attestationRequest(), [key]: computed }, mainnet);
    expect(hex(req.signingRoot)).toBe(computed);
  });

  test("upper-case hex is accepted", () => {
    const upper = `0x${computed.slice(2).toUpperCase()}`;
    expect(
      hex(
        parseSigningRequest({ ...attestationRequest(), signingRoot: upper }, mainnet).signingRoot,
      ),
    ).toBe(computed);
  });

  test.each(["signingRoot", "signing_root"])("a different %s → signing_root_mismatch", (key) => {
    const err = failure({ ...attestationRequest(), [key]: ROOT_B });
    expect(err.code).toBe("signing_root_mismatch");
    expect(err.message).toBe(`supplied ${key} ${ROOT_B} does not match the computed ${computed}`);
  });

  test("a malformed signingRoot → invalid_request", () => {
    const err = failure({ ...attestationRequest(), signingRoot: "0x1234" });
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("signingRoot: expected 0x-prefixed hex of 32 bytes, got 2 bytes");
  });
});

describe("field formats", () => {
  const epoch = ["attestation", "target", "epoch"];

  test.each([
    [
      "uint64 overflow",
      epoch,
      "18446744073709551616",
      "attestation.target.epoch: expected a uint64",
    ],
    ["long digit string", epoch, "1".repeat(25), "above 2^64-1"],
    ["a megabyte of digits", epoch, "9".repeat(1 << 20), "a number of 1048576 digits"],
    ["negative string", epoch, "-1", "expected a uint64 as a decimal string"],
    ["negative number", epoch, -1, "negative"],
    ["float", epoch, 1.5, "non-integer"],
    ["unsafe JSON number", epoch, 2 ** 53 + 2, "send uint64 as a decimal string"],
    ["hex string as uint64", epoch, "0x10", "expected a uint64 as a decimal string"],
    ["boolean as uint64", epoch, true, "expected a uint64"],
    ["empty string", epoch, "", "expected a uint64"],
    ["root of 31 bytes", ["attestation", "beacon_block_root"], `0x${"ab".repeat(31)}`, "31 bytes"],
    ["root of 33 bytes", ["attestation", "beacon_block_root"], `0x${"ab".repeat(33)}`, "33 bytes"],
    [
      "root without 0x",
      ["attestation", "beacon_block_root"],
      "ab".repeat(32),
      "not 0x-prefixed hex",
    ],
    [
      "non-hex root",
      ["attestation", "beacon_block_root"],
      `0x${"zz".repeat(32)}`,
      "not 0x-prefixed hex",
    ],
    [
      "odd-length hex",
      ["attestation", "beacon_block_root"],
      `0x${"a".repeat(63)}`,
      "not 0x-prefixed hex",
    ],
    ["nested object missing", ["attestation", "source"], undefined, "attestation.source: required"],
    [
      "nested object wrong type",
      ["attestation", "source"],
      "x",
      "attestation.source: expected an object",
    ],
  ])("%s → invalid_request naming the field", (_name, path, value, fragment) => {
    const err = failure(withField(path, value));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toContain(fragment);
    expect(err.message.startsWith(path.slice(0, 2).join("."))).toBe(true);
  });

  test("uint64 maximum as a string and safe JSON numbers are accepted", () => {
    const max = parseSigningRequest(withField(epoch, "18446744073709551615"), mainnet);
    expect(max.slashable).toMatchObject({ targetEpoch: 2n ** 64n - 1n });
    const asNumber = parseSigningRequest(withField(epoch, 364032), mainnet);
    const asString = parseSigningRequest(attestationRequest(), mainnet);
    expect(hex(asNumber.signingRoot)).toBe(hex(asString.signingRoot));
    const safe = parseSigningRequest(withField(epoch, Number.MAX_SAFE_INTEGER), mainnet);
    expect(safe.slashable).toMatchObject({ targetEpoch: BigInt(Number.MAX_SAFE_INTEGER) });
  });

  test("pubkey of 47 bytes in a validator registration → invalid_request", () => {
    const err = failure({
      type: "VALIDATOR_REGISTRATION",
      validator_registration: {
        fee_recipient: `0x${"12".repeat(20)}`,
        gas_limit: "30000000",
        timestamp: "1700000000",
        pubkey: `0x${"a1".repeat(47)}`,
      },
    });
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe(
      "validator_registration.pubkey: expected 0x-prefixed hex of 48 bytes, got 47 bytes",
    );
  });

  test("list over its limit and bitlists without delimiter → invalid_request with index paths", () => {
    const exits = Array.from({ length: 17 }, () => ({
      message: { epoch: "1", validator_index: "2" },
      signature: SIG,
    }));
    const block = phase0Block();
    block.body.voluntary_exits = exits;
    let err = failure(blockRequest("PHASE0", { block }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe(
      "beacon_block.block.body.voluntary_exits: expected at most 16 items, got 17",
    );

    const block2 = phase0Block();
    block2.body.attestations = [
      { aggregation_bits: "0x0100", data: attestationRequest().attestation, signature: SIG },
    ];
    err = failure(blockRequest("PHASE0", { block: block2 }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toStartWith("beacon_block.block.body.attestations[0].aggregation_bits:");
    expect(err.message).toContain("length delimiter");
  });

  test("a bitlist longer than its limit → invalid_request", () => {
    const block = phase0Block();
    // 2049 bits: 256 full bytes and a delimiter in the 257th byte at bit 1.
    block.body.attestations = [
      {
        aggregation_bits: `0x${"ff".repeat(256)}02`,
        data: attestationRequest().attestation,
        signature: SIG,
      },
    ];
    const err = failure(blockRequest("PHASE0", { block }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toContain("2049 bits exceeds the limit of 2048 bits");
  });

  test("a bitvector of the wrong size → invalid_request", () => {
    // 8 bits: the minimal preset's size, not mainnet's 128
    const err = failure(contributionRequest("0x24"));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe(
      "contribution_and_proof.contribution.aggregation_bits: expected an SSZ bitvector of 128 bits (16 bytes) as 0x-prefixed hex, got 1 byte",
    );
  });

  test("a minimal-preset bitvector's size is counted in the singular: 8 bits (1 byte)", () => {
    const minimal = { ...mainnet, preset: PRESETS.minimal };
    let message = "";
    try {
      parseSigningRequest(contributionRequest("0x2400"), minimal);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      "contribution_and_proof.contribution.aggregation_bits: expected an SSZ bitvector of 8 bits (1 byte) as 0x-prefixed hex, got 2 bytes",
    );
  });
});

function phase0Block() {
  return {
    slot: "100",
    proposer_index: "7",
    parent_root: ROOT_A,
    state_root: ROOT_B,
    body: {
      randao_reveal: SIG,
      eth1_data: { deposit_root: ROOT_A, deposit_count: "5", block_hash: ROOT_B },
      graffiti: ROOT_A,
      proposer_slashings: [] as unknown[],
      attester_slashings: [] as unknown[],
      attestations: [] as unknown[],
      deposits: [] as unknown[],
      voluntary_exits: [] as unknown[],
    },
  };
}

function blockRequest(version: string, content: Record<string, unknown>) {
  return { type: "BLOCK_V2", fork_info: forkInfo(), beacon_block: { version, ...content } };
}

describe("aliases and payload shapes", () => {
  test("legacy BLOCK is BLOCK_V2 with a phase0 block under `block`", () => {
    const block = phase0Block();
    const legacy = parseSigningRequest({ type: "BLOCK", fork_info: forkInfo(), block }, mainnet);
    const v2 = parseSigningRequest(blockRequest("PHASE0", { block }), mainnet);
    expect(legacy.operation).toBe("BLOCK_V2");
    expect(legacy.slashable).toEqual({ kind: "block", slot: 100n });
    expect(hex(legacy.signingRoot)).toBe(hex(v2.signingRoot));
  });

  test("a block header gives the same root as the full block, for any version", () => {
    const block = phase0Block();
    const full = parseSigningRequest(blockRequest("phase0", { block }), mainnet);
    const bodyRoot = hex(
      BeaconBlockBody.hashTreeRoot(decodeJson(BeaconBlockBody, block.body, "b")),
    );
    const header = {
      slot: block.slot,
      proposer_index: block.proposer_index,
      parent_root: block.parent_root,
      state_root: block.state_root,
      body_root: bodyRoot,
    };
    for (const version of ["PHASE0", "ALTAIR", "BELLATRIX", "DENEB", "fulu"]) {
      const req = parseSigningRequest(blockRequest(version, { block_header: header }), mainnet);
      expect(hex(req.signingRoot)).toBe(hex(full.signingRoot));
      expect(req.slashable).toEqual({ kind: "block", slot: 100n });
    }
  });

  test("a full block for BELLATRIX or later → invalid_request asking for block_header", () => {
    const err = failure(blockRequest("BELLATRIX", { block: phase0Block() }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toStartWith("beacon_block.block_header: required for version BELLATRIX");
  });

  test("an unknown block version → invalid_request", () => {
    const err = failure(blockRequest("GLOAS2", { block: phase0Block() }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toStartWith("beacon_block.version: expected one of PHASE0");
  });

  test("a block version nested 100k deep or a megabyte long → invalid_request with a short message", () => {
    let deep: unknown = "ELECTRA";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    let deepObject: unknown = "ELECTRA";
    for (let i = 0; i < 100_000; i++) deepObject = { a: deepObject };
    for (const version of [deep, deepObject, "E".repeat(1 << 20)]) {
      const err = failure({
        type: "BLOCK_V2",
        fork_info: forkInfo(),
        beacon_block: { version, block_header: {} },
      });
      expect(err.code).toBe("invalid_request");
      expect(err.message).toStartWith("beacon_block.version: expected one of PHASE0");
      expect(err.message.length).toBeLessThan(300);
    }
  });

  test("an ALTAIR full block without sync_aggregate → invalid_request", () => {
    const err = failure(blockRequest("ALTAIR", { block: phase0Block() }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("beacon_block.block.body.sync_aggregate: required");
  });

  const aggregate = {
    aggregator_index: "9",
    aggregate: {
      aggregation_bits: "0x0f",
      data: attestationRequest().attestation,
      signature: SIG,
    },
    selection_proof: SIG,
  };

  test("AGGREGATE_AND_PROOF_V2 is an alias; plain and {version,data} shapes agree", () => {
    const roots = [
      { type: "AGGREGATE_AND_PROOF", aggregate_and_proof: aggregate },
      { type: "AGGREGATE_AND_PROOF_V2", aggregate_and_proof: aggregate },
      { type: "AGGREGATE_AND_PROOF", aggregate_and_proof: { version: "DENEB", data: aggregate } },
      {
        type: "aggregate_and_proof_v2",
        aggregate_and_proof: { version: "phase0", data: aggregate },
      },
    ].map((body) => {
      const req = parseSigningRequest({ ...body, fork_info: forkInfo() }, mainnet);
      expect(req.operation).toBe("AGGREGATE_AND_PROOF");
      expect(req.slashable).toBeUndefined();
      return hex(req.signingRoot);
    });
    expect(new Set(roots).size).toBe(1);
  });

  test("Electra aggregates: versioned and plain (committee_bits present) agree", () => {
    const electra = {
      ...aggregate,
      aggregate: { ...aggregate.aggregate, committee_bits: "0x0100000000000000" },
    };
    const versioned = parseSigningRequest(
      {
        type: "AGGREGATE_AND_PROOF_V2",
        fork_info: forkInfo(),
        aggregate_and_proof: { version: "ELECTRA", data: electra },
      },
      mainnet,
    );
    const plain = parseSigningRequest(
      { type: "AGGREGATE_AND_PROOF", fork_info: forkInfo(), aggregate_and_proof: electra },
      mainnet,
    );
    const phase0 = parseSigningRequest(
      { type: "AGGREGATE_AND_PROOF", fork_info: forkInfo(), aggregate_and_proof: aggregate },
      mainnet,
    );
    expect(hex(plain.signingRoot)).toBe(hex(versioned.signingRoot));
    expect(hex(plain.signingRoot)).not.toBe(hex(phase0.signingRoot));
    const missing = failure({
      type: "AGGREGATE_AND_PROOF_V2",
      fork_info: forkInfo(),
      aggregate_and_proof: { version: "FULU", data: aggregate },
    });
    expect(missing.code).toBe("invalid_request");
    expect(missing.message).toBe("aggregate_and_proof.data.aggregate.committee_bits: required");
  });

  test("VALIDATOR_REGISTRATION needs no fork_info and ignores one that is sent", () => {
    const registration = {
      fee_recipient: `0x${"12".repeat(20)}`,
      gas_limit: "30000000",
      timestamp: "1700000000",
      pubkey: `0x${"a1".repeat(48)}`,
    };
    const bare = parseSigningRequest(
      { type: "VALIDATOR_REGISTRATION", validator_registration: registration },
      mainnet,
    );
    const withFork = parseSigningRequest(
      { type: "VALIDATOR_REGISTRATION", validator_registration: registration, fork_info: "junk" },
      mainnet,
    );
    expect(bare.operation).toBe("VALIDATOR_REGISTRATION");
    expect(bare.genesisValidatorsRoot).toBeUndefined();
    expect(bare.slashable).toBeUndefined();
    expect(hex(withFork.signingRoot)).toBe(hex(bare.signingRoot));
    const hoodi = parseSigningRequest(
      { type: "VALIDATOR_REGISTRATION", validator_registration: registration },
      NETWORKS.hoodi,
    );
    expect(hex(hoodi.signingRoot)).not.toBe(hex(bare.signingRoot));
  });

  test("each operation reads its own payload key", () => {
    const cases: [string, string, unknown][] = [
      ["AGGREGATION_SLOT", "aggregation_slot", { slot: "64" }],
      ["RANDAO_REVEAL", "randao_reveal", { epoch: "2" }],
      ["VOLUNTARY_EXIT", "voluntary_exit", { epoch: "2", validator_index: "5" }],
      [
        "SYNC_COMMITTEE_MESSAGE",
        "sync_committee_message",
        { beacon_block_root: ROOT_A, slot: "64" },
      ],
      [
        "SYNC_COMMITTEE_SELECTION_PROOF",
        "sync_aggregator_selection_data",
        { slot: "64", subcommittee_index: "1" },
      ],
    ];
    for (const [type, key, payload] of cases) {
      const req = parseSigningRequest({ type, fork_info: forkInfo(), [key]: payload }, mainnet);
      expect(req.operation).toBe(type as typeof req.operation);
      expect(req.slashable).toBeUndefined();
      const err = failure({ type, fork_info: forkInfo(), attestation: payload });
      expect(err.message).toBe(`${key}: required for type ${type}`);
    }
  });
});
