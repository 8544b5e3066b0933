// The line protocol every transport driver speaks (see ../harness.ts): one JSON command per line
// on standard input, one JSON answer per line on standard output, one command at a time. Shared by
// the two Node drivers; the Java, Go and Rust drivers implement the same loop in their language.
import { createInterface } from "node:readline";

/** Same shape as the other drivers' results: a transport error is `error`, never a throw. */
export function failure(error) {
  const inner = error?.cause;
  const cause = inner
    ? ` (cause: ${inner.code ? `${inner.code}: ` : ""}${inner.message ?? inner})`
    : "";
  return {
    status: null,
    body: null,
    connection: null,
    keepAlive: null,
    requestId: null,
    error: `${error?.code ? `${error.code}: ` : ""}${error?.message ?? String(error)}${cause}`,
  };
}

/** Runs `send` over the requests with at most `concurrency` at once; results in request order. */
export async function runBatch(command, send) {
  const results = new Array(command.requests.length);
  let next = 0;
  const worker = async () => {
    while (next < command.requests.length) {
      const index = next++;
      results[index] = await send(command.base, command.requests[index], command.close);
    }
  };
  const workers = Math.max(1, Math.min(command.concurrency, command.requests.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return results;
}

/** Reads commands until `exit` (or the end of standard input) and answers each in turn. */
export async function serve(handlers) {
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let answer;
    try {
      const command = JSON.parse(line);
      if (command.op === "exit") break;
      if (command.op === "version") answer = { version: handlers.version() };
      else if (command.op === "batch") answer = { results: await runBatch(command, handlers.send) };
      else answer = { error: `unknown op ${JSON.stringify(command.op)}` };
    } catch (error) {
      answer = { error: `driver: ${error?.stack ?? error}` };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
  handlers.close?.();
}
