/**
 * A PostgreSQL database's settings and pool options. Imports no driver: the registries read them
 * before they decide whether to load the PostgreSQL client at all.
 */
import type { Logger } from "../../observability/log";

export interface PostgresPoolOptions {
  /** `<settings>.url`; TLS unless `?sslmode=disable` (connection.ts). */
  readonly url: string;
  /** `<settings>.pool_size`: connections kept by this process. */
  readonly poolSize: number;
  /** `<settings>.force_ipv4`: connect to the host's IPv4 address only. */
  readonly forceIpv4: boolean;
  readonly logger?: Logger;
  /** Connect (DNS, TCP, TLS) time limit per connection; default 10 s. */
  readonly connectTimeoutMs?: number;
}

/** A PostgreSQL database's settings, as every settings section names them (`antislashing`, …). */
export interface PostgresSettings {
  readonly url?: string;
  readonly pool_size: number;
  readonly force_ipv4: boolean;
}

/** The pool options of a settings section (a missing URL is refused as an invalid one). */
export function poolOptions(settings: PostgresSettings, logger: Logger): PostgresPoolOptions {
  return {
    url: settings.url ?? "",
    poolSize: settings.pool_size,
    forceIpv4: settings.force_ipv4,
    logger,
  };
}
