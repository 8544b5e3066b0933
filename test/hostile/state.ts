// What a signer has written, read from outside it: the sqlite files as sqlite sees them and the
// keys directory as the filesystem sees it. Compared before and after a hostile run.
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** Rows of `sql` in a sqlite file opened read-only (the signer keeps its own connection). */
export function sqliteRows(path: string, sql: string): Record<string, unknown>[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.query(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** The slashing protection database's records, one string per row. */
export function slashingRecords(path: string): {
  attestations: string[];
  blocks: string[];
  validators: string[];
} {
  const rows = (sql: string) => sqliteRows(path, sql).map((row) => JSON.stringify(row));
  return {
    attestations: rows(
      `SELECT v.pubkey, a.source_epoch, a.target_epoch, lower(hex(a.signing_root)) AS root
         FROM signed_attestations a JOIN validators v ON v.id = a.validator_id ORDER BY 1, 2, 3, 4`,
    ),
    blocks: rows(
      `SELECT v.pubkey, b.slot, lower(hex(b.signing_root)) AS root
         FROM signed_blocks b JOIN validators v ON v.id = b.validator_id ORDER BY 1, 2, 3`,
    ),
    validators: rows("SELECT pubkey FROM validators ORDER BY 1"),
  };
}

/** Policies, tokens and the seal record of a sqlite signer_state. */
export function signerState(path: string): Record<string, string[]> {
  const rows = (sql: string) => sqliteRows(path, sql).map((row) => JSON.stringify(row));
  return {
    policies: rows("SELECT name, rules, updated_at FROM sigil_state_policies ORDER BY name"),
    tokens: rows(
      "SELECT accessor, kind, policies, cidrs, expires_at FROM sigil_state_tokens ORDER BY accessor",
    ),
    seal: rows("SELECT version, body, updated_at FROM sigil_state_seal"),
  };
}

/** A digest of every file under `dir`: relative path, mode and content. */
export function treeDigest(dir: string): string {
  const hash = createHash("sha256");
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const stat = statSync(path);
      hash.update(`${relative(dir, path)}\0${stat.mode.toString(8)}\0`);
      if (stat.isDirectory()) walk(path);
      else hash.update(readFileSync(path));
    }
  };
  walk(dir);
  return hash.digest("hex");
}
