import { SigilError } from "../errors";
import { isSigningOperation, type SigningOperation } from "../wire/operations";
import { isPubkeyHex, normalizePubkey } from "../wire/pubkey";
import { parseCidr } from "./cidr";
import { isScope, type Scope } from "./scopes";
import type { AuthStore, TokenRecord } from "./store";
import { newToken } from "./tokens";
import type { Policy, Rule } from "./types";

/** DESIGN §7: ttl_seconds is required, from 1 s to one year. */
export const MAX_TTL_SECONDS = 365 * 24 * 3600;
/** Every request reads a token's policies: keep that bounded. */
export const MAX_POLICIES_PER_TOKEN = 64;
const POLICY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export interface TokenView {
  accessor: string;
  kind: TokenRecord["kind"];
  policies: readonly string[];
  token_bound_cidrs: readonly string[];
  created_at: string;
  expires_at: string | null;
}

/** The Auth API: policies and client tokens in signer_state, for the management token's holder. */
export class AuthAdminService {
  constructor(
    private readonly store: AuthStore,
    private readonly now: () => number = Date.now,
  ) {}

  async createPolicy(body: unknown): Promise<Policy> {
    const policy = parsePolicy(body);
    if (!(await this.store.createPolicy(policy))) {
      throw new SigilError("policy_exists", `policy "${policy.name}" already exists`);
    }
    return policy;
  }

  listPolicies(): Promise<Policy[]> {
    return this.store.listPolicies();
  }

  async getPolicy(name: string): Promise<Policy> {
    const policy = await this.store.getPolicy(name);
    if (!policy) throw policyNotFound(name);
    return policy;
  }

  async updatePolicy(name: string, body: unknown): Promise<Policy> {
    const rules = isObject(body) ? body.rules : undefined;
    const policy = parsePolicy({ name, rules });
    if (!(await this.store.updatePolicy(policy))) throw policyNotFound(name);
    return policy;
  }

  async deletePolicy(name: string): Promise<void> {
    if (!(await this.store.deletePolicy(name))) throw policyNotFound(name);
  }

  async createToken(body: unknown): Promise<TokenView & { token: string }> {
    if (!isObject(body)) throw invalid("request body must be a JSON object");
    const { policies, ttl_seconds, token_bound_cidrs } = body;
    if (!isStringArray(policies) || policies.length === 0)
      throw invalid("policies must be a non-empty list of policy names");
    if (new Set(policies).size !== policies.length || policies.length > MAX_POLICIES_PER_TOKEN) {
      throw invalid(`policies must name distinct policies, at most ${MAX_POLICIES_PER_TOKEN}`);
    }
    for (const name of policies) {
      if (!(await this.store.getPolicy(name)))
        throw invalid(`policy ${quoted(name)} does not exist`);
    }
    if (
      typeof ttl_seconds !== "number" ||
      !Number.isInteger(ttl_seconds) ||
      ttl_seconds < 1 ||
      ttl_seconds > MAX_TTL_SECONDS
    ) {
      throw invalid(`ttl_seconds must be an integer from 1 to ${MAX_TTL_SECONDS}`);
    }
    const cidrs = token_bound_cidrs ?? [];
    if (!isStringArray(cidrs)) throw invalid("token_bound_cidrs must be a list of CIDRs");
    for (const cidr of cidrs) if (!parseCidr(cidr)) throw invalid(`invalid CIDR ${quoted(cidr)}`);
    const created = this.now();
    const minted = newToken();
    const record: TokenRecord = {
      accessor: minted.accessor,
      hash: minted.hash,
      kind: "client",
      policies,
      cidrs,
      createdAt: created,
      expiresAt: created + ttl_seconds * 1000,
    };
    await this.store.createToken(record);
    return { token: minted.token, ...view(record) };
  }

  async listTokens(): Promise<TokenView[]> {
    const tokens = await this.store.listTokens();
    return tokens.filter((t) => t.kind !== "setup").map(view);
  }

  async revokeToken(accessor: string): Promise<void> {
    if (!(await this.store.revokeToken(accessor))) {
      throw new SigilError("token_not_found", `no token with accessor ${quoted(accessor)}`);
    }
  }
}

/**
 * A new management token (full management access, never CIDR-bound, no expiry): what a completed
 * generate-root quorum hands to its last submitter. Shown once; only its hash is stored.
 */
export async function mintManagementToken(
  store: Pick<AuthStore, "createToken">,
  now: number,
): Promise<{ token: string; accessor: string }> {
  const minted = newToken();
  await store.createToken({
    accessor: minted.accessor,
    hash: minted.hash,
    kind: "management",
    policies: [],
    cidrs: [],
    createdAt: now,
  });
  return { token: minted.token, accessor: minted.accessor };
}

/** Checks a policy as the Auth API receives it: the same rules as static_auth in the config file. */
export function parsePolicy(body: unknown): Policy {
  if (!isObject(body)) throw invalid("request body must be a JSON object");
  const { name, rules } = body;
  if (typeof name !== "string" || !POLICY_NAME.test(name)) {
    throw invalid("name must be 1-64 characters: letters, digits, '.', '_' or '-'");
  }
  if (!Array.isArray(rules)) throw invalid("rules must be a list of rules");
  return { name, rules: rules.map((rule, i) => parseRule(rule, `rules[${i}]`)) };
}

function parseRule(value: unknown, at: string): Rule {
  if (!isObject(value)) throw invalid(`${at} must be an object`);
  const known = new Set(["effect", "scopes", "keys", "operations"]);
  for (const key of Object.keys(value))
    if (!known.has(key)) throw invalid(`${at}.${key} is not a rule field`);
  const { effect, scopes, keys, operations } = value;
  if (effect !== "allow" && effect !== "deny")
    throw invalid(`${at}.effect must be "allow" or "deny"`);
  const rule: {
    effect: "allow" | "deny";
    scopes?: Scope[];
    keys?: string[];
    operations?: SigningOperation[];
  } = { effect };
  if (scopes !== undefined) rule.scopes = names(scopes, `${at}.scopes`, isScope, "scope");
  if (operations !== undefined)
    rule.operations = names(
      operations,
      `${at}.operations`,
      isSigningOperation,
      "signing operation",
    );
  if (keys !== undefined) {
    rule.keys = names(keys, `${at}.keys`, isPubkeyHex, "public key (0x + 96 hex)").map(
      normalizePubkey,
    );
  }
  return rule;
}

function names<T extends string>(
  value: unknown,
  at: string,
  valid: (s: string) => s is T,
  kind: string,
): T[];
function names(value: unknown, at: string, valid: (s: string) => boolean, kind: string): string[];
function names(value: unknown, at: string, valid: (s: string) => boolean, kind: string): string[] {
  if (!isStringArray(value)) throw invalid(`${at} must be a list`);
  for (const item of value)
    if (!valid(item)) throw invalid(`${at}: unknown ${kind} ${quoted(item)}`);
  return value;
}

function view(record: TokenRecord): TokenView {
  return {
    accessor: record.accessor,
    kind: record.kind,
    policies: record.policies,
    token_bound_cidrs: record.cidrs,
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: record.expiresAt === undefined ? null : new Date(record.expiresAt).toISOString(),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function invalid(message: string): SigilError {
  return new SigilError("invalid_request", message);
}

/** A client's string in a message, cut short: it may be a megabyte long. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 61)}...` : value);
}

function policyNotFound(name: string): SigilError {
  return new SigilError("policy_not_found", `no policy named ${quoted(name)}`);
}
