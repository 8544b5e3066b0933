// Released migrations never change: a database that ran one keeps what it did, so a fresh
// database must get exactly the same. Each migration's text (and description) is pinned by its
// SHA-256; a change to a released one fails here. A new schema version is a new migration, whose
// hash is added below with it.
//
// The pins were taken from the migrations as they were before they became literal text (the
// PostgreSQL slashing schema's versions 3 and 4 were generated from a template then): the literal
// text that replaced the generator is byte for byte what the generator produced.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { MIGRATIONS as SLASHING_POSTGRES } from "../../src/antislashing/backends/postgres/migrations";
import { MIGRATIONS as SLASHING_SQLITE } from "../../src/antislashing/backends/sqlite/migrations";
import { MIGRATIONS as CB_POSTGRES } from "../../src/commit-boost/store/postgres";
import { MIGRATIONS as CB_SQLITE } from "../../src/commit-boost/store/sqlite";
import { MIGRATIONS as STATE_POSTGRES } from "../../src/state/postgres";
import { MIGRATIONS as STATE_SQLITE } from "../../src/state/sqlite";

interface AnyMigration {
  readonly version: number;
  readonly description?: string;
  readonly sql: string | readonly string[];
}

const PINNED: Record<string, { list: readonly AnyMigration[]; sha256: readonly string[] }> = {
  "slashing protection, PostgreSQL": {
    list: SLASHING_POSTGRES,
    sha256: [
      "073a46c36878502c0077397b7d2f74df58bab670ca353fa041846da593b0c90c",
      "7ec8725d94ea3aebe0a9d07388bead137175727f001701857684d936b97cf659",
      "e683f188563cc43228aa90fe24dd292bb379cb2c5bc7d81e6d159afdf981ab05",
      "093e1d2bea7eae5641b9cc4c679dd4edbf3d9adf7a12203e4d1a91fefd134d4c",
      "284bc0827f074518dd979fe022f16b02d742b9ae2bdb60cff9061c3c9154f2a0",
      "be1c0524ef075ff3fa7fa3efcb118f309851502014fd707d10cf2130fa869a91",
      "041d960f570f5fe0209750a70353b1471c8834b142c49821cef6fc18c5230c5f",
    ],
  },
  "slashing protection, sqlite": {
    list: SLASHING_SQLITE,
    sha256: [
      "fdd6bae9cb37501dc545cff019d4eca27c612aa5b1f2d63d84e3ab4ee6e06b6a",
      "7fb53f12474a5757e85753c88d62c7750daf5eb44b2426a72240b698d37ebbc7",
      "d8ebf72d82f100a23dd6ae9de0773b351986e211dc9d9d77a5f4741bb89fba0f",
      "5a65fdb79f18371a452af86f903f0115cbf31cba02547506e596b627ee7304cd",
      "83c274da3605f6476eab1440be85be0baa7de5c2756986a1564231ac8f8ce5c9",
    ],
  },
  "signer_state, PostgreSQL": {
    list: STATE_POSTGRES,
    sha256: [
      "c3965dd34f0a60ae8a90513782009c8e97fb99ebd031b14ee5c293757f081a8a",
      "7ab081ec63a1ac02eabf2bc8812a9c4846fd5ac76d79809c4233470945bfceee",
    ],
  },
  "commit-boost proxies, PostgreSQL": {
    list: CB_POSTGRES,
    sha256: ["56938d863fc84c2fe7803cd6a605b34c82f909f5cd8921661ae23cd28fffe65d"],
  },
  "commit-boost proxies, sqlite": {
    list: CB_SQLITE,
    sha256: ["617dab3ee44daf075661c2b9d9873c8f9bd5a8f7b4f5b634d3c5ee2892829af4"],
  },
  "signer_state, sqlite": {
    list: STATE_SQLITE,
    sha256: [
      "a34f2f9d7f8ea89bdc8bb76a0da526efdb7ace6971117307cc218f597a64771f",
      "7b0f51fc202ce593c11f28718b5330979079dbadb1f077f06fd0c52e3c1d621f",
    ],
  },
};

function sha256(migration: AnyMigration): string {
  const text = JSON.stringify({ description: migration.description ?? null, sql: migration.sql });
  return createHash("sha256").update(text).digest("hex");
}

describe("released migrations are frozen", () => {
  for (const [store, { list, sha256: pinned }] of Object.entries(PINNED)) {
    test(`${store}: versions 1 to ${pinned.length}, each exactly as released`, () => {
      expect(list.map((m) => m.version)).toEqual(pinned.map((_, i) => i + 1));
      expect(list.map(sha256)).toEqual([...pinned]);
    });
  }
});
