import { describe, expect, test } from "bun:test";
import { bytesToHex } from "../../src/antislashing/encoding";
import {
  collectInterchange,
  InterchangeFormatError,
  interchangeSource,
  interchangeToString,
  readInterchange,
  writeInterchange,
} from "../../src/antislashing/interchange";
import { type InterchangeValidator, SlashingImportError } from "../../src/antislashing/store";
import { iAtt, iBlock, pubkey, root } from "./support";

const GVR = `0x${"ab".repeat(32)}`;
const PK = pubkey(1);
const ROOT = `0x${"cd".repeat(32)}`;

function doc(
  data: unknown,
  metadata: unknown = { interchange_format_version: "5", genesis_validators_root: GVR },
) {
  return JSON.stringify({ metadata, data });
}

function validator(blocks: unknown[] = [], attestations: unknown[] = [], pk: unknown = PK) {
  return { pubkey: pk, signed_blocks: blocks, signed_attestations: attestations };
}

/** Reads the whole document; resolves with the error it fails with. */
async function failure(
  input: string | ReadableStream<Uint8Array>,
): Promise<InterchangeFormatError> {
  try {
    await collectInterchange(await readInterchange(input));
  } catch (error) {
    if (error instanceof InterchangeFormatError) return error;
    throw error;
  }
  throw new Error("expected the document to be rejected");
}

function streamOf(
  text: string,
  chunkSize: number,
  onPull?: (offset: number) => void,
): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      onPull?.(offset);
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

describe("readInterchange: valid documents", () => {
  test("the EIP-3076 example", async () => {
    const text = JSON.stringify({
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root:
          "0x04700007fabc8282644aed6d1c7c9e21d38a03a0c4ba193f3afe428824b3a673",
      },
      data: [
        {
          pubkey:
            "0xb845089a1457f811bfc000588fbb4e713669be8ce060ea6be3c6ece09afc3794106c91ca73acda5e5457122d58723bed",
          signed_blocks: [
            {
              slot: "81952",
              signing_root: "0x4ff6f743a43f3b4f95350831aeaf0a122a1a392922c45d804280284a69eb850b",
            },
            { slot: "81951" },
          ],
          signed_attestations: [
            {
              source_epoch: "2290",
              target_epoch: "3007",
              signing_root: "0x587d6a4f59a58fe24f406e0502413e77fe1babddee641fda30034ed37ecc884d",
            },
            { source_epoch: "2290", target_epoch: "3008" },
          ],
        },
      ],
    });
    const { metadata, validators } = await collectInterchange(await readInterchange(text));
    expect(metadata.genesis_validators_root).toBe(
      "0x04700007fabc8282644aed6d1c7c9e21d38a03a0c4ba193f3afe428824b3a673",
    );
    expect(validators.length).toBe(1);
    const [v] = validators;
    expect(v?.blocks.map((b) => [b.slot, b.signingRoot && bytesToHex(b.signingRoot)])).toEqual([
      [81952n, "0x4ff6f743a43f3b4f95350831aeaf0a122a1a392922c45d804280284a69eb850b"],
      [81951n, undefined],
    ]);
    expect(v?.attestations[1]).toEqual({ sourceEpoch: 2290n, targetEpoch: 3008n });
  });

  test("upper-case hex is normalised; null signing_root and unknown keys are accepted", async () => {
    const text = JSON.stringify({
      extra: { anything: [1, 2, 3] },
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: GVR.toUpperCase().replace("0X", "0x"),
        comment: "x",
      },
      data: [
        {
          pubkey: PK.toUpperCase().replace("0X", "0x"),
          signed_blocks: [{ slot: "1", signing_root: null }],
          signed_attestations: [],
          note: "y",
        },
      ],
    });
    const { metadata, validators } = await collectInterchange(await readInterchange(text));
    expect(metadata.genesis_validators_root).toBe(GVR);
    expect(validators).toEqual([{ pubkey: PK, blocks: [{ slot: 1n }], attestations: [] }]);
  });

  test("uint64 bounds", async () => {
    const max = "18446744073709551615";
    const { validators } = await collectInterchange(
      await readInterchange(
        doc([
          validator([{ slot: max }, { slot: "0" }], [{ source_epoch: "0", target_epoch: max }]),
        ]),
      ),
    );
    expect(validators[0]?.blocks.map((b) => b.slot)).toEqual([(1n << 64n) - 1n, 0n]);
  });

  test("data before metadata is buffered", async () => {
    const text = `{"data":[${JSON.stringify(validator([{ slot: "3" }]))}],"metadata":{"interchange_format_version":"5","genesis_validators_root":"${GVR}"}}`;
    const { validators } = await collectInterchange(await readInterchange(streamOf(text, 7)));
    expect(validators[0]?.blocks).toEqual([{ slot: 3n }]);
  });

  test("an empty data array", async () => {
    const { validators } = await collectInterchange(await readInterchange(doc([])));
    expect(validators).toEqual([]);
  });

  test("validators() of a parsed stream can be iterated only once", async () => {
    const source = await readInterchange(doc([validator()]));
    await collectInterchange(source);
    expect(() => source.validators()).toThrow(/once/);
  });

  test("multi-byte UTF-8 split across chunks is fine", async () => {
    const text = JSON.stringify({
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR, note: "żółw 🐢" },
      data: [validator([{ slot: "9" }])],
    });
    const { validators } = await collectInterchange(await readInterchange(streamOf(text, 3)));
    expect(validators.length).toBe(1);
  });
});

describe("readInterchange: invalid documents are rejected with a JSON path", () => {
  const att = (source: unknown, target: unknown, signing_root?: unknown) =>
    signing_root === undefined
      ? { source_epoch: source, target_epoch: target }
      : { source_epoch: source, target_epoch: target, signing_root };
  const cases: [string, string, string][] = [
    ["not JSON", "{nope", "$"],
    ["truncated", doc([validator([{ slot: "1" }])]).slice(0, -5), "$"],
    ["trailing garbage", `${doc([])} {}`, "$"],
    ["empty input", "", "$"],
    ["top level is an array", "[]", "$"],
    ["top level is a string", '"interchange"', "$"],
    ["missing metadata", JSON.stringify({ data: [] }), "$.metadata"],
    ["metadata is not an object", JSON.stringify({ metadata: "5", data: [] }), "$.metadata"],
    [
      "duplicate metadata",
      `{"metadata":{"interchange_format_version":"5","genesis_validators_root":"${GVR}"},"metadata":{},"data":[]}`,
      "$.metadata",
    ],
    ["duplicate data", `${doc([]).slice(0, -1)},"data":[]}`, "$.data"],
    [
      "duplicate key inside metadata",
      `{"metadata":{"interchange_format_version":"5","genesis_validators_root":"${GVR}","genesis_validators_root":"${GVR}"},"data":[]}`,
      "$.metadata.genesis_validators_root",
    ],
    [
      // A second (empty) list would otherwise replace the first and drop its history.
      "duplicate signed_attestations in a validator",
      doc([]).replace(
        '"data":[]',
        `"data":[{"pubkey":"${pubkey(1)}","signed_blocks":[],"signed_attestations":[{"source_epoch":"1","target_epoch":"2"}],"signed_attestations":[]}]`,
      ),
      "$.data[0].signed_attestations",
    ],
    [
      "duplicate key in a record",
      doc([]).replace(
        '"data":[]',
        `"data":[{"pubkey":"${pubkey(1)}","signed_blocks":[{"slot":"1","slot":"2"}],"signed_attestations":[]}]`,
      ),
      "$.data[0].signed_blocks[0].slot",
    ],
    [
      "version 4",
      doc([], { interchange_format_version: "4", genesis_validators_root: GVR }),
      "$.metadata.interchange_format_version",
    ],
    [
      "version as a number",
      doc([], { interchange_format_version: 5, genesis_validators_root: GVR }),
      "$.metadata.interchange_format_version",
    ],
    [
      "missing version",
      doc([], { genesis_validators_root: GVR }),
      "$.metadata.interchange_format_version",
    ],
    [
      "short genesis root",
      doc([], { interchange_format_version: "5", genesis_validators_root: "0xabcd" }),
      "$.metadata.genesis_validators_root",
    ],
    [
      "non-hex genesis root",
      doc([], { interchange_format_version: "5", genesis_validators_root: `0x${"zz".repeat(32)}` }),
      "$.metadata.genesis_validators_root",
    ],
    [
      "genesis root without 0x",
      doc([], { interchange_format_version: "5", genesis_validators_root: "ab".repeat(32) }),
      "$.metadata.genesis_validators_root",
    ],
    [
      "missing data",
      JSON.stringify({
        metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      }),
      "$.data",
    ],
    ["data is an object", doc({ 0: validator() }), "$.data"],
    ["data entry is not an object", doc([validator(), 7]), "$.data[1]"],
    ["missing pubkey", doc([{ signed_blocks: [], signed_attestations: [] }]), "$.data[0].pubkey"],
    ["short pubkey", doc([validator([], [], "0x1234")]), "$.data[0].pubkey"],
    ["pubkey of 49 bytes", doc([validator([], [], `0x${"11".repeat(49)}`)]), "$.data[0].pubkey"],
    [
      "missing signed_blocks",
      doc([{ pubkey: PK, signed_attestations: [] }]),
      "$.data[0].signed_blocks",
    ],
    [
      "signed_attestations is not an array",
      doc([{ pubkey: PK, signed_blocks: [], signed_attestations: {} }]),
      "$.data[0].signed_attestations",
    ],
    ["block is not an object", doc([validator(["1"])]), "$.data[0].signed_blocks[0]"],
    ["missing slot", doc([validator([{ signing_root: ROOT }])]), "$.data[0].signed_blocks[0].slot"],
    ["slot as a JSON number", doc([validator([{ slot: 1 }])]), "$.data[0].signed_blocks[0].slot"],
    [
      "negative slot",
      doc([validator([{ slot: "1" }, { slot: "-1" }])]),
      "$.data[0].signed_blocks[1].slot",
    ],
    [
      "slot 2^64",
      doc([validator([{ slot: "18446744073709551616" }])]),
      "$.data[0].signed_blocks[0].slot",
    ],
    ["fractional slot", doc([validator([{ slot: "1.5" }])]), "$.data[0].signed_blocks[0].slot"],
    ["hex slot", doc([validator([{ slot: "0x10" }])]), "$.data[0].signed_blocks[0].slot"],
    ["empty slot", doc([validator([{ slot: "" }])]), "$.data[0].signed_blocks[0].slot"],
    ["slot with spaces", doc([validator([{ slot: " 1" }])]), "$.data[0].signed_blocks[0].slot"],
    [
      "short block root",
      doc([validator([{ slot: "1", signing_root: "0x00" }])]),
      "$.data[0].signed_blocks[0].signing_root",
    ],
    [
      "block root as a number",
      doc([validator([{ slot: "1", signing_root: 0 }])]),
      "$.data[0].signed_blocks[0].signing_root",
    ],
    [
      "missing source",
      doc([validator([], [{ target_epoch: "1" }])]),
      "$.data[0].signed_attestations[0].source_epoch",
    ],
    [
      "missing target",
      doc([validator([], [att("1", "2"), { source_epoch: "1" }])]),
      "$.data[0].signed_attestations[1].target_epoch",
    ],
    [
      "target out of range",
      doc([validator([], [att("1", "99999999999999999999")])]),
      "$.data[0].signed_attestations[0].target_epoch",
    ],
    [
      "bad attestation root",
      doc([validator([], [att("1", "2", `0x${"0".repeat(63)}`)])]),
      "$.data[0].signed_attestations[0].signing_root",
    ],
    [
      "error deep in a later validator",
      doc([validator(), validator(), validator([], [att("1", "2"), att("x", "3")])]),
      "$.data[2].signed_attestations[1].source_epoch",
    ],
  ];

  for (const [what, text, path] of cases) {
    test(what, async () => {
      const error = await failure(text);
      expect(error).toBeInstanceOf(SlashingImportError);
      expect(error.path).toBe(path);
      // The whole document ("$") is not named: the problem says it alone.
      if (path === "$") expect(error.message).not.toStartWith("$");
      else expect(error.message.startsWith(`${path}: `)).toBe(true);
    });
  }

  test("the same errors come out of a chunked stream", async () => {
    for (const [, text, path] of cases) {
      expect((await failure(streamOf(text, 5))).path).toBe(path);
    }
  });
});

describe("writeInterchange", () => {
  const validators: InterchangeValidator[] = [
    {
      pubkey: PK,
      blocks: [iBlock(1, root("b1")), iBlock(2)],
      attestations: [iAtt(0, 1, root("a1")), iAtt(1, 2), iAtt(0, (1n << 64n) - 1n)],
    },
    { pubkey: pubkey(2), blocks: [], attestations: [] },
  ];
  const source = () =>
    interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: GVR },
      validators,
    );

  test("numbers as decimal strings, roots as 0x hex, absent roots omitted", async () => {
    const parsed = JSON.parse(await interchangeToString(source()));
    expect(parsed.metadata).toEqual({
      interchange_format_version: "5",
      genesis_validators_root: GVR,
    });
    expect(parsed.data[0].signed_blocks).toEqual([
      { slot: "1", signing_root: bytesToHex(root("b1")) },
      { slot: "2" },
    ]);
    expect(parsed.data[0].signed_attestations[1]).toEqual({ source_epoch: "1", target_epoch: "2" });
    expect(parsed.data[0].signed_attestations[2].target_epoch).toBe("18446744073709551615");
    expect(parsed.data[1]).toEqual({
      pubkey: pubkey(2),
      signed_blocks: [],
      signed_attestations: [],
    });
  });

  test("round trip through write and read", async () => {
    const text = await interchangeToString(source());
    const back = await collectInterchange(await readInterchange(text));
    expect(back).toEqual({
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      validators,
    });
    const empty = await interchangeToString(interchangeSource(back.metadata, []));
    expect(JSON.parse(empty)).toEqual({ metadata: back.metadata, data: [] });
  });

  test("into a WritableStream, which is closed at the end", async () => {
    const chunks: Uint8Array[] = [];
    let closed = false;
    const sink = new WritableStream<Uint8Array>({
      write(chunk) {
        chunks.push(chunk);
      },
      close() {
        closed = true;
      },
    });
    const counts = await writeInterchange(source(), sink);
    expect(counts).toEqual({ validators: 2, blocks: 2, attestations: 3 });
    expect(closed).toBe(true);
    const text = new TextDecoder().decode(Buffer.concat(chunks));
    expect((await collectInterchange(await readInterchange(text))).validators).toEqual(validators);
  });

  test("a source failing part way rejects and aborts the stream", async () => {
    let aborted = false;
    const sink = new WritableStream<Uint8Array>({
      abort() {
        aborted = true;
      },
    });
    const failing = interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: GVR },
      async function* () {
        yield* validators;
        throw new Error("database went away");
      },
    );
    await expect(writeInterchange(failing, sink)).rejects.toThrow("database went away");
    expect(aborted).toBe(true);
  });
});

describe("streaming", () => {
  const VALIDATORS = 500;
  const PER_KIND = 50; // 500 × (50 blocks + 50 attestations) = 50,000 records

  function generated(): InterchangeValidator[] {
    return Array.from({ length: VALIDATORS }, (_, v) => ({
      pubkey: pubkey(v, 0xfeed),
      blocks: Array.from({ length: PER_KIND }, (_, i) =>
        i % 3 === 0 ? iBlock(BigInt(v * 1000 + i)) : iBlock(BigInt(v * 1000 + i), root(v, "b", i)),
      ),
      attestations: Array.from({ length: PER_KIND }, (_, i) => iAtt(i, i + 1, root(v, "a", i))),
    }));
  }

  test("a 50k-record document is parsed validator by validator, pulling input only as needed", async () => {
    const text = await interchangeToString(
      interchangeSource(
        { interchange_format_version: "5", genesis_validators_root: GVR },
        generated(),
      ),
    );
    expect(text.length).toBeGreaterThan(4_000_000);
    let pulledUpTo = 0;
    const stream = streamOf(text, 16 * 1024, (offset) => {
      pulledUpTo = offset;
    });
    const source = await readInterchange(stream);
    // The metadata came from the first chunk(s), not from reading the whole file.
    expect(pulledUpTo).toBeLessThan(text.length / 10);
    let validators = 0;
    let records = 0;
    let pulledAtFirst = -1;
    for await (const v of source.validators()) {
      if (pulledAtFirst < 0) pulledAtFirst = pulledUpTo;
      validators += 1;
      records += v.blocks.length + v.attestations.length;
    }
    expect(pulledAtFirst).toBeLessThan(text.length / 10);
    expect(validators).toBe(VALIDATORS);
    expect(records).toBe(VALIDATORS * PER_KIND * 2);
  });

  test("stopping early cancels the input stream", async () => {
    const text = await interchangeToString(
      interchangeSource(
        { interchange_format_version: "5", genesis_validators_root: GVR },
        generated(),
      ),
    );
    let cancelled = false;
    const bytes = new TextEncoder().encode(text);
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 4096));
        offset += 4096;
      },
      cancel() {
        cancelled = true;
      },
    });
    const source = await readInterchange(stream);
    for await (const _ of source.validators()) break;
    expect(cancelled).toBe(true);
  });
});
