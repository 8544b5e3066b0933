import { SigilError } from "../errors";
import { checkShape, quoted } from "../wire/check";
import {
  type PolicyCommand,
  PolicyName,
  type PolicyUpdateCommand,
  type TokenCommand,
  toPolicy,
} from "./schema";
import type { AuthStore, TokenRecord } from "./store";
import { newToken } from "./tokens";
import type { Policy } from "./types";

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

  /** A policy as POST /policies receives it (checked against PolicyRequest). */
  async createPolicy(command: PolicyCommand): Promise<Policy> {
    const policy = toPolicy(command.name, command.rules);
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

  /** New rules for the policy the path names (the body checked against PolicyUpdateRequest). */
  async updatePolicy(name: string, command: PolicyUpdateCommand): Promise<Policy> {
    const checked = checkShape(PolicyName, name);
    if (!checked.ok) throw invalid(`name: ${checked.problem}`);
    const policy = toPolicy(name, command.rules);
    if (!(await this.store.updatePolicy(policy))) throw policyNotFound(name);
    return policy;
  }

  async deletePolicy(name: string): Promise<void> {
    if (!(await this.store.deletePolicy(name))) throw policyNotFound(name);
  }

  /** A client token as POST /tokens asks for it (checked against TokenRequest). */
  async createToken(command: TokenCommand): Promise<TokenView & { token: string }> {
    const { policies, ttl_seconds } = command;
    for (const name of policies) {
      if (!(await this.store.getPolicy(name)))
        throw invalid(`policy ${quoted(name)} does not exist`);
    }
    const cidrs = command.token_bound_cidrs ?? [];
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

function invalid(message: string): SigilError {
  return new SigilError("invalid_request", message);
}

function policyNotFound(name: string): SigilError {
  return new SigilError("policy_not_found", `no policy named ${quoted(name)}`);
}
