// The one runner of the hostile suite: sends each case on its own connection and judges the
// answer against the case's expectation and the rules every answer obeys (no secret, no stack).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_LOG_DIR } from "../support/log-capture";
import type { HostileCase, HostileClass } from "./cases";
import { type RawResponse, sendRaw } from "./raw-http";

/** An error message longer than this is an echo of the input, not an explanation. */
export const MAX_MESSAGE_CHARS = 1024;
const STACK_TRACE = /\n\s+at\s|\.ts:\d+|node_modules|\bError: /;

export interface CaseOutcome {
  readonly hostileCase: HostileCase;
  readonly response?: RawResponse;
  readonly problems: readonly string[];
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Everything wrong with `response` as an answer to `hostileCase` (empty: as it must be). */
export function judge(
  hostileCase: HostileCase,
  response: RawResponse,
  secrets: readonly string[],
): string[] {
  const problems: string[] = [];
  const { status, body, headers, ending } = response;
  const expect = hostileCase.expect;
  const json = parseJson(body) as Record<string, unknown> | undefined;
  const isErrorBody =
    json !== undefined &&
    Object.keys(json).sort().join(",") === "code,message" &&
    typeof json.code === "string" &&
    typeof json.message === "string" &&
    json.message.length > 0;
  switch (expect.kind) {
    case "error": {
      if (ending !== "answered") problems.push("the connection closed without an answer");
      if (!expect.status.includes(status))
        problems.push(`status ${status}, expected ${expect.status.join(" or ")}`);
      if (!(headers["content-type"] ?? "").includes("application/json"))
        problems.push(`content-type ${headers["content-type"]}, expected application/json`);
      if (!headers["x-request-id"]) problems.push("no x-request-id");
      if (!isErrorBody) problems.push("body is not {code,message}");
      else {
        if (expect.code && !expect.code.includes(String(json.code)))
          problems.push(`code ${json.code}, expected ${expect.code.join(" or ")}`);
        if (String(json.message).length > MAX_MESSAGE_CHARS)
          problems.push(`message of ${String(json.message).length} characters echoes the input`);
      }
      break;
    }
    case "items": {
      const data = (json as { data?: { status?: unknown; message?: unknown }[] } | undefined)?.data;
      if (status !== 200 || !Array.isArray(data) || data.length === 0)
        problems.push(`status ${status}, expected 200 with per-item results`);
      else if (!data.every((item) => item.status === "error" && typeof item.message === "string"))
        problems.push(`an item was not refused: ${JSON.stringify(data).slice(0, 200)}`);
      break;
    }
    case "parser": {
      // Below sigil: Bun's parser answers a bare status line (or nothing) and closes.
      if (status !== 0 && !expect.status.includes(status))
        problems.push(`status ${status}, expected ${expect.status.join(" or ")} or a close`);
      if (body !== "") problems.push("a parser refusal with a body: the request reached sigil?");
      break;
    }
    case "cut": {
      const timedOut = status === 503 && isErrorBody && json.code === "request_timeout";
      if (!timedOut && !(ending === "closed" && status === 0))
        problems.push(
          `status ${status} ${body.slice(0, 120)}: neither request_timeout nor a close`,
        );
      break;
    }
  }
  if (status >= 500 && expect.kind === "error") problems.push(`a 5xx: ${body.slice(0, 200)}`);
  if (STACK_TRACE.test(body)) problems.push("the body looks like a stack trace");
  for (const secret of secrets)
    if (body.includes(secret)) problems.push("the body echoes a secret");
  return problems;
}

/** Runs `cases` with at most `concurrency` connections open at once. */
export async function runCases(
  port: number,
  cases: readonly HostileCase[],
  options: { concurrency: number; secrets: readonly string[] },
): Promise<CaseOutcome[]> {
  const outcomes: CaseOutcome[] = new Array(cases.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cases.length; i = next++) {
      const hostileCase = cases[i] as HostileCase;
      try {
        const response = await sendRaw(port, hostileCase.request, hostileCase.send);
        outcomes[i] = {
          hostileCase,
          response,
          problems: judge(hostileCase, response, options.secrets),
        };
      } catch (error) {
        outcomes[i] = { hostileCase, problems: [String(error)] };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, cases.length) }, worker));
  return outcomes;
}

/** One line per failed case, for the assertion message. */
export function describeFailures(outcomes: readonly CaseOutcome[]): string[] {
  return outcomes
    .filter((o) => o.problems.length > 0)
    .map((o) => `${o.hostileCase.route} | ${o.hostileCase.name}: ${o.problems.join("; ")}`);
}

/** Requests tried per hostile class, and the answers they got. */
export class Figures {
  readonly #rows = new Map<string, { requests: number; statuses: Map<string, number> }>();

  record(hostileClass: HostileClass | string, outcomes: readonly CaseOutcome[]): void {
    const row = this.#rows.get(hostileClass) ?? { requests: 0, statuses: new Map() };
    for (const outcome of outcomes) {
      row.requests++;
      const answer = outcome.response
        ? outcome.response.status === 0
          ? "closed"
          : String(outcome.response.status)
        : "error";
      row.statuses.set(answer, (row.statuses.get(answer) ?? 0) + 1);
    }
    this.#rows.set(hostileClass, row);
  }

  json(): Record<string, { requests: number; answers: Record<string, number> }> {
    return Object.fromEntries(
      [...this.#rows].map(([name, row]) => [
        name,
        { requests: row.requests, answers: Object.fromEntries([...row.statuses].sort()) },
      ]),
    );
  }

  table(): string {
    const lines = ["hostile class        requests  answers"];
    let total = 0;
    for (const [name, row] of this.#rows) {
      total += row.requests;
      const answers = [...row.statuses]
        .sort()
        .map(([status, count]) => `${status}×${count}`)
        .join(" ");
      lines.push(`${name.padEnd(20)} ${String(row.requests).padStart(8)}  ${answers}`);
    }
    lines.push(`${"total".padEnd(20)} ${String(total).padStart(8)}`);
    return lines.join("\n");
  }

  /** Writes the figures to .test-logs/<name> (the run directory; not a log, not scanned). */
  write(name: string, extra: Record<string, unknown> = {}): string {
    mkdirSync(TEST_LOG_DIR, { recursive: true });
    const path = join(TEST_LOG_DIR, name);
    writeFileSync(path, `${JSON.stringify({ ...extra, classes: this.json() }, null, 2)}\n`);
    return path;
  }
}
