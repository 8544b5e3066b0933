/**
 * Commit-Boost proxies in DynamoDB: items of signer_state's table (partition key `pk`, sort key
 * `sk`, both S; no index needed), in their own partition:
 *   pk "cb_proxy"  sk <proxy id>  scheme, consensus, module, sealed, delegation_signature (S),
 *                                 created_at (N, ms)
 * A deployment has few proxies: a module's are one strongly consistent Query of the partition,
 * filtered on the module. put is PutItem if attribute_not_exists(pk); deleteByConsensus deletes
 * the matches one by one, each only if it still names that consensus key.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from "@aws-sdk/client-dynamodb";
import { checkTableLayout } from "../../storage/dynamodb/table";
import {
  checkProxyRecord,
  type ProxyRecord,
  type ProxyStore,
  ProxyStoreError,
  recordOfRow,
} from "../proxy-store";

type Item = Record<string, AttributeValue>;

const PARTITION = "cb_proxy";
const LAYOUT = "partition key pk (S) and sort key sk (S)";

const str = (value: string): AttributeValue => ({ S: value });

function field(item: Item, name: string): string {
  const value = item[name]?.S ?? item[name]?.N;
  if (value === undefined) throw new ProxyStoreError(`stored proxy item has no ${name}`);
  return value;
}

function recordOfItem(item: Item): ProxyRecord {
  return recordOfRow({
    proxy: field(item, "sk"),
    scheme: field(item, "scheme"),
    consensus: field(item, "consensus"),
    module: field(item, "module"),
    // A lost secret is the proxy's problem, not the store's: it reads as empty, which does not
    // open (proxy_key_unusable for that proxy), while the module's other proxies stay listed.
    sealed: item.sealed?.S ?? "",
    delegation_signature: field(item, "delegation_signature"),
    created_at: field(item, "created_at"),
  });
}

class DynamoProxyStore implements ProxyStore {
  readonly backend = "dynamodb" as const;
  #closed = false;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  #open(): DynamoDBClient {
    if (this.#closed) throw new ProxyStoreError("dynamodb proxy store is closed");
    return this.client;
  }

  async put(record: ProxyRecord): Promise<void> {
    checkProxyRecord(record);
    try {
      await this.#open().send(
        new PutItemCommand({
          TableName: this.table,
          Item: {
            pk: str(PARTITION),
            sk: str(record.proxy),
            scheme: str(record.scheme),
            consensus: str(record.consensus),
            module: str(record.module),
            sealed: str(record.sealed),
            delegation_signature: str(record.delegationSignature),
            created_at: { N: String(record.createdAt) },
          },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        throw new ProxyStoreError(`proxy ${record.proxy} already stored`);
      throw error;
    }
  }

  async get(proxy: string): Promise<ProxyRecord | undefined> {
    const answer = await this.#open().send(
      new GetItemCommand({
        TableName: this.table,
        Key: { pk: str(PARTITION), sk: str(proxy) },
        ConsistentRead: true,
      }),
    );
    return answer.Item === undefined ? undefined : recordOfItem(answer.Item);
  }

  async #query(name: "module" | "consensus", value: string): Promise<ProxyRecord[]> {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await this.#open().send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: "pk = :pk",
          FilterExpression: "#f = :v",
          ExpressionAttributeNames: { "#f": name },
          ExpressionAttributeValues: { ":pk": str(PARTITION), ":v": str(value) },
          ConsistentRead: true,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return items.map(recordOfItem);
  }

  async listByModule(module: string): Promise<ProxyRecord[]> {
    const records = await this.#query("module", module);
    // Oldest first, then by id: the order of the SQL backends.
    return records.sort((a, b) => a.createdAt - b.createdAt || (a.proxy < b.proxy ? -1 : 1));
  }

  async deleteByConsensus(consensus: string): Promise<number> {
    let deleted = 0;
    for (const record of await this.#query("consensus", consensus)) {
      try {
        await this.#open().send(
          new DeleteItemCommand({
            TableName: this.table,
            Key: { pk: str(PARTITION), sk: str(record.proxy) },
            ConditionExpression: "consensus = :c",
            ExpressionAttributeValues: { ":c": str(consensus) },
          }),
        );
        deleted++;
      } catch (error) {
        // Deleted meanwhile by another instance: not this call's to count.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    return deleted;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.client.destroy();
  }
}

/** The proxy partition of `table` (signer_state's layout), checked before use. */
export async function openDynamoProxyStore(
  client: DynamoDBClient,
  table: string,
): Promise<ProxyStore> {
  try {
    if (table === "") throw new ProxyStoreError("the dynamodb proxy store needs a table name");
    await checkTableLayout(client, table, {
      layout: { partitionKey: "pk", sortKey: "sk" },
      missing: () =>
        new ProxyStoreError(`DynamoDB table "${table}" does not exist; create it with ${LAYOUT}`),
      mismatch: (problems) =>
        new ProxyStoreError(
          `DynamoDB table "${table}" cannot hold proxies: ${problems.join("; ")} (expected ${LAYOUT})`,
        ),
    });
  } catch (error) {
    client.destroy();
    throw error;
  }
  return new DynamoProxyStore(client, table);
}
