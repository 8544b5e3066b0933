import type { KeyAccess } from "../auth/authenticator";
import { SigilError } from "../errors";
import type { KeySourceName, KeyStore } from "./key-store";

/** One key of one source, as GET /api/v1/signer/keys lists it. */
export interface InventoryEntry {
  readonly pubkey: string;
  readonly source: KeySourceName;
  /** cloud_kv: the item's status; other sources: "active". */
  readonly status: string;
  /** Whether this signer holds the key in memory now (can sign with it). */
  readonly loaded: boolean;
  readonly origin?: string;
}

export interface TableListing {
  readonly pubkey: string;
  readonly status: string;
  readonly origin: string;
}

export const DEFAULT_PAGE_SIZE = 1000;
export const MAX_PAGE_SIZE = 10_000;
/** A table listing is reused this long, so walking 100k keys page by page is one scan, not 100. */
const TABLE_CACHE_MS = 30_000;

/**
 * The operational inventory: every key of every source, loaded or not, that the caller may see,
 * sorted by pubkey then source, in pages. The cursor is the last entry's `pubkey:source` (not a secret, stable under
 * changes: a key added before the cursor is simply not seen by that walk).
 */
export class KeyInventory {
  #cached: { at: number; items: readonly TableListing[] } | undefined;

  constructor(
    private readonly keys: KeyStore,
    private readonly listTable?: () => Promise<readonly TableListing[]>,
    private readonly now: () => number = Date.now,
  ) {}

  /** One page of the keys the caller may see (the key rule of signer_keys_list). */
  async page(
    query: URLSearchParams,
    access: KeyAccess,
  ): Promise<{ data: InventoryEntry[]; next: string | null }> {
    const limit = pageSize(query.get("limit"));
    const after = query.get("after") ?? "";
    const entries = new Map<string, InventoryEntry>();
    for (const pubkey of this.keys.pubkeys()) {
      const stored = this.keys.get(pubkey);
      if (!stored) continue;
      entries.set(`${pubkey}:${stored.source}`, {
        pubkey,
        source: stored.source,
        status: "active",
        loaded: true,
      });
    }
    for (const item of await this.tableItems(after === "")) {
      const loaded = this.keys.get(item.pubkey)?.source === "cloud_kv";
      entries.set(`${item.pubkey}:cloud_kv`, {
        pubkey: item.pubkey,
        source: "cloud_kv",
        status: item.status,
        loaded,
        origin: item.origin,
      });
    }
    const sorted = [...entries.entries()]
      .filter(([, entry]) => access.refusal(entry.pubkey) === undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const start = after === "" ? 0 : sorted.findIndex(([id]) => id > after);
    const slice = start < 0 ? [] : sorted.slice(start, start + limit);
    const last = slice.at(-1)?.[0];
    const more = start >= 0 && start + limit < sorted.length;
    return { data: slice.map(([, entry]) => entry), next: more && last ? last : null };
  }

  /** A fresh listing for the first page of a walk; the cached one (if recent) for the others. */
  private async tableItems(firstPage: boolean): Promise<readonly TableListing[]> {
    if (!this.listTable) return [];
    const now = this.now();
    if (!firstPage && this.#cached && now - this.#cached.at < TABLE_CACHE_MS)
      return this.#cached.items;
    const items = await this.listTable();
    this.#cached = { at: now, items };
    return items;
  }
}

function pageSize(raw: string | null): number {
  if (raw === null) return DEFAULT_PAGE_SIZE;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > MAX_PAGE_SIZE)
    throw new SigilError("invalid_request", `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  return value;
}
