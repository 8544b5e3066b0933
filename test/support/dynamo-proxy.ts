// A DynamoDB-protocol proxy on loopback, in front of a DynamoDB-protocol server (dynalite): the
// fault injection of the key-source tests, at the IO edge. The signer's real AWS SDK client talks
// to it through AWS_ENDPOINT_URL_DYNAMODB; it forwards every request unchanged, records each
// write (PutItem, UpdateItem, DeleteItem: operation, pubkey, arrival time), can answer a write
// with a DynamoDB error instead of forwarding it, and can hold requests until released.

/** The operations that change an item. */
export const WRITE_OPERATIONS = ["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"] as const;
export type WriteOperation = (typeof WRITE_OPERATIONS)[number];

export interface ProxiedWrite {
  readonly operation: WriteOperation;
  /** The item's pubkey (its key), when the request names one. */
  readonly pubkey: string | undefined;
  /** Date.now() when the request reached the proxy. */
  readonly at: number;
  /** 1-based, over every write the proxy has seen. */
  readonly nth: number;
  /** "forwarded", or the error answered instead. */
  readonly outcome: string;
}

/** What a fault rule sees of a write. */
export interface WriteRequest {
  readonly operation: WriteOperation;
  readonly pubkey: string | undefined;
  /** 1-based count of this operation's requests so far (retries included). */
  readonly nthOfOperation: number;
}

/**
 * An error DynamoDB answers: `InternalServerError` (HTTP 500, the SDK retries it) or a
 * non-retryable one such as `AccessDeniedException` (HTTP 400).
 */
export type DynamoFault = "InternalServerError" | "AccessDeniedException";

export interface RunningDynamoProxy {
  /** http://127.0.0.1:PORT */
  readonly endpoint: string;
  /** The environment a signer needs to reach the store through this proxy. */
  readonly processEnv: Record<string, string>;
  /** Every write that reached the proxy, in order. */
  readonly writes: readonly ProxiedWrite[];
  /** Writes matching `rule` get the fault instead of reaching the store (until cleared). */
  failWrites(rule: (write: WriteRequest) => boolean, fault?: DynamoFault): void;
  /**
   * The k-th request of `operation` fails, and so does every retry of it (same operation, same
   * pubkey): a write that fails for good, whatever the client's retry policy.
   */
  failNth(operation: WriteOperation, k: number, fault?: DynamoFault): void;
  /**
   * Requests whose X-Amz-Target operation is `operation` wait until the returned function runs:
   * before they reach the store ("request"), or once the store has answered them, before the
   * answer goes back ("response": what the client reads is the store as it was).
   */
  hold(operation: string, when?: "request" | "response"): () => void;
  /** No more faults or holds (held requests are released). */
  clear(): void;
  stop(): Promise<void>;
}

const TARGET_PREFIX = "DynamoDB_20120810.";

function isWrite(operation: string): operation is WriteOperation {
  return (WRITE_OPERATIONS as readonly string[]).includes(operation);
}

function pubkeyOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as {
      Item?: { pubkey?: { S?: string } };
      Key?: { pubkey?: { S?: string } };
    };
    return parsed.Item?.pubkey?.S ?? parsed.Key?.pubkey?.S;
  } catch {
    return undefined;
  }
}

export async function startDynamoProxy(
  target: string,
  baseEnv: Record<string, string>,
): Promise<RunningDynamoProxy> {
  const writes: ProxiedWrite[] = [];
  const perOperation = new Map<string, number>();
  let rules: { rule: (write: WriteRequest) => boolean; fault: DynamoFault }[] = [];
  let holds: {
    operation: string;
    when: "request" | "response";
    released: Promise<void>;
    release: () => void;
  }[] = [];
  const heldUntil = async (operation: string, when: "request" | "response") => {
    const held = holds.find((h) => h.operation === operation && h.when === when);
    if (held) await held.released;
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const amzTarget = request.headers.get("x-amz-target") ?? "";
      const operation = amzTarget.startsWith(TARGET_PREFIX)
        ? amzTarget.slice(TARGET_PREFIX.length)
        : amzTarget;
      const body = await request.text();
      await heldUntil(operation, "request");
      if (isWrite(operation)) {
        const nthOfOperation = (perOperation.get(operation) ?? 0) + 1;
        perOperation.set(operation, nthOfOperation);
        const pubkey = pubkeyOf(body);
        const matched = rules.find(({ rule }) => rule({ operation, pubkey, nthOfOperation }));
        writes.push({
          operation,
          pubkey,
          at: Date.now(),
          nth: writes.length + 1,
          outcome: matched ? matched.fault : "forwarded",
        });
        if (matched) return faultResponse(matched.fault);
      }
      const headers = new Headers(request.headers);
      headers.delete("host");
      const upstream = await fetch(`${target}${new URL(request.url).pathname}`, {
        method: request.method,
        headers,
        body,
      });
      const answer = await upstream.arrayBuffer();
      await heldUntil(operation, "response");
      return new Response(answer, { status: upstream.status, headers: upstream.headers });
    },
  });
  const endpoint = `http://127.0.0.1:${server.port}`;
  const clear = () => {
    rules = [];
    for (const h of holds) h.release();
    holds = [];
  };

  return {
    endpoint,
    processEnv: { ...baseEnv, AWS_ENDPOINT_URL_DYNAMODB: endpoint },
    writes,
    failWrites(rule, fault = "InternalServerError") {
      rules.push({ rule, fault });
    },
    failNth(operation, k, fault = "InternalServerError") {
      let failing: string | undefined | null = null;
      rules.push({
        fault,
        rule: (write) => {
          if (write.operation !== operation) return false;
          if (failing === null && write.nthOfOperation === k) failing = write.pubkey;
          return failing !== null && write.pubkey === failing;
        },
      });
    },
    hold(operation, when = "request") {
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const entry = { operation, when, released, release };
      holds.push(entry);
      return () => {
        holds = holds.filter((h) => h !== entry);
        release();
      };
    },
    clear,
    async stop() {
      clear();
      await server.stop(true);
    },
  };
}

function faultResponse(fault: DynamoFault): Response {
  const status = fault === "InternalServerError" ? 500 : 400;
  return new Response(
    JSON.stringify({
      __type: `com.amazonaws.dynamodb.v20120810#${fault}`,
      message: `injected by the test proxy: ${fault}`,
    }),
    { status, headers: { "content-type": "application/x-amz-json-1.0" } },
  );
}
