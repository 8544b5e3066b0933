/**
 * DynamoDB slashing protection: the EIP-3076 *minimal* strategy (docs/antislashing-dynamodb.md).
 * The decisions are those of `decideBlockMinimal` / `decideAttestationMinimal` and the import
 * merges those of `mergeImportedBlocks` / `mergeImportedAttestations` (../rules.ts).
 *
 * One item per validator (partition key `pubkey`, no sort key) holds watermarks only: the highest
 * block slot with the root this signer signed there, the highest attestation source epoch, and the
 * highest target epoch with the root this signer signed there (no root after an import reached the
 * watermark). A check is ONE conditional UpdateItem whose condition is exactly the "new" case of
 * the minimal rules (block: slot above the watermark; attestation: target above and source not
 * below), so two signer processes on one table can never both record conflicting messages:
 * DynamoDB applies conditional writes to one item atomically and one at a time. Only when the
 * condition fails is the item classified with the rules (the old item comes with the exception on
 * DynamoDB; where it does not, e.g. dynalite, from a strongly consistent GetItem).
 *
 * A metadata item under the reserved key "genesis_validators_root" (never a valid pubkey) holds
 * the genesis validators root: written on first use with a conditional put, then cached.
 *
 * The database-wide watermarks of watermark-repair live in the item "database_watermarks"; each
 * check applies a copy at most 1 s old (watermarks.ts here says why that is safe).
 *
 * uint64 values are DynamoDB numbers written and read as decimal strings (`{ N: "…" }`) and parsed
 * with BigInt: they never pass through a JS number. Service and network errors always propagate.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  ScanCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { Logger } from "../../../observability/log";
import { checkTableLayout, pingTable } from "../../../storage/dynamodb/table";
import {
  assertAttestationVote,
  assertBlockProposal,
  assertPubkey,
  bytesToHex,
  checkImportedValidator,
  hexToBytes,
  PUBKEY_HEX,
} from "../../encoding";
import {
  type AttestationWatermark,
  type BlockWatermark,
  decideAttestationMinimal,
  decideBlockMinimal,
  genesisMismatch,
  mergeImportedAttestations,
  mergeImportedBlocks,
} from "../../rules";
import {
  type AttestationVote,
  type BlockProposal,
  type Decision,
  type ImportReport,
  type InterchangeAttestation,
  type InterchangeBlock,
  type InterchangeSource,
  type InterchangeValidator,
  NothingToExportError,
  type PubkeyHex,
  SlashingDatabaseError,
  SlashingImportError,
  type SlashingStore,
  type ValidatorFloors,
} from "../../store";
import {
  attestationBoundRefusal,
  blockBoundRefusal,
  type DatabaseWatermarks,
  type WatermarkChange,
} from "../../watermarks";
import { DynamoWatermarks, uintAttribute, WATERMARKS_KEY } from "./watermarks";

export { WATERMARKS_KEY };

export interface DynamoStoreOptions {
  /** Table with partition key `pubkey` (string) and no sort key. */
  readonly table: string;
  /**
   * Built by the caller (standard AWS environment in production, dynalite in tests). The store
   * owns it from now on: close(), or a failed open, destroys it.
   */
  readonly client: DynamoDBClient;
  readonly logger?: Logger;
  /**
   * Create the table when it does not exist (`sigil slashing init`); without it a missing table is
   * refused (SlashingDatabaseError "missing"). Default false.
   */
  readonly create?: boolean;
  /** Items per Scan page when exporting every validator (default: DynamoDB's 1 MB pages). */
  readonly scanPageSize?: number;
  /** Validators written at once by an import (default 16). */
  readonly importConcurrency?: number;
  /** How old the copy of the database-wide watermarks a check applies may be (default 1000 ms). */
  readonly watermarkRefreshMs?: number;
}

/** The table is missing or does not have the layout this backend needs. */
export class DynamoTableError extends Error {
  override readonly name = "DynamoTableError";
}

/** Partition key of the metadata item; cannot collide with a pubkey (`0x` + 96 hex). */
export const METADATA_KEY = "genesis_validators_root";

/** Attribute names (see docs/antislashing-dynamodb.md). */
export const ATTR = {
  pubkey: "pubkey",
  maxBlockSlot: "max_block_slot",
  maxBlockRoot: "max_block_root",
  maxSourceEpoch: "max_source_epoch",
  maxTargetEpoch: "max_target_epoch",
  maxTargetRoot: "max_target_root",
  updatedAt: "updated_at",
  genesisValidatorsRoot: "genesis_validators_root",
  createdAt: "created_at",
} as const;

const ROOT_HEX = /^0x[0-9a-fA-F]{64}$/;
/** Optimistic import merges retry this often when signers keep moving the item. */
const IMPORT_ATTEMPTS = 20;
/** A check writes again only if the item changed to allow it between the failed write and the read. */
const CHECK_ATTEMPTS = 3;

type Item = Record<string, AttributeValue>;

/** One validator's item, decoded: `null` = nothing recorded. */
interface Watermarks {
  readonly block: BlockWatermark | null;
  readonly attestation: AttestationWatermark | null;
}

const EMPTY: Watermarks = { block: null, attestation: null };

/**
 * Floors fold into the watermarks, which refuse at or below themselves already (a block slot or
 * target at the watermark is refused too, its root being unknown). A watermark holds both epochs:
 * a missing source floor stands in as 0 (refuses nothing), a missing target floor as the source
 * floor - 1 (every target at or below that is below the source floor as well).
 */
function withFloors(marks: Watermarks, floors: ValidatorFloors | undefined): Watermarks {
  if (floors === undefined) return marks;
  const { blockSlot, sourceEpoch, targetEpoch } = floors;
  const block =
    blockSlot === undefined ? marks.block : mergeImportedBlocks(marks.block, [{ slot: blockSlot }]);
  const source = sourceEpoch ?? 0n;
  const target = targetEpoch ?? (source > 0n ? source - 1n : undefined);
  const attestation =
    target === undefined
      ? marks.attestation
      : mergeImportedAttestations(marks.attestation, [
          { sourceEpoch: source, targetEpoch: target },
        ]);
  return { block, attestation };
}
const num = (value: bigint): AttributeValue => ({ N: value.toString(10) });
const str = (value: string): AttributeValue => ({ S: value });

/** How long `create` waits for a table it created to become ACTIVE. */
const CREATE_TABLE_WAIT_MS = 120_000;

export async function openDynamoStore(options: DynamoStoreOptions): Promise<SlashingStore> {
  const { table, client } = options;
  if (table === "") {
    client.destroy();
    throw new DynamoTableError(
      "the dynamodb slashing protection backend needs a table name (antislashing.table)",
    );
  }
  try {
    if (options.create) await createTableIfMissing(client, table, options.logger);
    await checkTableLayout(client, table, {
      layout: { partitionKey: ATTR.pubkey },
      missing: () =>
        new SlashingDatabaseError(
          "missing",
          `slashing protection table "${table}" does not exist (DynamoDB, region ${regionOf(client)}); ` +
            "sigil never creates one silently. If it existed, check AWS_REGION and the account " +
            "(docs/antislashing-dynamodb.md)",
        ),
      mismatch: (problems) =>
        new DynamoTableError(
          `DynamoDB table "${table}" cannot hold slashing protection: ${problems.join("; ")} (expected partition key "pubkey" of type S and no sort key; see docs/antislashing-dynamodb.md)`,
        ),
    });
  } catch (err) {
    client.destroy();
    throw err;
  }
  options.logger?.info("slashing protection: dynamodb table ready (minimal strategy)", { table });
  return new DynamoSlashingStore(options);
}

function regionOf(client: DynamoDBClient): string {
  const region = client.config.region;
  return typeof region === "string" ? region : "from the AWS environment";
}

/**
 * `sigil slashing init`: creates the table (partition key `pubkey`, on-demand capacity, deletion
 * protection on) when DescribeTable finds none, and waits until it is ACTIVE. Never changes an
 * existing table; the layout check that follows judges it.
 */
async function createTableIfMissing(
  client: DynamoDBClient,
  table: string,
  logger: Logger | undefined,
): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: table }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: ATTR.pubkey, AttributeType: "S" }],
        KeySchema: [{ AttributeName: ATTR.pubkey, KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
        DeletionProtectionEnabled: true,
      }),
    );
  } catch (error) {
    // Another process created it meanwhile: the layout check judges it.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const deadline = Date.now() + CREATE_TABLE_WAIT_MS;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === "ACTIVE") break;
    if (Date.now() > deadline) {
      throw new Error(`DynamoDB table "${table}" was created but is not ACTIVE after 120 s`);
    }
    await Bun.sleep(200);
  }
  logger?.info("slashing protection: dynamodb table created", { table });
}

class DynamoSlashingStore implements SlashingStore {
  readonly backend = "dynamodb" as const;
  readonly strategy = "minimal" as const;
  get location(): string {
    return `DynamoDB table "${this.table}"`;
  }
  private readonly table: string;
  private readonly client: DynamoDBClient;
  private readonly logger: Logger | undefined;
  private readonly scanPageSize: number | undefined;
  private readonly importConcurrency: number;
  /** watermark-repair's bounds, and the copy checks apply (./watermarks.ts). */
  private readonly watermarks: DynamoWatermarks;
  /** The stored genesis validators root (lower-case hex) once read or written; it never changes. */
  private gvr: string | undefined;
  private closed = false;

  constructor(options: DynamoStoreOptions) {
    this.table = options.table;
    this.client = options.client;
    this.logger = options.logger;
    this.scanPageSize = options.scanPageSize;
    this.importConcurrency = Math.max(1, options.importConcurrency ?? 16);
    this.watermarks = new DynamoWatermarks(
      options.client,
      options.table,
      options.watermarkRefreshMs,
    );
  }

  async checkAndInsertBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<Decision> {
    this.assertOpen();
    assertBlockProposal(genesisValidatorsRoot, proposal);
    const mismatch = await this.checkGvr(bytesToHex(genesisValidatorsRoot));
    if (mismatch !== undefined) return mismatch;
    const bound = blockBoundRefusal(await this.watermarks.current(), proposal.slot);
    if (bound !== null) return bound;
    return this.checkAndInsert(proposal.pubkey, "block", {
      update: `SET ${ATTR.maxBlockSlot} = :slot, ${ATTR.maxBlockRoot} = :root, ${ATTR.updatedAt} = :now`,
      condition: `attribute_not_exists(${ATTR.maxBlockSlot}) OR ${ATTR.maxBlockSlot} < :slot`,
      values: {
        ":slot": num(proposal.slot),
        ":root": str(bytesToHex(proposal.signingRoot)),
        ":now": this.now(),
      },
      decide: (stored) => decideBlockMinimal(stored.block, proposal),
    });
  }

  async checkAndInsertAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<Decision> {
    this.assertOpen();
    assertAttestationVote(genesisValidatorsRoot, vote);
    const mismatch = await this.checkGvr(bytesToHex(genesisValidatorsRoot));
    if (mismatch !== undefined) return mismatch;
    // source_after_target needs no read: it is refused whatever is stored.
    if (vote.sourceEpoch > vote.targetEpoch) return decideAttestationMinimal(null, vote);
    const bounds = await this.watermarks.current();
    const bound = attestationBoundRefusal(bounds, vote.sourceEpoch, vote.targetEpoch);
    if (bound !== null) return bound;
    return this.checkAndInsert(vote.pubkey, "attestation", {
      update: `SET ${ATTR.maxSourceEpoch} = :source, ${ATTR.maxTargetEpoch} = :target, ${ATTR.maxTargetRoot} = :root, ${ATTR.updatedAt} = :now`,
      condition:
        `(attribute_not_exists(${ATTR.maxTargetEpoch}) OR ${ATTR.maxTargetEpoch} < :target)` +
        ` AND (attribute_not_exists(${ATTR.maxSourceEpoch}) OR ${ATTR.maxSourceEpoch} <= :source)`,
      values: {
        ":source": num(vote.sourceEpoch),
        ":target": num(vote.targetEpoch),
        ":root": str(bytesToHex(vote.signingRoot)),
        ":now": this.now(),
      },
      decide: (stored) => decideAttestationMinimal(stored.attestation, vote),
    });
  }

  /**
   * Reads (and so validates) the whole interchange first, reducing it to one imported watermark
   * per validator, so a malformed file writes nothing. Then checks or stores the genesis validators
   * root and raises each validator's watermarks with conditional writes.
   */
  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    this.assertOpen();
    const { interchange_format_version: version, genesis_validators_root: gvrHex } =
      source.metadata;
    if (version !== "5") {
      throw new SlashingImportError(`unsupported interchange_format_version ${String(version)}`);
    }
    if (typeof gvrHex !== "string" || !ROOT_HEX.test(gvrHex)) {
      throw new SlashingImportError(
        `genesis_validators_root ${JSON.stringify(gvrHex)} is not 0x + 32 bytes`,
      );
    }
    const gvr = gvrHex.toLowerCase();
    const mismatch = (stored: string) =>
      new SlashingImportError(
        `interchange genesis_validators_root ${gvr} does not match the table's ${stored}; nothing imported`,
      );
    const known = this.gvr ?? (await this.readGvr());
    if (known !== undefined && known !== gvr) throw mismatch(known);

    const imported = new Map<string, Watermarks>();
    const report = { validators: 0, blocks: 0, attestations: 0 };
    for await (const validator of source.validators()) {
      checkImportedValidator(validator, report.validators);
      const before = imported.get(validator.pubkey) ?? EMPTY;
      const merged = {
        block: mergeImportedBlocks(before.block, validator.blocks),
        attestation: mergeImportedAttestations(before.attestation, validator.attestations),
      };
      imported.set(validator.pubkey, withFloors(merged, validator.floors));
      report.validators += 1;
      report.blocks += validator.blocks.length;
      report.attestations += validator.attestations.length;
    }
    this.assertOpen();

    const stored = await this.checkOrStoreGvr(gvr);
    if (stored !== gvr) throw mismatch(stored);
    // A few validators at a time; after the first failure the others stop taking new work (what
    // was written stays: raised watermarks are safe, and importing again is idempotent).
    const queue = [...imported.entries()];
    let failed = false;
    const worker = async () => {
      for (let next = queue.pop(); next !== undefined && !failed; next = queue.pop()) {
        try {
          this.assertOpen();
          await this.mergeImported(next[0], next[1]);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: this.importConcurrency }, worker));
    this.logger?.info("slashing protection: interchange imported", {
      table: this.table,
      ...report,
    });
    return report;
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    this.assertOpen();
    for (const pubkey of pubkeys ?? []) assertPubkey(pubkey);
    const gvr = this.gvr ?? (await this.readGvr());
    if (gvr === undefined) {
      throw new NothingToExportError(
        `DynamoDB table "${this.table}" has no genesis validators root yet (nothing was ever signed or imported): nothing to export`,
      );
    }
    const self = this;
    return {
      metadata: { interchange_format_version: "5", genesis_validators_root: gvr },
      async *validators(): AsyncIterable<InterchangeValidator> {
        const items =
          pubkeys === undefined ? self.scanItems() : self.readItems([...new Set(pubkeys)]);
        for await (const item of items) {
          self.assertOpen();
          const exported = self.exportValidator(item);
          if (exported !== undefined) yield exported;
        }
      },
    };
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await pingTable(this.client, this.table);
  }

  async databaseWatermarks(): Promise<DatabaseWatermarks> {
    this.assertOpen();
    return (await this.watermarks.read()).value;
  }

  async changeWatermarks(change: WatermarkChange): Promise<DatabaseWatermarks> {
    this.assertOpen();
    return this.watermarks.change(change);
  }

  async storedGenesisValidatorsRoot(): Promise<Uint8Array | null> {
    this.assertOpen();
    const gvr = this.gvr ?? (await this.readGvr());
    return gvr === undefined ? null : hexToBytes(gvr);
  }

  async bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array> {
    this.assertOpen();
    return hexToBytes(await this.checkOrStoreGvr(bytesToHex(root)));
  }

  /**
   * A conditional put whose condition can never hold, so that nothing is ever written: DynamoDB
   * evaluates it on the write path, after throttling and the PutItem grant, so any answer but the
   * condition's failure (throttled, access denied, the table going away) fails the probe.
   */
  async probeWrite(): Promise<void> {
    this.assertOpen();
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: { [ATTR.pubkey]: str(METADATA_KEY) },
          ConditionExpression: "attribute_not_exists(#k) AND attribute_exists(#k)",
          ExpressionAttributeNames: { "#k": ATTR.pubkey },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      throw error;
    }
    throw new Error(`DynamoDB table "${this.table}": a write probe's impossible condition held`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
  }

  // ─── internals ────────────────────────────────────────────────────────────────────────────

  private assertOpen(): void {
    if (this.closed) throw new Error("dynamodb slashing protection store is closed");
  }

  private now(): AttributeValue {
    return str(new Date().toISOString());
  }

  /**
   * One conditional UpdateItem whose condition is the rules' "new" case. When it fails, the item
   * as DynamoDB evaluated it is decided by the rules. Where the endpoint does not return it, a
   * strongly consistent read stands in; that can only see a later state, and a later state refuses
   * at least as much (watermarks only rise; a root at a given slot or target can only be dropped,
   * never replaced). A decision of "new" then means the item changed to allow the message (deleted
   * by hand in between): the write is tried again.
   */
  private async checkAndInsert(
    pubkey: string,
    kind: "block" | "attestation",
    check: {
      update: string;
      condition: string;
      values: Item;
      decide: (stored: Watermarks) => Decision;
    },
  ): Promise<Decision> {
    for (let attempt = 1; attempt <= CHECK_ATTEMPTS; attempt++) {
      let item: Item | undefined;
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: { [ATTR.pubkey]: str(pubkey) },
            UpdateExpression: check.update,
            ConditionExpression: check.condition,
            ExpressionAttributeValues: check.values,
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        return { outcome: "new" };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        item = err.Item ?? (await this.readItem(pubkey));
      }
      const decision = check.decide(item === undefined ? EMPTY : this.decode(item, pubkey));
      if (decision.outcome !== "new") {
        if (decision.outcome === "refused") {
          this.logger?.debug("slashing protection: refused", {
            table: this.table,
            pubkey,
            kind,
            reason: decision.reason,
          });
        }
        return decision;
      }
    }
    throw new Error(
      `DynamoDB table "${this.table}": the conditional write for ${pubkey} kept failing although the stored item allows it`,
    );
  }

  private async readItem(pubkey: string): Promise<Item | undefined> {
    const result = await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: { [ATTR.pubkey]: str(pubkey) },
        ConsistentRead: true,
      }),
    );
    return result.Item;
  }

  private async *readItems(pubkeys: readonly string[]): AsyncIterable<Item> {
    for (const pubkey of pubkeys) {
      const item = await this.readItem(pubkey);
      if (item !== undefined) yield item;
    }
  }

  private async *scanItems(): AsyncIterable<Item> {
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.table,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          Limit: this.scanPageSize,
        }),
      );
      for (const item of page.Items ?? []) {
        const key = item[ATTR.pubkey]?.S;
        if (key !== METADATA_KEY && key !== WATERMARKS_KEY) yield item;
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
  }

  private async readGvr(): Promise<string | undefined> {
    const item = await this.readItem(METADATA_KEY);
    if (item === undefined) return undefined;
    const gvr = item[ATTR.genesisValidatorsRoot]?.S;
    if (gvr === undefined || !ROOT_HEX.test(gvr)) {
      throw new Error(
        `DynamoDB table "${this.table}": the metadata item "${METADATA_KEY}" has no valid genesis_validators_root`,
      );
    }
    this.gvr = gvr.toLowerCase();
    return this.gvr;
  }

  /** The table's root, storing `gvr` first if it has none (a conditional put: first writer wins). */
  private async checkOrStoreGvr(gvr: string): Promise<string> {
    const known = this.gvr ?? (await this.readGvr());
    if (known !== undefined) return known;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: {
            [ATTR.pubkey]: str(METADATA_KEY),
            [ATTR.genesisValidatorsRoot]: str(gvr),
            [ATTR.createdAt]: this.now(),
          },
          ConditionExpression: `attribute_not_exists(${ATTR.pubkey})`,
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // Another signer stored one first: theirs it is.
    }
    const stored = await this.readGvr();
    if (stored === undefined) {
      throw new Error(`DynamoDB table "${this.table}": the metadata item vanished`);
    }
    if (stored === gvr) {
      this.logger?.info("slashing protection: genesis validators root recorded", {
        table: this.table,
        genesis_validators_root: gvr,
      });
    }
    return stored;
  }

  /** A refusal when `gvr` is not the table's root (which is stored if the table has none). */
  private async checkGvr(gvr: string): Promise<Decision | undefined> {
    const stored = await this.checkOrStoreGvr(gvr);
    return stored === gvr ? undefined : genesisMismatch(gvr, stored);
  }

  /**
   * Raises one validator's watermarks with `mergeImported*` of the rules: read, merge, then write
   * on condition that the item still holds what was read; retried when a signer moved it between.
   */
  private async mergeImported(pubkey: string, imported: Watermarks): Promise<void> {
    for (let attempt = 1; attempt <= IMPORT_ATTEMPTS; attempt++) {
      const item = await this.readItem(pubkey);
      const stored = item === undefined ? EMPTY : this.decode(item, pubkey);
      const merged: Watermarks = {
        block: mergeImportedBlocks(
          stored.block,
          imported.block === null ? [] : [{ slot: imported.block.maxSlot }],
        ),
        attestation: mergeImportedAttestations(
          stored.attestation,
          imported.attestation === null
            ? []
            : [
                {
                  sourceEpoch: imported.attestation.maxSource,
                  targetEpoch: imported.attestation.maxTarget,
                },
              ],
        ),
      };
      const write = conditionalReplace(stored, merged);
      if (write === undefined) return;
      write.values[":now"] = this.now();
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: { [ATTR.pubkey]: str(pubkey) },
            UpdateExpression: write.update,
            ConditionExpression: write.condition,
            ExpressionAttributeValues: write.values,
          }),
        );
        return;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        this.logger?.debug("slashing protection: import raced a signer, retrying", {
          table: this.table,
          pubkey,
          attempt,
        });
      }
    }
    throw new Error(
      `DynamoDB table "${this.table}": could not raise the watermarks of ${pubkey} in ${IMPORT_ATTEMPTS} attempts (signers kept changing them)`,
    );
  }

  private decode(item: Item, pubkey: string): Watermarks {
    const corrupt = (what: string) =>
      new Error(`DynamoDB table "${this.table}": the item of ${pubkey} has ${what}`);
    const uint = (name: string): bigint | null => uintAttribute(item, name, corrupt) ?? null;
    const root = (name: string): Uint8Array | null => {
      const value = item[name];
      if (value === undefined) return null;
      if (value.S === undefined || !ROOT_HEX.test(value.S)) throw corrupt(`a malformed ${name}`);
      return hexToBytes(value.S);
    };
    const maxSlot = uint(ATTR.maxBlockSlot);
    const maxSource = uint(ATTR.maxSourceEpoch);
    const maxTarget = uint(ATTR.maxTargetEpoch);
    if ((maxSource === null) !== (maxTarget === null)) {
      throw corrupt(`only one of ${ATTR.maxSourceEpoch} and ${ATTR.maxTargetEpoch}`);
    }
    return {
      block: maxSlot === null ? null : { maxSlot, signingRoot: root(ATTR.maxBlockRoot) },
      attestation:
        maxSource === null || maxTarget === null
          ? null
          : { maxSource, maxTarget, targetRoot: root(ATTR.maxTargetRoot) },
    };
  }

  /** One synthetic block and attestation at the watermarks (EIP-3076 allows minimal exports). */
  private exportValidator(item: Item): InterchangeValidator | undefined {
    const pubkey = item[ATTR.pubkey]?.S;
    if (pubkey === undefined || !PUBKEY_HEX.test(pubkey)) return undefined;
    const { block, attestation } = this.decode(item, pubkey);
    const blocks: InterchangeBlock[] = [];
    if (block !== null) {
      blocks.push(
        block.signingRoot === null
          ? { slot: block.maxSlot }
          : { slot: block.maxSlot, signingRoot: block.signingRoot },
      );
    }
    const attestations: InterchangeAttestation[] = [];
    if (attestation !== null) {
      const { maxSource: sourceEpoch, maxTarget: targetEpoch, targetRoot } = attestation;
      // The root is that of the vote signed at the target, whose source may be below maxSource
      // (an import raised only the source). Exporting it is safe: a root commits to the signed
      // vote's own epochs, so an importer can match nothing but that very vote with it.
      attestations.push(
        targetRoot === null
          ? { sourceEpoch, targetEpoch }
          : { sourceEpoch, targetEpoch, signingRoot: targetRoot },
      );
    }
    if (blocks.length === 0 && attestations.length === 0) return undefined;
    return { pubkey, blocks, attestations };
  }
}

// ─── pure helpers ────────────────────────────────────────────────────────────────────────────

/**
 * The UpdateItem that turns the item from `stored` into `merged`, on condition that it still holds
 * `stored` (each watermark attribute equal, or still absent); `undefined` when nothing changes.
 */
function conditionalReplace(
  stored: Watermarks,
  merged: Watermarks,
): { update: string; condition: string; values: Item } | undefined {
  const flat = (w: Watermarks): (AttributeValue | undefined)[] => [
    w.block === null ? undefined : num(w.block.maxSlot),
    w.block?.signingRoot ? str(bytesToHex(w.block.signingRoot)) : undefined,
    w.attestation === null ? undefined : num(w.attestation.maxSource),
    w.attestation === null ? undefined : num(w.attestation.maxTarget),
    w.attestation?.targetRoot ? str(bytesToHex(w.attestation.targetRoot)) : undefined,
  ];
  const names = [
    ATTR.maxBlockSlot,
    ATTR.maxBlockRoot,
    ATTR.maxSourceEpoch,
    ATTR.maxTargetEpoch,
    ATTR.maxTargetRoot,
  ];
  const before = flat(stored);
  const after = flat(merged);
  const values: Item = {};
  const sets: string[] = [];
  const removes: string[] = [];
  const conditions: string[] = [];
  names.forEach((name, i) => {
    const old = before[i];
    const next = after[i];
    if (old === undefined) {
      conditions.push(`attribute_not_exists(${name})`);
    } else {
      values[`:old${i}`] = old;
      conditions.push(`${name} = :old${i}`);
    }
    if (old?.N === next?.N && old?.S === next?.S) return;
    if (next === undefined) {
      removes.push(name);
    } else {
      values[`:new${i}`] = next;
      sets.push(`${name} = :new${i}`);
    }
  });
  if (sets.length === 0 && removes.length === 0) return undefined;
  sets.push(`${ATTR.updatedAt} = :now`);
  const remove = removes.length > 0 ? ` REMOVE ${removes.join(", ")}` : "";
  return { update: `SET ${sets.join(", ")}${remove}`, condition: conditions.join(" AND "), values };
}
