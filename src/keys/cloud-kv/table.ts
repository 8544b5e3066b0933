import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  type ScanCommandInput,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { checkTableLayout } from "../../storage/dynamodb/table";
import { createSemaphore } from "../semaphore";

/**
 * The cloud_kv table (docs/cloud-kv.md): partition key `pubkey` (S); attributes `ciphertext` (S,
 * see sealed-secret.ts), `status` (S), `origin` (S: generated | imported), `created_at` and
 * `updated_at` (N, ms since the epoch).
 */

/** Fixed by the spec (about 100K keys): not configurable. */
export const SCAN_SEGMENTS = 16;

export type KeyOrigin = "generated" | "imported";

/**
 * The status of an item while its batch is being written: never loaded, whatever status_filter
 * says. A batch writes every item with it, then sets each to `active`; an item a failed batch
 * could not remove keeps it, so no instance ever loads it.
 */
export const WRITING_STATUS = "sigil_writing";

export interface CloudKvItem {
  readonly pubkey: string;
  readonly ciphertext: string;
  readonly status: string;
  readonly origin: KeyOrigin;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export class CloudKvTableError extends Error {
  override readonly name = "CloudKvTableError";
}

export class CloudKvTable {
  constructor(
    private readonly client: DynamoDBClient,
    readonly name: string,
  ) {}

  /** Start-up check: the table exists and is keyed by `pubkey` (string) alone. */
  async validate(): Promise<void> {
    await checkTableLayout(this.client, this.name, {
      layout: { partitionKey: "pubkey" },
      status: false,
      missing: () => new CloudKvTableError(`cloud_kv table "${this.name}" does not exist`),
      failed: (error) =>
        new CloudKvTableError(`cannot describe cloud_kv table "${this.name}": ${describe(error)}`),
      mismatch: () =>
        new CloudKvTableError(
          `cloud_kv table "${this.name}" must have exactly one key: partition key "pubkey" of type S (see docs/cloud-kv.md)`,
        ),
    });
  }

  /**
   * Every item whose status is in `statuses`: SCAN_SEGMENTS parallel segments, at most
   * `maxConcurrentReads` Scan requests in flight. Items arrive through `onItem` page by page so
   * 100K keys never sit in memory twice.
   */
  async scan(
    statuses: readonly string[],
    maxConcurrentReads: number,
    onItem: (item: CloudKvItem | { readonly malformed: string }) => void | Promise<void>,
  ): Promise<{ segments: number; pages: number }> {
    const values: Record<string, AttributeValue> = {};
    statuses.forEach((status, i) => {
      values[`:s${i}`] = { S: status };
    });
    const pages = await this.scanSegments(
      {
        ConsistentRead: true,
        FilterExpression: `#status IN (${Object.keys(values).join(", ")})`,
        ExpressionAttributeNames: { "#status": "status" },
        ExpressionAttributeValues: values,
      },
      maxConcurrentReads,
      async (items) => {
        for (const raw of items) await onItem(decodeItem(raw));
      },
    );
    return { segments: SCAN_SEGMENTS, pages };
  }

  /** Writes a new key; false when the pubkey already exists (another instance, or a duplicate). */
  async putNew(item: CloudKvItem): Promise<boolean> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.name,
          Item: encodeItem(item),
          ConditionExpression: "attribute_not_exists(pubkey)",
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Deletes a key's item; false when there was none. With `ciphertext`, only if the item still
   * holds it (undoing this signer's own write, never another writer's item).
   */
  async delete(pubkey: string, ciphertext?: string): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.name,
          Key: { pubkey: { S: pubkey } },
          ...(ciphertext === undefined
            ? { ConditionExpression: "attribute_exists(pubkey)" }
            : {
                ConditionExpression: "ciphertext = :ciphertext",
                ExpressionAttributeValues: { ":ciphertext": { S: ciphertext } },
              }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Every item's pubkey, status and origin (no ciphertext), for the inventory. */
  async listAll(maxConcurrentReads: number): Promise<Omit<CloudKvItem, "ciphertext">[]> {
    const out: Omit<CloudKvItem, "ciphertext">[] = [];
    await this.scanSegments(
      {
        ProjectionExpression: "pubkey, #status, origin, created_at, updated_at",
        ExpressionAttributeNames: { "#status": "status" },
      },
      maxConcurrentReads,
      (items) => {
        for (const raw of items) {
          const pubkey = raw.pubkey?.S;
          if (!pubkey) continue;
          out.push({
            pubkey,
            status: raw.status?.S ?? "",
            origin: raw.origin?.S === "generated" ? "generated" : "imported",
            createdAt: Number(raw.created_at?.N ?? 0),
            updatedAt: Number(raw.updated_at?.N ?? 0),
          });
        }
      },
    );
    return out;
  }

  /** A parallel Scan: SCAN_SEGMENTS segments, each paged, at most `maxConcurrentReads` requests in flight. */
  private async scanSegments(
    input: Omit<ScanCommandInput, "TableName" | "Segment" | "TotalSegments" | "ExclusiveStartKey">,
    maxConcurrentReads: number,
    onPage: (items: Record<string, AttributeValue>[]) => void | Promise<void>,
  ): Promise<number> {
    const gate = createSemaphore(maxConcurrentReads);
    let pages = 0;
    const segment = async (index: number) => {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const page = await gate.run(() =>
          this.client.send(
            new ScanCommand({
              ...input,
              TableName: this.name,
              Segment: index,
              TotalSegments: SCAN_SEGMENTS,
              ExclusiveStartKey: start,
            }),
          ),
        );
        pages++;
        await onPage(page.Items ?? []);
        start = page.LastEvaluatedKey;
      } while (start);
    };
    await Promise.all(Array.from({ length: SCAN_SEGMENTS }, (_, i) => segment(i)));
    return pages;
  }

  /** Changes a key's status only if it still has `from`; false when it does not (or is gone). */
  async setStatus(pubkey: string, from: string, to: string, now: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.name,
          Key: { pubkey: { S: pubkey } },
          UpdateExpression: "SET #status = :to, updated_at = :now",
          ConditionExpression: "#status = :from",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: {
            ":to": { S: to },
            ":from": { S: from },
            ":now": { N: String(now) },
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

export function encodeItem(item: CloudKvItem): Record<string, AttributeValue> {
  return {
    pubkey: { S: item.pubkey },
    ciphertext: { S: item.ciphertext },
    status: { S: item.status },
    origin: { S: item.origin },
    created_at: { N: String(item.createdAt) },
    updated_at: { N: String(item.updatedAt) },
  };
}

function decodeItem(raw: Record<string, AttributeValue>): CloudKvItem | { malformed: string } {
  const pubkey = raw.pubkey?.S;
  const ciphertext = raw.ciphertext?.S;
  const status = raw.status?.S;
  const origin = raw.origin?.S;
  const createdAt = Number(raw.created_at?.N);
  const updatedAt = Number(raw.updated_at?.N);
  if (!pubkey || !/^0x[0-9a-f]{96}$/.test(pubkey)) return { malformed: pubkey ?? "(no pubkey)" };
  if (!ciphertext || !status || (origin !== "generated" && origin !== "imported"))
    return { malformed: pubkey };
  if (!Number.isSafeInteger(createdAt) || !Number.isSafeInteger(updatedAt))
    return { malformed: pubkey };
  return { pubkey, ciphertext, status, origin, createdAt, updatedAt };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
