/**
 * signer_state in DynamoDB: one table, partition key `pk` (S) and sort key `sk` (S), no index
 * needed (a GSI is not available in every deployment).
 *
 * Items:
 *   pk "policy"   sk <name>      rules (S: JSON array of rules), created_at, updated_at (N, ms)
 *   pk "token"    sk <hash>      accessor (S), kind (S), policies (L of S), cidrs (L of S),
 *                                created_at (N, ms), expires_at (N, ms; absent = no expiry)
 *   pk "accessor" sk <accessor>  hash (S): finds a token by accessor (revokeToken)
 *   pk "seal"     sk "seal"      body (S: the seal record's JSON, exactly as given; at most
 *                                MAX_SEAL_BODY_BYTES, under the 400 KB item limit), version (N,
 *                                >= 1), updated_at (N, ms): the one seal record (operators,
 *                                wrapped shares, check value)
 * Only the SHA-256 of a token is stored, never the token. Other `pk` values are reserved for
 * later kinds of state. Listing is a Query of one partition (sorted by `sk`: UTF-8 byte order,
 * the order of the other backends), so the seal item never shows up among policies or tokens.
 * All reads are strongly consistent, so a revoke or a policy change applies to the very next
 * request.
 *
 * Atomicity without transactions (TransactWriteItems is not available in every emulator):
 *   - createPolicy: PutItem if attribute_not_exists(pk); updatePolicy: UpdateItem of the rules
 *     if attribute_exists(pk); deletePolicy: DeleteItem if attribute_exists(pk).
 *   - createToken: first the accessor item (if attribute_not_exists), then the token item (if
 *     attribute_not_exists); if the token write fails, the accessor item is removed again. Every
 *     deletion removes the token item first and then its accessor item (if it still names that
 *     hash). So a token item always has its accessor item; an accessor item without its token
 *     (a process died between two writes) is harmless: revokeToken then returns false, and it only
 *     blocks reuse of that (random) accessor.
 *   - consumeToken: DeleteItem with ReturnValues ALL_OLD and ConditionExpression
 *     attribute_exists(pk): DynamoDB applies conditional writes to one item one at a time, so of
 *     concurrent consumers exactly one gets the old item.
 *   - revokeToken: accessor item → hash, then DeleteItem of the token if it still has that
 *     accessor.
 *   - deleteExpiredTokens: a Query of the "token" partition filtered on expires_at <= now, then
 *     one DeleteItem per match with the same condition (a token is never removed unless it is
 *     expired at the time of its own delete). Tokens are few; a TTL attribute is not used because
 *     DynamoDB's TTL deletes late (up to days) and the authenticator checks expiry itself anyway.
 *   - putSeal: PutItem of the whole seal item, if attribute_not_exists(pk) (create) or if
 *     version = expected (replace; false when the item is absent too): of writers holding the
 *     same version exactly one passes its condition.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { Policy } from "../auth/types";
import type { Logger } from "../observability/log";
import { checkTableLayout, pingTable } from "../storage/dynamodb/table";
import {
  checkExpectedVersion,
  checkNow,
  checkSealBody,
  checkTokenRecord,
  compareTokens,
  decodePolicy,
  decodeSeal,
  decodeToken,
  encodePolicy,
  StateDataError,
  StateSchemaError,
  TokenConflictError,
} from "./codec";
import type { SealSlot, SignerStateStore, TokenRecord } from "./store";

export interface DynamoStateOptions {
  /** `signer_state.table`: partition key `pk` (S), sort key `sk` (S). */
  readonly table: string;
  /**
   * Built by the caller (standard AWS environment in production, dynalite in tests). The store
   * owns it from now on: close(), or a failed open, destroys it.
   */
  readonly client: DynamoDBClient;
  readonly logger?: Logger;
}

/** Partition key values (see the module comment). */
export const PK = {
  policy: "policy",
  token: "token",
  accessor: "accessor",
  seal: "seal",
} as const;
/** Sort key of the one seal item (pk "seal"). */
export const SEAL_SK = "seal";

type Item = Record<string, AttributeValue>;

const str = (value: string): AttributeValue => ({ S: value });
const num = (value: number): AttributeValue => ({ N: String(value) });
const list = (values: readonly string[]): AttributeValue => ({ L: values.map(str) });
const key = (pk: string, sk: string): Item => ({ pk: str(pk), sk: str(sk) });

const LAYOUT = 'partition key "pk" (type S) and sort key "sk" (type S)';

function text(item: Item, name: string): string | undefined {
  return item[name]?.S;
}

function strings(item: Item, name: string): string[] | undefined {
  const values = item[name]?.L;
  if (values === undefined) return undefined;
  const out: string[] = [];
  for (const value of values) {
    if (value.S === undefined) return undefined;
    out.push(value.S);
  }
  return out;
}

function tokenOf(item: Item): TokenRecord {
  const number = (name: string) => {
    const n = item[name]?.N;
    return n === undefined ? undefined : Number(n);
  };
  return decodeToken({
    accessor: text(item, "accessor"),
    hash: text(item, "sk"),
    kind: text(item, "kind"),
    policies: strings(item, "policies"),
    cidrs: strings(item, "cidrs"),
    createdAt: number("created_at"),
    expiresAt: number("expires_at"),
  });
}

function policyOf(item: Item): Policy {
  const name = text(item, "sk");
  const rules = text(item, "rules");
  if (name === undefined || rules === undefined) {
    throw new StateDataError("signer_state: a stored policy item has no name or no rules");
  }
  return decodePolicy(name, rules);
}

class DynamoStateStore implements SignerStateStore {
  readonly backend = "dynamodb" as const;
  private readonly table: string;
  private readonly client: DynamoDBClient;
  private closed = false;

  constructor(options: DynamoStateOptions) {
    this.table = options.table;
    this.client = options.client;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("dynamodb signer_state store is closed");
  }

  /** Runs a conditional write; false when its condition failed. */
  private async conditional(write: () => Promise<unknown>): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  private async get(pk: string, sk: string): Promise<Item | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: key(pk, sk), ConsistentRead: true }),
    );
    return Item;
  }

  /** Every item of one partition, in `sk` order. */
  private async queryAll(
    pk: string,
    filter?: { expression: string; names: Record<string, string>; values: Item },
  ): Promise<Item[]> {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": str(pk), ...(filter?.values ?? {}) },
          ...(filter === undefined
            ? {}
            : { FilterExpression: filter.expression, ExpressionAttributeNames: filter.names }),
          ConsistentRead: true,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return items;
  }

  /** Removes the accessor item of a deleted token, unless it now names another token. */
  private async dropAccessor(accessor: string | undefined, hash: string): Promise<void> {
    if (accessor === undefined) return;
    await this.conditional(() =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: key(PK.accessor, accessor),
          ConditionExpression: "#hash = :hash",
          ExpressionAttributeNames: { "#hash": "hash" },
          ExpressionAttributeValues: { ":hash": str(hash) },
        }),
      ),
    );
  }

  // ─── policies ────────────────────────────────────────────────────────────────────────────

  async createPolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    const now = num(Date.now());
    return this.conditional(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: {
            ...key(PK.policy, name),
            rules: str(rules),
            created_at: now,
            updated_at: now,
          },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    );
  }

  async updatePolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    return this.conditional(() =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: key(PK.policy, name),
          UpdateExpression: "SET #rules = :rules, #updated = :now",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#rules": "rules", "#updated": "updated_at" },
          ExpressionAttributeValues: { ":rules": str(rules), ":now": num(Date.now()) },
        }),
      ),
    );
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    this.assertOpen();
    if (name === "") return undefined;
    const item = await this.get(PK.policy, name);
    return item === undefined ? undefined : policyOf(item);
  }

  async listPolicies(): Promise<Policy[]> {
    this.assertOpen();
    return (await this.queryAll(PK.policy)).map(policyOf);
  }

  async deletePolicy(name: string): Promise<boolean> {
    this.assertOpen();
    if (name === "") return false;
    return this.conditional(() =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: key(PK.policy, name),
          ConditionExpression: "attribute_exists(pk)",
        }),
      ),
    );
  }

  // ─── tokens ──────────────────────────────────────────────────────────────────────────────

  async createToken(token: TokenRecord): Promise<void> {
    this.assertOpen();
    checkTokenRecord(token);
    const claimed = await this.conditional(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: { ...key(PK.accessor, token.accessor), hash: str(token.hash) },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    );
    if (!claimed) {
      throw new TokenConflictError(`a token with accessor ${token.accessor} already exists`);
    }
    let written = false;
    try {
      written = await this.conditional(() =>
        this.client.send(
          new PutItemCommand({
            TableName: this.table,
            Item: {
              ...key(PK.token, token.hash),
              accessor: str(token.accessor),
              kind: str(token.kind),
              policies: list(token.policies),
              cidrs: list(token.cidrs),
              created_at: num(token.createdAt),
              ...(token.expiresAt === undefined ? {} : { expires_at: num(token.expiresAt) }),
            },
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        ),
      );
    } finally {
      if (!written) await this.dropAccessor(token.accessor, token.hash);
    }
    if (!written) throw new TokenConflictError("a token with the same hash already exists");
  }

  async findToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    if (hash === "") return undefined;
    const item = await this.get(PK.token, hash);
    return item === undefined ? undefined : tokenOf(item);
  }

  async listTokens(): Promise<TokenRecord[]> {
    this.assertOpen();
    return (await this.queryAll(PK.token)).map(tokenOf).sort(compareTokens);
  }

  async revokeToken(accessor: string): Promise<boolean> {
    this.assertOpen();
    if (accessor === "") return false;
    const index = await this.get(PK.accessor, accessor);
    const hash = index === undefined ? undefined : text(index, "hash");
    if (hash === undefined) return false;
    const deleted = await this.conditional(() =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: key(PK.token, hash),
          ConditionExpression: "attribute_exists(pk) AND #accessor = :accessor",
          ExpressionAttributeNames: { "#accessor": "accessor" },
          ExpressionAttributeValues: { ":accessor": str(accessor) },
        }),
      ),
    );
    if (deleted) await this.dropAccessor(accessor, hash);
    return deleted;
  }

  async deleteExpiredTokens(now: number): Promise<number> {
    this.assertOpen();
    checkNow(now);
    const cutoff = num(Math.floor(now));
    const expired = await this.queryAll(PK.token, {
      expression: "#expires <= :now",
      names: { "#expires": "expires_at" },
      values: { ":now": cutoff },
    });
    let removed = 0;
    for (const item of expired) {
      const hash = text(item, "sk");
      if (hash === undefined) continue;
      const deleted = await this.conditional(() =>
        this.client.send(
          new DeleteItemCommand({
            TableName: this.table,
            Key: key(PK.token, hash),
            ConditionExpression: "#expires <= :now",
            ExpressionAttributeNames: { "#expires": "expires_at" },
            ExpressionAttributeValues: { ":now": cutoff },
          }),
        ),
      );
      if (!deleted) continue;
      removed += 1;
      await this.dropAccessor(text(item, "accessor"), hash);
    }
    return removed;
  }

  async consumeToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    if (hash === "") return undefined;
    let old: Item | undefined;
    try {
      const result = await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: key(PK.token, hash),
          ConditionExpression: "attribute_exists(pk)",
          ReturnValues: "ALL_OLD",
        }),
      );
      old = result.Attributes;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
    if (old === undefined) return undefined;
    const record = tokenOf(old);
    await this.dropAccessor(record.accessor, hash);
    return record;
  }

  // ─── seal record ─────────────────────────────────────────────────────────────────────────

  async getSeal(): Promise<SealSlot | undefined> {
    this.assertOpen();
    const item = await this.get(PK.seal, SEAL_SK);
    return item === undefined ? undefined : decodeSeal(text(item, "body"), item.version?.N);
  }

  async putSeal(body: string, expectedVersion: number | undefined): Promise<boolean> {
    this.assertOpen();
    checkSealBody(body);
    checkExpectedVersion(expectedVersion);
    const item: Item = {
      ...key(PK.seal, SEAL_SK),
      body: str(body),
      version: num((expectedVersion ?? 0) + 1),
      updated_at: num(Date.now()),
    };
    return this.conditional(() =>
      this.client.send(
        new PutItemCommand(
          expectedVersion === undefined
            ? { TableName: this.table, Item: item, ConditionExpression: "attribute_not_exists(pk)" }
            : {
                TableName: this.table,
                Item: item,
                ConditionExpression: "#version = :expected",
                ExpressionAttributeNames: { "#version": "version" },
                ExpressionAttributeValues: { ":expected": num(expectedVersion) },
              },
        ),
      ),
    );
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await pingTable(this.client, this.table);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
  }
}

/**
 * Checks that the table exists with the expected keys (StateSchemaError otherwise, naming the
 * layout to create) and returns the store. The client is destroyed when opening fails.
 */
export async function openDynamoState(options: DynamoStateOptions): Promise<SignerStateStore> {
  const { table, client } = options;
  try {
    if (table === "") {
      throw new StateSchemaError(
        "the dynamodb signer_state backend needs a table name (signer_state.table)",
      );
    }
    await checkTableLayout(client, table, {
      layout: { partitionKey: "pk", sortKey: "sk" },
      missing: () =>
        new StateSchemaError(
          `signer_state: DynamoDB table "${table}" does not exist; create it with ${LAYOUT}`,
        ),
      mismatch: (problems) =>
        new StateSchemaError(
          `signer_state: DynamoDB table "${table}" cannot hold signer state: ${problems.join("; ")} (expected ${LAYOUT})`,
        ),
    });
  } catch (err) {
    client.destroy();
    throw err;
  }
  options.logger?.info("signer_state: DynamoDB table ready", { table });
  return new DynamoStateStore(options);
}
