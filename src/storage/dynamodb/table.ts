/**
 * The one check of a DynamoDB table's layout, for every store that keeps its data in one
 * (slashing protection, signer_state, the cloud_kv key source): DescribeTable, then the key
 * schema it needs. Each caller words its own errors.
 */
import {
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  type TableDescription,
} from "@aws-sdk/client-dynamodb";

/** The keys a table must have, both of type S (string). */
export interface KeyLayout {
  readonly partitionKey: string;
  /** Absent: the table must have no sort key. */
  readonly sortKey?: string;
}

/**
 * What keeps `description` from holding `layout`, in words (empty: nothing). With `status`, a
 * table that is neither ACTIVE nor UPDATING is a problem too.
 */
export function layoutProblems(
  description: TableDescription | undefined,
  layout: KeyLayout,
  options: { readonly status: boolean } = { status: true },
): string[] {
  if (description === undefined) return ["DescribeTable returned no table description"];
  const problems: string[] = [];
  const keys = description.KeySchema ?? [];
  const typeOf = (name: string) =>
    description.AttributeDefinitions?.find((d) => d.AttributeName === name)?.AttributeType;
  const expect = (role: "HASH" | "RANGE", name: string) => {
    const found = keys.find((k) => k.KeyType === role)?.AttributeName;
    const what = role === "HASH" ? "partition key" : "sort key";
    if (found !== name) problems.push(`its ${what} is "${found ?? "(none)"}", not "${name}"`);
    else if (typeOf(name) !== "S") {
      problems.push(`its ${what} "${name}" has type ${typeOf(name) ?? "(unknown)"}, not S`);
    }
  };
  expect("HASH", layout.partitionKey);
  if (layout.sortKey !== undefined) expect("RANGE", layout.sortKey);
  else {
    const range = keys.find((k) => k.KeyType === "RANGE");
    if (range !== undefined) problems.push(`it has a sort key "${range.AttributeName ?? ""}"`);
  }
  const status = description.TableStatus;
  if (options.status && status !== undefined && status !== "ACTIVE" && status !== "UPDATING") {
    problems.push(`its status is ${status}`);
  }
  return problems;
}

export interface TableCheck {
  readonly layout: KeyLayout;
  /** Also refuse a table that is not ACTIVE or UPDATING (default true). */
  readonly status?: boolean;
  /** The table does not exist. */
  readonly missing: () => Error;
  /** It exists but cannot hold the data: `problems` from layoutProblems. */
  readonly mismatch: (problems: readonly string[]) => Error;
  /** DescribeTable failed otherwise; default: its own error propagates. */
  readonly failed?: (error: unknown) => Error;
}

/** DescribeTable `table` and check its layout; throws the caller's errors. */
export async function checkTableLayout(
  client: DynamoDBClient,
  table: string,
  check: TableCheck,
): Promise<void> {
  let description: TableDescription | undefined;
  try {
    description = (await client.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) throw check.missing();
    throw check.failed === undefined ? error : check.failed(error);
  }
  const problems = layoutProblems(description, check.layout, { status: check.status ?? true });
  if (problems.length > 0) throw check.mismatch(problems);
}

/** A cheap request that fails when the table cannot be reached (health checks). */
export async function pingTable(client: DynamoDBClient, table: string): Promise<void> {
  await client.send(new DescribeTableCommand({ TableName: table }));
}
