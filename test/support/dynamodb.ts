// An in-process DynamoDB (dynalite, dev dependency) for the dynamodb slashing-protection tests.
// Each call starts its own server on a free loopback port with an in-memory store.
import { createRequire } from "node:module";
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";

interface DynaliteServer {
  listen(port: number, host: string, callback: () => void): void;
  close(callback: (err?: Error | null) => void): void;
  address(): unknown;
  once(event: "error", listener: (err: Error) => void): void;
  closeAllConnections?: () => void;
}

type DynaliteFactory = (options: {
  createTableMs: number;
  deleteTableMs: number;
}) => DynaliteServer;

export interface RunningDynamo {
  /** http://127.0.0.1:PORT */
  readonly endpoint: string;
  /** The environment a sigil process needs to reach this server through the AWS SDK. */
  readonly processEnv: Record<string, string>;
  /** A new client (separate connection pool) pointed at this server; destroyed by stop(). */
  client(): DynamoDBClient;
  /** Creates a table with sigil's slashing-protection layout (partition key `pubkey`, string). */
  createSlashingTable(name: string): Promise<void>;
  /** Creates a table with sigil's signer_state layout (partition key `pk`, sort key `sk`, strings). */
  createStateTable(name: string): Promise<void>;
  /**
   * An outage: closes the listener and every open connection; the tables stay in memory, so
   * resume() brings them back on the same port.
   */
  pause(): Promise<void>;
  /** Listens again on the same port after pause(). */
  resume(): Promise<void>;
  /** Destroys every client made here and closes the server. Idempotent. */
  stop(): Promise<void>;
}

function loadDynalite(): DynaliteFactory {
  // dynalite ships no type declarations: load it untyped and check the one thing used.
  const required: unknown = createRequire(import.meta.url)("dynalite");
  if (typeof required !== "function") throw new Error("dynalite did not export a function");
  return required as DynaliteFactory;
}

function portOf(address: unknown): number {
  if (typeof address === "object" && address !== null && "port" in address) {
    const port = (address as { port: unknown }).port;
    if (typeof port === "number") return port;
  }
  throw new Error(`dynalite: unexpected listen address ${String(address)}`);
}

/** dynalite checks no signature; the values only have to be present. */
const TEST_ACCESS_KEY_ID = "AKIDTEST";
const TEST_SECRET_ACCESS_KEY = "test-secret";

export function dynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: TEST_ACCESS_KEY_ID, secretAccessKey: TEST_SECRET_ACCESS_KEY },
    // Fail fast in tests: a stopped server must surface as an error, not as minutes of retries.
    maxAttempts: 2,
  });
}

/** dynalite reports CREATING until a timer fires, even with createTableMs 0. */
export async function waitUntilActive(client: DynamoDBClient, table: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === "ACTIVE") return;
    await Bun.sleep(5);
  }
  throw new Error(`dynalite: table ${table} did not become ACTIVE`);
}

export async function startDynamo(): Promise<RunningDynamo> {
  const server = loadDynalite()({ createTableMs: 0, deleteTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const port = portOf(server.address());
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: DynamoDBClient[] = [];
  let stopped: Promise<void> | undefined;
  let paused = false;

  // Stop accepting first, then cut the kept-alive connections that would hold close() open.
  // dynalite's own close() also drops its in-memory tables, so pause() uses http.Server's.
  const close = (how: DynaliteServer["close"]) =>
    new Promise<void>((resolve, reject) => {
      how.call(server, (err) => (err ? reject(err) : resolve()));
      server.closeAllConnections?.();
    });
  const listenerOnlyClose = (Object.getPrototypeOf(server) as DynaliteServer).close;

  const client = () => {
    const made = dynamoClient(endpoint);
    clients.push(made);
    return made;
  };

  return {
    endpoint,
    processEnv: {
      AWS_ENDPOINT_URL_DYNAMODB: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: TEST_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: TEST_SECRET_ACCESS_KEY,
    },
    client,
    async createSlashingTable(name) {
      const admin = dynamoClient(endpoint);
      try {
        await admin.send(
          new CreateTableCommand({
            TableName: name,
            AttributeDefinitions: [{ AttributeName: "pubkey", AttributeType: "S" }],
            KeySchema: [{ AttributeName: "pubkey", KeyType: "HASH" }],
            BillingMode: "PAY_PER_REQUEST",
          }),
        );
        await waitUntilActive(admin, name);
      } finally {
        admin.destroy();
      }
    },
    async createStateTable(name) {
      const admin = dynamoClient(endpoint);
      try {
        await admin.send(
          new CreateTableCommand({
            TableName: name,
            AttributeDefinitions: [
              { AttributeName: "pk", AttributeType: "S" },
              { AttributeName: "sk", AttributeType: "S" },
            ],
            KeySchema: [
              { AttributeName: "pk", KeyType: "HASH" },
              { AttributeName: "sk", KeyType: "RANGE" },
            ],
            BillingMode: "PAY_PER_REQUEST",
          }),
        );
        await waitUntilActive(admin, name);
      } finally {
        admin.destroy();
      }
    },
    async pause() {
      if (stopped !== undefined) throw new Error("pause after stop");
      await close(listenerOnlyClose);
      paused = true;
    },
    async resume() {
      if (stopped !== undefined) throw new Error("resume after stop");
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", resolve);
      });
      paused = false;
    },
    stop() {
      stopped ??= (async () => {
        for (const made of clients) made.destroy();
        if (!paused) await close(server.close);
      })();
      return stopped;
    },
  };
}
