import { AuthAdminService } from "../auth/admin";
import {
  type Authenticator,
  legacyAuthenticator,
  noAuth,
  type StaticToken,
  statefulAuthenticator,
  staticAuthenticator,
} from "../auth/authenticator";
import { legacyPolicyRules } from "../auth/legacy";
import { toPolicy } from "../auth/schema";
import type { Policy } from "../auth/types";
import type { Config } from "../config/schema";
import { resolveSecret } from "../config/validate";
import type { Logger } from "../observability/log";
import type { SealService } from "../seal/service";
import { openSignerStateBackend, type SignerStateSettings } from "../state/registry";
import { namingOption } from "./database-file";
import { wireSeal } from "./seal";

export interface AuthWiring {
  authenticator: Authenticator;
  /** The Auth API's service, in stateful mode only. */
  admin?: AuthAdminService;
  /** The seal lifecycle, in stateful mode only: signing and management wait for an unseal. */
  seal?: SealService;
  close(): Promise<void>;
}

type Env = Record<string, string | undefined>;

/** Chooses the auth mode from the (already validated) configuration. */
export async function wireAuth(config: Config, env: Env, logger: Logger): Promise<AuthWiring> {
  const none = async () => {};
  if (config.signer_state) return wireStateful(config, config.signer_state, logger);
  if (config.static_auth)
    return { authenticator: staticMode(config.static_auth, env), close: none };
  if (config.auth_policies || config.unauthenticated_policy) {
    const tokens = Object.entries(config.auth_policies ?? {}).map(([name, policy]) => ({
      token: secret(policy.token, env),
      policy: { name, rules: legacyPolicyRules(policy) },
    }));
    const open = config.unauthenticated_policy;
    const unauthenticated = open
      ? { name: "unauthenticated_policy", rules: legacyPolicyRules(open) }
      : undefined;
    return { authenticator: legacyAuthenticator(tokens, unauthenticated), close: none };
  }
  return { authenticator: noAuth, close: none };
}

function secret(value: string, env: Env): string {
  const resolved = resolveSecret(value, env);
  // Validation at load already refused unset variables; this guards a changed environment.
  if (!resolved.ok) throw new Error(`environment variable ${resolved.variable} is not set`);
  return resolved.value;
}

function staticMode(auth: NonNullable<Config["static_auth"]>, env: Env): Authenticator {
  const policies = new Map<string, Policy>(
    auth.policies.map((p) => [p.name, toPolicy(p.name, p.rules)]),
  );
  const byName = (names: readonly string[]) => names.flatMap((n) => policies.get(n) ?? []);
  const tokens: StaticToken[] = (auth.tokens ?? []).map((t, i) => ({
    secret: secret(t.secret, env),
    policies: byName(t.policies),
    cidrs: t.token_bound_cidrs ?? [],
    label: `static_auth.tokens[${i}]`,
  }));
  return staticAuthenticator(tokens, auth.anonymous ? byName(auth.anonymous.policies) : undefined);
}

const EXPIRED_TOKEN_SWEEP_MS = 10 * 60_000;

async function wireStateful(
  config: Config,
  state: SignerStateSettings,
  logger: Logger,
): Promise<AuthWiring> {
  const log = logger.child("auth");
  const store = await openSignerStateBackend(state, logger).catch((error: unknown) => {
    throw namingOption(error, "signer_state database", "signer_state.path");
  });
  const admin = new AuthAdminService(store);
  let seal: SealService;
  try {
    seal = await wireSeal(config, store, logger);
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  const sweep = setInterval(() => {
    store.deleteExpiredTokens(Date.now()).catch((error: unknown) => {
      log.warn("could not delete expired tokens", { error: String(error) });
    });
  }, EXPIRED_TOKEN_SWEEP_MS);
  sweep.unref();
  return {
    authenticator: statefulAuthenticator(store),
    admin,
    seal,
    async close() {
      clearInterval(sweep);
      seal.close();
      await store.close();
    },
  };
}
