import type { Config } from "../config/schema";
import { loadServerTls, type TlsLoadResult } from "../http/tls";

/** `commit_boost.tls` read and checked as server.tls is, its problems named after this section. */
export function loadCommitBoostTls(tls: NonNullable<Config["commit_boost"]["tls"]>): TlsLoadResult {
  const loaded = loadServerTls(tls);
  if (loaded.ok) return loaded;
  return {
    ok: false,
    problems: loaded.problems.map((p) => ({
      ...p,
      where: p.where.replace(/^server\.tls/, "commit_boost.tls"),
    })),
  };
}
