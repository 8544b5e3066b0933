/**
 * The DynamoDB store's database-wide watermarks (../../watermarks.ts): the item under the reserved
 * key "database_watermarks" (never a valid pubkey), and the copy checks apply.
 *
 * A check is one conditional write to its validator's item and cannot read a second item in it,
 * so each signer applies a copy of this item read with a strongly consistent GetItem at most
 * `refreshMs` (default 1 s) before. That staleness is safe for the high watermark because one can
 * only be set a whole epoch beyond the latest epoch any signer may sign at that moment
 * (highWatermarkProblem): by the time a message at it can pass the future-epoch bound, every
 * signer has read it. A low watermark is raised before the signers that need it start (the
 * runbook in docs/antislashing.md).
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { isUint64 } from "../../encoding";
import {
  applyWatermarkChange,
  type DatabaseWatermarks,
  NO_WATERMARKS,
  WATERMARK_REFRESH_MS,
  type Watermark,
  type WatermarkChange,
} from "../../watermarks";

/** Partition key of the database-wide watermarks' item. */
export const WATERMARKS_KEY = "database_watermarks";

const ATTR = {
  pubkey: "pubkey",
  lowEpoch: "low_epoch",
  lowSlot: "low_slot",
  highEpoch: "high_epoch",
  highSlot: "high_slot",
  /** The item's write count: each change is conditional on the one it read. */
  version: "version",
  updatedAt: "updated_at",
} as const;

/** A change that keeps meeting another writer's is given up after this many reads. */
const CHANGE_ATTEMPTS = 20;
const UINT = /^(0|[1-9][0-9]*)$/;

type Item = Record<string, AttributeValue>;

/** A uint64 number attribute; undefined when absent; `corrupt` words a malformed one. */
export function uintAttribute(
  item: Item,
  name: string,
  corrupt: (what: string) => Error,
): bigint | undefined {
  const value = item[name];
  if (value === undefined) return undefined;
  if (value.N === undefined || !UINT.test(value.N)) throw corrupt(`a malformed ${name}`);
  const parsed = BigInt(value.N);
  if (!isUint64(parsed)) throw corrupt(`${name} outside uint64`);
  return parsed;
}

export class DynamoWatermarks {
  private readonly refreshMs: number;
  /** The copy checks apply, and when the read that returned it was sent. */
  private copy: { value: DatabaseWatermarks; readAt: number } | undefined;
  private pending: { promise: Promise<DatabaseWatermarks>; sentAt: number } | undefined;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    refreshMs: number | undefined,
  ) {
    this.refreshMs = Math.max(0, refreshMs ?? WATERMARK_REFRESH_MS);
  }

  /**
   * What a check applies: the copy, if the read that returned it was sent less than `refreshMs`
   * ago, else a fresh read (checks arriving meanwhile share it, if it was sent within that time).
   */
  async current(): Promise<DatabaseWatermarks> {
    const now = Date.now();
    const copy = this.copy;
    if (copy !== undefined && now - copy.readAt < this.refreshMs) return copy.value;
    const pending = this.pending;
    if (pending !== undefined && now - pending.sentAt < this.refreshMs) return pending.promise;
    const read = {
      sentAt: now,
      promise: this.read().then(({ value }) => {
        this.keep(value, read.sentAt);
        return value;
      }),
    };
    this.pending = read;
    const settled = () => {
      if (this.pending === read) this.pending = undefined;
    };
    read.promise.then(settled, settled);
    return read.promise;
  }

  /** The stored item, read now. */
  async read(): Promise<{ value: DatabaseWatermarks; version: bigint }> {
    const { Item: item } = await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: { [ATTR.pubkey]: { S: WATERMARKS_KEY } },
        ConsistentRead: true,
      }),
    );
    if (item === undefined) return { value: NO_WATERMARKS, version: 0n };
    const corrupt = (what: string) =>
      new Error(`DynamoDB table "${this.table}": the item "${WATERMARKS_KEY}" has ${what}`);
    const mark = (epochName: string, slotName: string): Watermark | undefined => {
      const epoch = uintAttribute(item, epochName, corrupt);
      const slot = uintAttribute(item, slotName, corrupt);
      if ((epoch === undefined) !== (slot === undefined)) {
        throw corrupt(`only one of ${epochName} and ${slotName}`);
      }
      return epoch === undefined || slot === undefined ? undefined : { epoch, slot };
    };
    const low = mark(ATTR.lowEpoch, ATTR.lowSlot);
    const high = mark(ATTR.highEpoch, ATTR.highSlot);
    return {
      value: { ...(low && { low }), ...(high && { high }) },
      version: uintAttribute(item, ATTR.version, corrupt) ?? 1n,
    };
  }

  /** Read, change, and put on condition that the item is still the one read; retried if not. */
  async change(change: WatermarkChange): Promise<DatabaseWatermarks> {
    for (let attempt = 1; attempt <= CHANGE_ATTEMPTS; attempt++) {
      const sentAt = Date.now();
      const { value, version } = await this.read();
      const next = applyWatermarkChange(value, change);
      const num = (n: bigint): AttributeValue => ({ N: n.toString(10) });
      const item: Item = {
        [ATTR.pubkey]: { S: WATERMARKS_KEY },
        [ATTR.version]: num(version + 1n),
        [ATTR.updatedAt]: { S: new Date().toISOString() },
      };
      if (next.low) {
        item[ATTR.lowEpoch] = num(next.low.epoch);
        item[ATTR.lowSlot] = num(next.low.slot);
      }
      if (next.high) {
        item[ATTR.highEpoch] = num(next.high.epoch);
        item[ATTR.highSlot] = num(next.high.slot);
      }
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.table,
            Item: item,
            ConditionExpression:
              version === 0n ? `attribute_not_exists(${ATTR.pubkey})` : `${ATTR.version} = :v`,
            ...(version !== 0n && { ExpressionAttributeValues: { ":v": num(version) } }),
          }),
        );
        this.keep(next, sentAt);
        return next;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }
    throw new Error(
      `DynamoDB table "${this.table}": the watermarks item kept changing while it was written`,
    );
  }

  private keep(value: DatabaseWatermarks, readAt: number): void {
    if (this.copy === undefined || this.copy.readAt <= readAt) this.copy = { value, readAt };
  }
}
