// The seal ceremony over HTTP with age-wrapped shares (no KMS needed): what an operator team does
// with the CLI, done directly, for tests that need an initialized, unsealed stateful signer.
import { generateIdentity, identityToRecipient } from "age-encryption";
import { unwrapWithAge } from "../../src/seal/wrap/age";
import { registerTestSecret } from "./log-capture";

export interface AgeKey {
  readonly identity: string;
  readonly recipient: string;
}

export async function ageKeys(count: number): Promise<AgeKey[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const identity = registerTestSecret(await generateIdentity(), "age identity");
      return { identity, recipient: await identityToRecipient(identity) };
    }),
  );
}

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** `fetch` with `body` (if any) as JSON; the answer parsed as JSON, an empty one as {}. */
async function callJson(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: unknown,
) {
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

export async function sys(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  bearer?: string,
): Promise<Answer> {
  return callJson(
    `${url}/api/v1/signer/sys/${path}`,
    method,
    {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body,
  );
}

/** A management-API call with a bearer token: JSON both ways, Content-Type and Accept always sent. */
export function managementCall(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
) {
  const headers = {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  return callJson(`${url}${path}`, method, headers, body);
}

/** The setup token from a signer's JSON log lines. */
export function setupTokenFrom(logLines: readonly string[]): string {
  for (const line of logLines) {
    const match = line.match(/"setup_token":"(sgl_[A-Za-z0-9_-]+)"/);
    if (match?.[1]) return match[1];
  }
  throw new Error("no setup token in the log");
}

export interface RegisteredOperator {
  readonly operator: string;
  readonly credential: string;
  readonly key: AgeKey;
}

/** init with one age key per operator, then every operator registers. */
export async function initAndRegister(
  url: string,
  setupToken: string,
  keys: readonly AgeKey[],
  threshold: number,
): Promise<RegisteredOperator[]> {
  const init = await sys(url, "POST", "init", {
    setup_token: setupToken,
    share_wrap: keys.map((k) => `age:${k.recipient}`),
    threshold,
  });
  if (init.status !== 200) throw new Error(`init: ${init.status} ${JSON.stringify(init.body)}`);
  const registrations = init.body.operators as { operator: string; registration_token: string }[];
  for (const r of registrations) registerTestSecret(r.registration_token, "registration token");
  return Promise.all(
    registrations.map(async (r, i) => {
      const answer = await sys(url, "POST", "register", {
        registration_token: r.registration_token,
      });
      if (answer.status !== 200) throw new Error(`register: ${JSON.stringify(answer.body)}`);
      return {
        operator: r.operator,
        credential: registerTestSecret(String(answer.body.credential), "operator credential"),
        key: keys[i] as AgeKey,
      };
    }),
  );
}

/** What `sigil operator unseal` does: fetch the wrapped share, unwrap it locally, submit it. */
export async function unwrapOwnShare(url: string, operator: RegisteredOperator): Promise<string> {
  const fetched = await sys(url, "GET", "share", undefined, operator.credential);
  if (fetched.status !== 200) throw new Error(`share: ${JSON.stringify(fetched.body)}`);
  const wrapped = new Uint8Array(Buffer.from(String(fetched.body.wrapped_share), "base64"));
  const share = await unwrapWithAge([operator.key.identity], wrapped);
  registerTestSecret(share, "unwrapped key share");
  return Buffer.from(share).toString("base64");
}

export async function submitShare(
  url: string,
  operation: "unseal" | "generate-root" | "rotate-quorum/share",
  operator: RegisteredOperator,
): Promise<Answer> {
  return sys(
    url,
    "POST",
    operation,
    { share: await unwrapOwnShare(url, operator) },
    operator.credential,
  );
}

/**
 * The whole ceremony with a single 1-of-1 age operator: init, register, unseal, generate-root.
 * Returns the management token and the operator (to unseal again after a restart).
 */
export async function bootstrapStateful(
  url: string,
  logLines: readonly string[],
): Promise<{ management: string; operator: RegisteredOperator }> {
  const [operator] = await initAndRegister(url, setupTokenFrom(logLines), await ageKeys(1), 1);
  if (!operator) throw new Error("no operator");
  const unsealed = await submitShare(url, "unseal", operator);
  if (unsealed.status !== 200) throw new Error(`unseal: ${JSON.stringify(unsealed.body)}`);
  const root = await submitShare(url, "generate-root", operator);
  if (root.status !== 200) throw new Error(`generate-root: ${JSON.stringify(root.body)}`);
  return { management: registerTestSecret(String(root.body.token), "management token"), operator };
}
