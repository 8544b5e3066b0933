/**
 * Where proxy keys live: one record per proxy, in a database every sigil instance of a
 * deployment shares (sqlite for one host, postgres or dynamodb for several), so that a proxy generated on one
 * instance signs on any other. The secret is stored sealed (proxy-seal.ts), never in clear.
 */
export type ProxyScheme = "bls" | "ecdsa";

export interface ProxyRecord {
  /** The proxy's identity: 0x + 96 hex (BLS pubkey) or 0x + 40 hex (ECDSA address), lower case. */
  readonly proxy: string;
  readonly scheme: ProxyScheme;
  /** The consensus (validator) pubkey that delegated to it, 0x + 96 lower-case hex. */
  readonly consensus: string;
  /** The Commit-Boost module id that generated it: only that module sees and uses it. */
  readonly module: string;
  /** The sealed 32-byte secret (base64, proxy-seal.ts). */
  readonly sealed: string;
  /** The consensus key's BLS signature of the delegation, 0x + 192 hex. */
  readonly delegationSignature: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
}

export interface ProxyStore {
  readonly backend: "sqlite" | "postgres" | "dynamodb";
  /** Adds a record; a proxy id already stored is an error (ids come from fresh random keys). */
  put(record: ProxyRecord): Promise<void>;
  get(proxy: string): Promise<ProxyRecord | undefined>;
  /** The module's proxies, oldest first. */
  listByModule(module: string): Promise<ProxyRecord[]>;
  /** Deletes every proxy delegated from `consensus`; returns how many. */
  deleteByConsensus(consensus: string): Promise<number>;
  close(): Promise<void>;
}

export class ProxyStoreError extends Error {
  override readonly name = "ProxyStoreError";
}

const PROXY = /^0x(?:[0-9a-f]{96}|[0-9a-f]{40})$/;
const PUBKEY = /^0x[0-9a-f]{96}$/;
const SIGNATURE = /^0x[0-9a-f]{192}$/;

/** Refuses a record no store should hold (a bug upstream), before it is written. */
export function checkProxyRecord(record: ProxyRecord): void {
  const idLength = record.scheme === "bls" ? 98 : 42;
  if (!PROXY.test(record.proxy) || record.proxy.length !== idLength)
    throw new ProxyStoreError("proxy id does not match its scheme");
  if (!PUBKEY.test(record.consensus)) throw new ProxyStoreError("consensus pubkey malformed");
  if (record.module === "") throw new ProxyStoreError("module id empty");
  if (!SIGNATURE.test(record.delegationSignature))
    throw new ProxyStoreError("delegation signature malformed");
  if (record.sealed === "") throw new ProxyStoreError("sealed secret empty");
}

/** A row as both SQL backends return it. */
export interface ProxyRow {
  proxy: string;
  scheme: string;
  consensus: string;
  module: string;
  sealed: string;
  delegation_signature: string;
  created_at: number | bigint | string;
}

export function recordOfRow(row: ProxyRow): ProxyRecord {
  if (row.scheme !== "bls" && row.scheme !== "ecdsa")
    throw new ProxyStoreError(`stored proxy has an unknown scheme ${JSON.stringify(row.scheme)}`);
  return {
    proxy: row.proxy,
    scheme: row.scheme,
    consensus: row.consensus,
    module: row.module,
    sealed: row.sealed,
    delegationSignature: row.delegation_signature,
    createdAt: Number(row.created_at),
  };
}
