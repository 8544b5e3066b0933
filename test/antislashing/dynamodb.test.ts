// DynamoDB slashing protection (minimal strategy) against an in-process dynalite: one server for
// this file, a fresh table per test.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CreateTableCommand, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoTableError,
  METADATA_KEY,
  openDynamoStore,
} from "../../src/antislashing/backends/dynamodb/store";
import {
  type Decision,
  type InterchangeSource,
  type InterchangeValidator,
  SlashingDatabaseError,
  SlashingImportError,
  type SlashingStore,
} from "../../src/antislashing/store";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { slashingConformanceSuite } from "./conformance";
import { interchangeVectorSuite } from "./interchange-vectors";
import { slashingPropertySuite } from "./property";

let dynamo: RunningDynamo;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynamo();
});
afterAll(async () => {
  await dynamo?.stop();
});

const GVR = new Uint8Array(32).fill(0x4b);
const OTHER_GVR = new Uint8Array(32).fill(0x01);
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const pubkey = (i: number) => `0x${i.toString(16).padStart(96, "0")}`;
const root = (i: number) => {
  const bytes = new Uint8Array(32);
  new DataView(bytes.buffer).setUint32(28, i);
  return bytes;
};
const ZERO_ROOT = new Uint8Array(32);
const U64_MAX = (1n << 64n) - 1n;

async function freshTable(): Promise<string> {
  tables += 1;
  const name = `slashing-${tables}`;
  await dynamo.createSlashingTable(name);
  return name;
}

async function freshStore(options: { scanPageSize?: number } = {}): Promise<{
  store: SlashingStore;
  table: string;
}> {
  const table = await freshTable();
  return { store: await openDynamoStore({ table, client: dynamo.client(), ...options }), table };
}

function source(
  validators: InterchangeValidator[],
  gvr: Uint8Array = GVR,
): InterchangeSource & { validators(): AsyncIterable<InterchangeValidator> } {
  return {
    metadata: { interchange_format_version: "5", genesis_validators_root: hex(gvr) },
    async *validators() {
      yield* validators;
    },
  };
}

async function collect(src: InterchangeSource): Promise<InterchangeValidator[]> {
  const out: InterchangeValidator[] = [];
  for await (const v of src.validators()) out.push(v);
  return out;
}

const block = (store: SlashingStore, pk: string, slot: bigint, r: Uint8Array, gvr = GVR) =>
  store.checkAndInsertBlock(gvr, { pubkey: pk, slot, signingRoot: r });
const attest = (
  store: SlashingStore,
  pk: string,
  sourceEpoch: bigint,
  targetEpoch: bigint,
  r: Uint8Array,
  gvr = GVR,
) => store.checkAndInsertAttestation(gvr, { pubkey: pk, sourceEpoch, targetEpoch, signingRoot: r });

/** A new, empty store on a table of its own: what the shared suites ask of `open`. */
const openFresh = async (): Promise<SlashingStore> => (await freshStore()).store;

/** Watermarks only: nothing to prune, and every check is durable when it answers. */
const CAPABILITIES = { strategy: "minimal", prunes: false, stages: false } as const;
slashingConformanceSuite("dynamodb", openFresh, CAPABILITIES);
interchangeVectorSuite("dynamodb", openFresh, CAPABILITIES);
slashingPropertySuite("dynamodb", openFresh, CAPABILITIES);

const reasonOf = (d: Decision) => (d.outcome === "refused" ? d.reason : d.outcome);

describe("open", () => {
  test("a missing table is a clear error naming it", async () => {
    const err = await openDynamoStore({ table: "no-such-table", client: dynamo.client() }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SlashingDatabaseError);
    expect((err as SlashingDatabaseError).problem).toBe("missing");
    expect(String(err)).toContain('"no-such-table" does not exist');
    expect(String(err)).toContain("never creates one silently");
  });

  test("an empty table name is refused before any call", async () => {
    const err = await openDynamoStore({ table: "", client: dynamo.client() }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DynamoTableError);
    expect(String(err)).toContain("antislashing.table");
  });

  const wrong: [string, ConstructorParameters<typeof CreateTableCommand>[0], string][] = [
    [
      "another partition key",
      {
        TableName: "wrong-hash",
        AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      },
      'partition key is "id"',
    ],
    [
      "a numeric pubkey",
      {
        TableName: "wrong-type",
        AttributeDefinitions: [{ AttributeName: "pubkey", AttributeType: "N" }],
        KeySchema: [{ AttributeName: "pubkey", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      },
      "has type N",
    ],
    [
      "a sort key",
      {
        TableName: "wrong-range",
        AttributeDefinitions: [
          { AttributeName: "pubkey", AttributeType: "S" },
          { AttributeName: "slot", AttributeType: "N" },
        ],
        KeySchema: [
          { AttributeName: "pubkey", KeyType: "HASH" },
          { AttributeName: "slot", KeyType: "RANGE" },
        ],
        BillingMode: "PAY_PER_REQUEST",
      },
      'sort key "slot"',
    ],
  ];
  for (const [name, input, message] of wrong) {
    test(`a table with ${name} is refused, naming the table`, async () => {
      const client = dynamo.client();
      await client.send(new CreateTableCommand(input));
      const err = await openDynamoStore({ table: input.TableName ?? "", client }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DynamoTableError);
      expect(String(err)).toContain(`"${input.TableName}"`);
      expect(String(err)).toContain(message);
    });
  }

  test("reports its backend and strategy; ping works; close makes it unusable", async () => {
    const { store } = await freshStore();
    expect(store.backend).toBe("dynamodb");
    expect(store.strategy).toBe("minimal");
    expect(store.prune).toBeUndefined();
    await store.ping();
    await store.close();
    await store.close();
    await expect(block(store, pubkey(1), 1n, root(1))).rejects.toThrow("closed");
    await expect(store.ping()).rejects.toThrow("closed");
  });
});

describe("blocks", () => {
  test("above the watermark is new; same slot and root is same_data; otherwise refused", async () => {
    const { store } = await freshStore();
    const pk = pubkey(1);
    expect(await block(store, pk, 10n, root(1))).toEqual({ outcome: "new" });
    expect(await block(store, pk, 10n, root(1))).toEqual({ outcome: "same_data" });
    expect(reasonOf(await block(store, pk, 10n, root(2)))).toBe("double_block_proposal");
    expect(reasonOf(await block(store, pk, 9n, root(1)))).toBe("block_slot_below_low_watermark");
    expect(await block(store, pk, 11n, root(3))).toEqual({ outcome: "new" });
    expect(reasonOf(await block(store, pk, 10n, root(1)))).toBe("block_slot_below_low_watermark");
    // Validators are independent.
    expect(await block(store, pubkey(2), 5n, root(1))).toEqual({ outcome: "new" });
  });

  test("a zero signing root is an ordinary root", async () => {
    const { store } = await freshStore();
    expect(await block(store, pubkey(1), 3n, ZERO_ROOT)).toEqual({ outcome: "new" });
    expect(await block(store, pubkey(1), 3n, ZERO_ROOT)).toEqual({ outcome: "same_data" });
    expect(reasonOf(await block(store, pubkey(1), 3n, root(1)))).toBe("double_block_proposal");
  });

  test("the refusal detail names the watermark", async () => {
    const { store } = await freshStore();
    await block(store, pubkey(1), 100n, root(1));
    const d = await block(store, pubkey(1), 99n, root(1));
    expect(d.outcome === "refused" && d.detail).toContain("100");
  });

  test("an invalid pubkey or a value outside uint64 throws", async () => {
    const { store } = await freshStore();
    await expect(block(store, METADATA_KEY, 1n, root(1))).rejects.toThrow(TypeError);
    // Upper case would be a second item for the same validator: refused, never normalised here.
    await expect(block(store, `0x${"AB".repeat(48)}`, 1n, root(1))).rejects.toThrow(TypeError);
    await expect(block(store, pubkey(1), U64_MAX + 1n, root(1))).rejects.toThrow(RangeError);
    await expect(block(store, pubkey(1), -1n, root(1))).rejects.toThrow(RangeError);
    await expect(block(store, pubkey(1), 1n, new Uint8Array(31))).rejects.toThrow(TypeError);
    await expect(attest(store, pubkey(1), 0n, U64_MAX + 1n, root(1))).rejects.toThrow(RangeError);
    await expect(store.exportInterchange([METADATA_KEY])).rejects.toThrow(TypeError);
    // Nothing was recorded by the refused calls.
    expect(await block(store, pubkey(1), 1n, root(1))).toEqual({ outcome: "new" });
  });
});

describe("attestations", () => {
  test("the minimal rules and their reasons", async () => {
    const { store } = await freshStore();
    const pk = pubkey(1);
    expect(await attest(store, pk, 2n, 5n, root(1))).toEqual({ outcome: "new" });
    expect(await attest(store, pk, 2n, 5n, root(1))).toEqual({ outcome: "same_data" });
    expect(reasonOf(await attest(store, pk, 2n, 5n, root(2)))).toBe("double_vote");
    expect(reasonOf(await attest(store, pk, 3n, 5n, root(2)))).toBe("double_vote");
    expect(reasonOf(await attest(store, pk, 2n, 4n, root(2)))).toBe(
      "attestation_target_below_low_watermark",
    );
    // Would surround (2, 5): source below the highest source.
    expect(reasonOf(await attest(store, pk, 1n, 6n, root(2)))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(reasonOf(await attest(store, pk, 7n, 6n, root(2)))).toBe("source_after_target");
    // Same source, higher target; then a higher source.
    expect(await attest(store, pk, 2n, 6n, root(3))).toEqual({ outcome: "new" });
    expect(await attest(store, pk, 6n, 7n, root(4))).toEqual({ outcome: "new" });
    expect(reasonOf(await attest(store, pk, 5n, 8n, root(5)))).toBe(
      "attestation_source_below_low_watermark",
    );
    // source == target is allowed (genesis).
    expect(await attest(store, pubkey(2), 0n, 0n, root(1))).toEqual({ outcome: "new" });
  });

  test("blocks and attestations of one validator do not interfere", async () => {
    const { store } = await freshStore();
    expect(await block(store, pubkey(1), 100n, root(1))).toEqual({ outcome: "new" });
    expect(await attest(store, pubkey(1), 1n, 2n, root(1))).toEqual({ outcome: "new" });
    expect(await block(store, pubkey(1), 101n, root(2))).toEqual({ outcome: "new" });
  });

  test("a zero signing root is an ordinary root", async () => {
    const { store } = await freshStore();
    expect(await attest(store, pubkey(1), 1n, 2n, ZERO_ROOT)).toEqual({ outcome: "new" });
    expect(await attest(store, pubkey(1), 1n, 2n, ZERO_ROOT)).toEqual({ outcome: "same_data" });
    expect(reasonOf(await attest(store, pubkey(1), 1n, 2n, root(1)))).toBe("double_vote");
  });
});

describe("genesis validators root", () => {
  test("the first one is stored; another is refused; a second store on the table agrees", async () => {
    const { store, table } = await freshStore();
    expect(await block(store, pubkey(1), 1n, root(1))).toEqual({ outcome: "new" });
    expect(reasonOf(await block(store, pubkey(1), 2n, root(1), OTHER_GVR))).toBe(
      "genesis_validators_root_mismatch",
    );
    expect(reasonOf(await attest(store, pubkey(1), 1n, 2n, root(1), OTHER_GVR))).toBe(
      "genesis_validators_root_mismatch",
    );
    const second = await openDynamoStore({ table, client: dynamo.client() });
    expect(reasonOf(await attest(second, pubkey(2), 1n, 2n, root(1), OTHER_GVR))).toBe(
      "genesis_validators_root_mismatch",
    );
    expect(await attest(second, pubkey(2), 1n, 2n, root(1))).toEqual({ outcome: "new" });
  });

  test("two stores racing to record different roots agree on one", async () => {
    const table = await freshTable();
    const a = await openDynamoStore({ table, client: dynamo.client() });
    const b = await openDynamoStore({ table, client: dynamo.client() });
    const [da, db] = await Promise.all([
      block(a, pubkey(1), 1n, root(1), GVR),
      block(b, pubkey(2), 1n, root(1), OTHER_GVR),
    ]);
    const outcomes = [reasonOf(da), reasonOf(db)].sort();
    expect(outcomes).toEqual(["genesis_validators_root_mismatch", "new"]);
  });

  test("a malformed metadata item is an error, not a fresh start", async () => {
    const { table } = await freshStore();
    const client = dynamo.client();
    await client.send(
      new PutItemCommand({ TableName: table, Item: { pubkey: { S: METADATA_KEY } } }),
    );
    const store = await openDynamoStore({ table, client });
    await expect(block(store, pubkey(1), 1n, root(1))).rejects.toThrow("genesis_validators_root");
  });
});

describe("uint64", () => {
  test("values near 2^64-1 round-trip exactly through the table and the export", async () => {
    const { store, table } = await freshStore();
    const pk = pubkey(1);
    expect(await block(store, pk, U64_MAX - 1n, root(1))).toEqual({ outcome: "new" });
    expect(reasonOf(await block(store, pk, U64_MAX - 2n, root(1)))).toBe(
      "block_slot_below_low_watermark",
    );
    expect(await block(store, pk, U64_MAX - 1n, root(1))).toEqual({ outcome: "same_data" });
    expect(await block(store, pk, U64_MAX, root(2))).toEqual({ outcome: "new" });
    expect(await attest(store, pk, U64_MAX - 1n, U64_MAX - 1n, root(3))).toEqual({
      outcome: "new",
    });
    expect(reasonOf(await attest(store, pk, U64_MAX - 2n, U64_MAX, root(4)))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(await attest(store, pk, U64_MAX - 1n, U64_MAX, root(4))).toEqual({ outcome: "new" });

    const item = await dynamo
      .client()
      .send(
        new GetItemCommand({ TableName: table, Key: { pubkey: { S: pk } }, ConsistentRead: true }),
      );
    expect(item.Item?.max_block_slot).toEqual({ N: "18446744073709551615" });
    expect(item.Item?.max_source_epoch).toEqual({ N: "18446744073709551614" });
    expect(item.Item?.max_target_epoch).toEqual({ N: "18446744073709551615" });
    expect(item.Item?.max_target_root).toEqual({ S: hex(root(4)) });

    const [exported] = await collect(await store.exportInterchange());
    expect(exported?.blocks).toEqual([{ slot: U64_MAX, signingRoot: root(2) }]);
    expect(exported?.attestations).toEqual([
      { sourceEpoch: U64_MAX - 1n, targetEpoch: U64_MAX, signingRoot: root(4) },
    ]);
  });

  test("an import near 2^64-1 raises the watermarks exactly", async () => {
    const { store } = await freshStore();
    const pk = pubkey(1);
    await store.importInterchange(
      source([
        {
          pubkey: pk,
          blocks: [{ slot: U64_MAX - 1n }],
          attestations: [{ sourceEpoch: U64_MAX - 3n, targetEpoch: U64_MAX - 2n }],
        },
      ]),
    );
    expect(reasonOf(await block(store, pk, U64_MAX - 1n, root(1)))).toBe("double_block_proposal");
    expect(await block(store, pk, U64_MAX, root(1))).toEqual({ outcome: "new" });
    expect(reasonOf(await attest(store, pk, U64_MAX - 3n, U64_MAX - 2n, root(1)))).toBe(
      "double_vote",
    );
    expect(await attest(store, pk, U64_MAX - 3n, U64_MAX - 1n, root(1))).toEqual({
      outcome: "new",
    });
  });
});

describe("import", () => {
  test("a genesis validators root mismatch refuses the whole import and writes nothing", async () => {
    const { store } = await freshStore();
    await block(store, pubkey(1), 5n, root(1));
    const err = await store
      .importInterchange(
        source([{ pubkey: pubkey(2), blocks: [{ slot: 9n }], attestations: [] }], OTHER_GVR),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlashingImportError);
    const exported = await collect(await store.exportInterchange());
    expect(exported.map((v) => v.pubkey)).toEqual([pubkey(1)]);
  });

  test("a malformed interchange writes nothing, not even the genesis validators root", async () => {
    const { store } = await freshStore();
    const broken: InterchangeSource = {
      metadata: { interchange_format_version: "5", genesis_validators_root: hex(GVR) },
      async *validators() {
        yield { pubkey: pubkey(1), blocks: [{ slot: 5n }], attestations: [] };
        throw new SlashingImportError("$.data[1]: truncated");
      },
    };
    await expect(store.importInterchange(broken)).rejects.toThrow("truncated");
    const badPubkey = source([
      { pubkey: pubkey(1), blocks: [{ slot: 5n }], attestations: [] },
      { pubkey: `0x${"AB".repeat(48)}`, blocks: [{ slot: 5n }], attestations: [] },
    ]);
    await expect(store.importInterchange(badPubkey)).rejects.toThrow(SlashingImportError);
    const badGvr = {
      ...source([]),
      metadata: { interchange_format_version: "5" as const, genesis_validators_root: "0x12" },
    };
    await expect(store.importInterchange(badGvr)).rejects.toThrow(SlashingImportError);
    await expect(store.exportInterchange()).rejects.toThrow("no genesis validators root");
    // The table is still fresh: another chain's root can still be the first.
    expect(await block(store, pubkey(1), 1n, root(1), OTHER_GVR)).toEqual({ outcome: "new" });
  });

  test("into an empty table, the interchange's root becomes the table's", async () => {
    const { store } = await freshStore();
    await store.importInterchange(source([], OTHER_GVR));
    expect(reasonOf(await block(store, pubkey(1), 1n, root(1)))).toBe(
      "genesis_validators_root_mismatch",
    );
    expect((await store.exportInterchange()).metadata.genesis_validators_root).toBe(hex(OTHER_GVR));
  });

  test("raises watermarks to the maxima and never lowers them; counts records", async () => {
    const { store } = await freshStore();
    const pk = pubkey(1);
    await block(store, pk, 50n, root(1));
    await attest(store, pk, 10n, 20n, root(1));
    const report = await store.importInterchange(
      source([
        {
          pubkey: pk,
          blocks: [{ slot: 40n, signingRoot: root(9) }, { slot: 30n }],
          attestations: [
            { sourceEpoch: 12n, targetEpoch: 15n },
            { sourceEpoch: 3n, targetEpoch: 25n, signingRoot: root(7) },
          ],
        },
        {
          pubkey: pubkey(2),
          blocks: [{ slot: 8n, signingRoot: root(8) }],
          attestations: [],
        },
      ]),
    );
    expect(report).toEqual({ validators: 2, blocks: 3, attestations: 2 });
    // Block watermark stays 50 with this signer's root; attestation: source max(10, 12) = 12,
    // target 25 without a root (imported roots never prove a repeat in the minimal strategy).
    expect(await block(store, pk, 50n, root(1))).toEqual({ outcome: "same_data" });
    expect(reasonOf(await attest(store, pk, 3n, 25n, root(7)))).toBe("double_vote");
    expect(reasonOf(await attest(store, pk, 11n, 26n, root(1)))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(await attest(store, pk, 12n, 26n, root(1))).toEqual({ outcome: "new" });
    expect(reasonOf(await block(store, pubkey(2), 8n, root(8)))).toBe("double_block_proposal");
    expect(await block(store, pubkey(2), 9n, root(8))).toEqual({ outcome: "new" });
  });

  test("an import reaching the watermark drops this signer's root there", async () => {
    const { store } = await freshStore();
    const pk = pubkey(1);
    await block(store, pk, 10n, root(1));
    await attest(store, pk, 1n, 10n, root(1));
    await store.importInterchange(
      source([
        {
          pubkey: pk,
          blocks: [{ slot: 10n, signingRoot: root(2) }],
          attestations: [{ sourceEpoch: 1n, targetEpoch: 10n }],
        },
        {
          pubkey: pubkey(2),
          blocks: [
            { slot: 4n, signingRoot: root(1) },
            { slot: 4n, signingRoot: root(2) },
          ],
          attestations: [],
        },
      ]),
    );
    expect(reasonOf(await block(store, pk, 10n, root(1)))).toBe("double_block_proposal");
    expect(reasonOf(await attest(store, pk, 1n, 10n, root(1)))).toBe("double_vote");
    expect(reasonOf(await block(store, pubkey(2), 4n, root(1)))).toBe("double_block_proposal");
  });

  test("importing the same interchange twice is idempotent; source after target is minified", async () => {
    const { store } = await freshStore();
    const data = source([
      {
        pubkey: pubkey(1),
        blocks: [],
        attestations: [
          { sourceEpoch: 5n, targetEpoch: 2n },
          { sourceEpoch: 6n, targetEpoch: 7n },
        ],
      },
    ]);
    await store.importInterchange(data);
    await store.importInterchange(data);
    expect(reasonOf(await attest(store, pubkey(1), 5n, 8n, root(1)))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(await attest(store, pubkey(1), 6n, 8n, root(1))).toEqual({ outcome: "new" });
  });

  test("racing signers: the result is the maximum of everything imported and signed", async () => {
    const { store, table } = await freshStore();
    const signer = await openDynamoStore({ table, client: dynamo.client() });
    await block(signer, pubkey(1), 0n, root(0));
    const signing = (async () => {
      for (let slot = 1n; slot <= 40n; slot++) await block(signer, pubkey(1), slot * 2n, root(1));
    })();
    const importing = (async () => {
      for (let slot = 1n; slot <= 40n; slot++) {
        await store.importInterchange(
          source([{ pubkey: pubkey(1), blocks: [{ slot: slot * 2n + 1n }], attestations: [] }]),
        );
      }
    })();
    await Promise.all([signing, importing]);
    const [exported] = await collect(await store.exportInterchange());
    expect(exported?.blocks.map((b) => b.slot)).toEqual([81n]);
  });
});

describe("export", () => {
  test("one synthetic block and attestation per validator, every page, or the ones asked for", async () => {
    const { store } = await freshStore({ scanPageSize: 3 });
    for (let i = 1; i <= 10; i++) {
      await block(store, pubkey(i), BigInt(100 + i), root(i));
      if (i % 2 === 0) await attest(store, pubkey(i), BigInt(i), BigInt(i + 1), root(i));
    }
    const all = await store.exportInterchange();
    expect(all.metadata).toEqual({
      interchange_format_version: "5",
      genesis_validators_root: hex(GVR),
    });
    const validators = await collect(all);
    expect(validators.map((v) => v.pubkey).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => pubkey(i + 1)).sort(),
    );
    const four = validators.find((v) => v.pubkey === pubkey(4));
    expect(four).toEqual({
      pubkey: pubkey(4),
      blocks: [{ slot: 104n, signingRoot: root(4) }],
      attestations: [{ sourceEpoch: 4n, targetEpoch: 5n, signingRoot: root(4) }],
    });
    expect(validators.find((v) => v.pubkey === pubkey(3))?.attestations).toEqual([]);

    const some = await collect(
      await store.exportInterchange([
        pubkey(2),
        pubkey(99),
        pubkey(2).toUpperCase().replace("0X", "0x"),
      ]),
    );
    expect(some.map((v) => v.pubkey)).toEqual([pubkey(2)]);
  });

  test("an export re-imports into another table with the same protection", async () => {
    const { store } = await freshStore();
    await block(store, pubkey(1), 20n, root(1));
    await attest(store, pubkey(1), 3n, 9n, root(2));
    const { store: other } = await freshStore();
    await other.importInterchange(await store.exportInterchange());
    // The other table did not sign them itself: even the same roots are refused.
    expect(reasonOf(await block(other, pubkey(1), 20n, root(1)))).toBe("double_block_proposal");
    expect(reasonOf(await block(other, pubkey(1), 19n, root(3)))).toBe(
      "block_slot_below_low_watermark",
    );
    expect(reasonOf(await attest(other, pubkey(1), 3n, 9n, root(2)))).toBe("double_vote");
    expect(reasonOf(await attest(other, pubkey(1), 2n, 10n, root(3)))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(await block(other, pubkey(1), 21n, root(3))).toEqual({ outcome: "new" });
    expect(await attest(other, pubkey(1), 3n, 10n, root(3))).toEqual({ outcome: "new" });
  });

  test("a table that never saw a genesis validators root has nothing to export", async () => {
    const { store } = await freshStore();
    await expect(store.exportInterchange()).rejects.toThrow("no genesis validators root");
  });
});

describe("two signer processes on one table", () => {
  test("conflicting blocks and attestations fired concurrently: exactly one new per conflict", async () => {
    const table = await freshTable();
    const a = await openDynamoStore({ table, client: dynamo.client() });
    const b = await openDynamoStore({ table, client: dynamo.client() });
    const validators = Array.from({ length: 12 }, (_, i) => pubkey(1000 + i));
    const conflicts: Promise<Decision>[][] = [];
    for (const [i, pk] of validators.entries()) {
      // Double proposal at one slot, different roots, from both processes (twice each).
      conflicts.push([
        block(a, pk, 64n, root(1)),
        block(b, pk, 64n, root(2)),
        block(a, pk, 64n, root(3)),
        block(b, pk, 64n, root(4)),
      ]);
      // Double vote, and a surround pair, alternating which process sends which.
      const [x, y] = i % 2 === 0 ? [a, b] : [b, a];
      conflicts.push([attest(x, pk, 3n, 4n, root(5)), attest(y, pk, 3n, 4n, root(6))]);
    }
    const settled = await Promise.all(conflicts.map((set) => Promise.all(set)));
    for (const decisions of settled) {
      expect(decisions.filter((d) => d.outcome === "new")).toHaveLength(1);
      expect(decisions.filter((d) => d.outcome === "same_data")).toHaveLength(0);
    }

    // Surround: (5, 10) and (6, 9) — whichever lands first, the other is refused.
    const surround = await Promise.all(
      validators.map((pk, i) =>
        Promise.all(
          i % 2 === 0
            ? [attest(a, pk, 5n, 10n, root(7)), attest(b, pk, 6n, 9n, root(8))]
            : [attest(b, pk, 6n, 9n, root(8)), attest(a, pk, 5n, 10n, root(7))],
        ),
      ),
    );
    for (const decisions of surround) {
      expect(decisions.filter((d) => d.outcome === "new")).toHaveLength(1);
    }
  });

  test("many rounds of racing proposals: the accepted ones never repeat a slot", async () => {
    const table = await freshTable();
    const a = await openDynamoStore({ table, client: dynamo.client() });
    const b = await openDynamoStore({ table, client: dynamo.client() });
    const pk = pubkey(7);
    const accepted: bigint[] = [];
    for (let round = 0; round < 25; round++) {
      // Each process proposes a slot in [round, round+2], different roots.
      const slots = [BigInt(round), BigInt(round + 1), BigInt(round + 2), BigInt(round + 1)];
      const decisions = await Promise.all(
        slots.map((slot, i) => block(i % 2 === 0 ? a : b, pk, slot, root(round * 10 + i))),
      );
      decisions.forEach((d, i) => {
        const slot = slots[i];
        if (d.outcome === "new" && slot !== undefined) accepted.push(slot);
      });
    }
    expect(new Set(accepted).size).toBe(accepted.length);
  });
});
