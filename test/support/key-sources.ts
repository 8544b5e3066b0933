// Helpers of the key-source tests: the process environment an in-process signer's AWS clients
// read, a cloud_kv item as the table holds it, and a directory no write can enter (the files
// writer's fault injection).
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { RunningDynamo } from "./dynamodb";

/** Sets variables in this process's environment; the returned function puts the old ones back. */
export function setProcessEnv(env: Record<string, string>): () => void {
  const saved = new Map<string, string | undefined>();
  for (const [name, value] of Object.entries(env)) {
    if (!saved.has(name)) saved.set(name, process.env[name]);
    process.env[name] = value;
  }
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/**
 * Makes `dir` refuse every change to its entries (no file created, renamed or removed in it):
 * mode 0555, and for root, who ignores modes, the immutable attribute (chattr +i). Throws when
 * neither holds here, rather than let a test pass without its fault. Returns the undo.
 */
export function makeReadOnly(dir: string): () => void {
  const root = process.getuid?.() === 0;
  const chattr = (flag: string) => {
    const result = Bun.spawnSync(["chattr", flag, dir]);
    if (result.exitCode !== 0)
      throw new Error(`chattr ${flag} ${dir} failed: ${result.stderr.toString().trim()}`);
  };
  Bun.spawnSync(["chmod", "0555", dir]);
  if (root) chattr("+i");
  const undo = () => {
    if (root) chattr("-i");
    Bun.spawnSync(["chmod", "0755", dir]);
  };
  const probe = join(dir, ".write-probe");
  try {
    writeFileSync(probe, "");
  } catch {
    return undo;
  }
  if (existsSync(probe)) rmSync(probe);
  undo();
  throw new Error(`cannot make ${dir} read-only on this machine`);
}

/** The status of the key's cloud_kv item, read straight from the table; undefined: no item. */
export async function itemStatus(
  dynamo: RunningDynamo,
  table: string,
  pubkey: string,
): Promise<string | undefined> {
  const { Item } = await dynamo.client().send(
    new GetItemCommand({
      TableName: table,
      Key: { pubkey: { S: pubkey } },
      ConsistentRead: true,
    }),
  );
  return Item === undefined ? undefined : (Item.status?.S ?? "");
}
