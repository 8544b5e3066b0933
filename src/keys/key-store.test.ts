import { describe, expect, test } from "bun:test";
import { createKeyHandle } from "../bls/key";
import { KeyStore, type StoredKey } from "./key-store";

function entry(byte: number): StoredKey {
  const publicKey = new Uint8Array(48).fill(byte);
  return {
    pubkey: `0x${Buffer.from(publicKey).toString("hex")}`,
    key: createKeyHandle("noble", publicKey),
    source: "filesystem",
    readonly: true,
  };
}

describe("KeyStore onRemove", () => {
  test("is called once with the removed entry, after it left the store", () => {
    const removed: StoredKey[] = [];
    const keys = new KeyStore({
      onRemove: (gone) => {
        expect(keys.get(gone.pubkey)).toBeUndefined();
        removed.push(gone);
      },
    });
    const a = entry(1);
    const b = entry(2);
    keys.add(a);
    keys.add(b);
    expect(keys.remove(a.pubkey)).toBe(true);
    expect(removed).toEqual([a]);
    expect(removed[0]?.key).toBe(a.key);
    expect(keys.pubkeys()).toEqual([b.pubkey]);
  });

  test("is not called for an absent pubkey or a refused duplicate", () => {
    const removed: StoredKey[] = [];
    const keys = new KeyStore({ onRemove: (gone) => removed.push(gone) });
    const a = entry(1);
    keys.add(a);
    expect(keys.add(entry(1))).toBe(false);
    expect(keys.remove(entry(3).pubkey)).toBe(false);
    expect(removed).toEqual([]);
    keys.remove(a.pubkey);
    expect(keys.remove(a.pubkey)).toBe(false);
    expect(removed).toHaveLength(1);
  });

  test("a store without options still adds and removes", () => {
    const keys = new KeyStore();
    const a = entry(1);
    expect(keys.add(a)).toBe(true);
    expect(keys.remove(a.pubkey)).toBe(true);
    expect(keys.count()).toBe(0);
  });

  test("replace: the old key leaves the backend unless the same key object stays", () => {
    const removed: StoredKey[] = [];
    const keys = new KeyStore({ onRemove: (gone) => removed.push(gone) });
    const a = entry(1);
    keys.replace(a);
    expect(keys.get(a.pubkey)).toBe(a);
    expect(removed).toEqual([]);
    const sameKey = { ...a, readonly: false };
    keys.replace(sameKey);
    expect(keys.get(a.pubkey)).toBe(sameKey);
    expect(removed).toEqual([]);
    const newKey = entry(1);
    keys.replace(newKey);
    expect(keys.get(a.pubkey)).toBe(newKey);
    expect(removed).toEqual([sameKey]);
  });
});

describe("KeyStore signatures in flight", () => {
  test("a removed key leaves the BLS backend at its last release; settled waits for it", async () => {
    const removed: StoredKey[] = [];
    const keys = new KeyStore({ onRemove: (gone) => removed.push(gone) });
    const a = entry(1);
    keys.add(a);
    const first = keys.acquire(a.pubkey);
    const second = keys.acquire(a.pubkey);
    expect(first).toBe(a);
    expect(keys.inFlight(a.pubkey)).toBe(2);
    let settled = false;
    const waiting = keys.settled(a.pubkey).then(() => {
      settled = true;
    });
    expect(keys.remove(a.pubkey)).toBe(true);
    // Gone for every later signature, but the two in flight keep their key.
    expect(keys.acquire(a.pubkey)).toBeUndefined();
    expect(removed).toEqual([]);
    keys.release(a);
    await Bun.sleep(0);
    expect(settled).toBe(false);
    expect(removed).toEqual([]);
    keys.release(second as StoredKey);
    await waiting;
    expect(removed).toEqual([a]);
    expect(keys.inFlight(a.pubkey)).toBe(0);
    await keys.settled(a.pubkey);
  });

  test("a replacement under the same key object never retires it; another key object does, at its last release", () => {
    const removed: StoredKey[] = [];
    const keys = new KeyStore({ onRemove: (gone) => removed.push(gone) });
    const a = entry(1);
    keys.add(a);
    const held = keys.acquire(a.pubkey) as StoredKey;
    keys.replace({ ...a, readonly: false });
    keys.release(held);
    expect(removed).toEqual([]);
    const again = keys.acquire(a.pubkey) as StoredKey;
    const changed = { ...entry(1), readonly: false };
    keys.replace(changed);
    expect(removed).toEqual([]);
    keys.release(again);
    expect(removed).toEqual([again]);
    expect(keys.get(a.pubkey)).toBe(changed);
  });
});
