import { describe, expect, test } from "bun:test";
import type { LocalBlsBackend } from "./backend";
import { createBlstBackend } from "./blst";
import { toHex } from "./key";
import { createNobleBackend } from "./noble";
import {
  chooseBackend,
  loadBlsBackend,
  SELF_TEST_KEY,
  SELF_TEST_MESSAGE,
  SELF_TEST_PUBKEY,
  SELF_TEST_SIGNATURE,
  selfTestBackend,
} from "./select";

/** A real blst backend whose signatures are off by one bit, as a miscompiled build might be. */
function corruptedBlst(): LocalBlsBackend {
  const real = createBlstBackend();
  return {
    name: "blst",
    importSecretKey: (secret) => real.importSecretKey(secret),
    sign: (key, message) => {
      const sig = real.sign(key, message);
      sig[95] = (sig[95] ?? 0) ^ 1;
      return sig;
    },
    verify: (pk, msg, sig) => real.verify(pk, msg, sig),
    forget: (key) => real.forget(key),
  };
}

/** A real blst backend whose verify accepts anything. */
function permissiveBlst(): LocalBlsBackend {
  const real = createBlstBackend();
  return { ...real, name: "blst", verify: () => true };
}

const failingLoader = async (): Promise<LocalBlsBackend> => {
  throw new Error("Cannot find module '@chainsafe/blst-linux-x64-gnu'");
};

describe("loadBlsBackend", () => {
  test('"noble" gives noble without a note', async () => {
    const { backend, note } = await loadBlsBackend("noble");
    expect(backend.name).toBe("noble");
    expect(note).toBeUndefined();
  });

  test('"blst" gives blst', async () => {
    const { backend, note } = await loadBlsBackend("blst");
    expect(backend.name).toBe("blst");
    expect(note).toBeUndefined();
  });

  test('"auto" gives blst here (it is installed and passes the self-test)', async () => {
    const { backend, note } = await loadBlsBackend("auto");
    expect(backend.name).toBe("blst");
    expect(note).toBeUndefined();
    const key = backend.importSecretKey(new Uint8Array(32).fill(1));
    const msg = new Uint8Array(32);
    expect(backend.verify(key.publicKey, msg, backend.sign(key, msg))).toBe(true);
  });
});

describe("chooseBackend fallback logic", () => {
  test('"auto" falls back to noble with the reason when blst cannot be loaded', async () => {
    const { backend, note } = await chooseBackend("auto", failingLoader);
    expect(backend.name).toBe("noble");
    expect(note).toContain("blst could not be loaded");
    expect(note).toContain("Cannot find module '@chainsafe/blst-linux-x64-gnu'");
  });

  test('"auto" falls back to noble when blst signs differently from noble', async () => {
    const { backend, note } = await chooseBackend("auto", async () => corruptedBlst());
    expect(backend.name).toBe("noble");
    expect(note).toContain("self-test");
    expect(note).toContain("signature mismatch");
  });

  test('"auto" falls back to noble when blst accepts a wrong signature', async () => {
    const { backend, note } = await chooseBackend("auto", async () => permissiveBlst());
    expect(backend.name).toBe("noble");
    expect(note).toContain("accepts a wrong signature");
  });

  test('"blst" throws with the underlying reason when blst cannot be loaded', async () => {
    await expect(chooseBackend("blst", failingLoader)).rejects.toThrow(
      /blst could not be loaded: Cannot find module '@chainsafe\/blst-linux-x64-gnu'/,
    );
  });

  test('"blst" throws when blst fails the self-test', async () => {
    await expect(chooseBackend("blst", async () => corruptedBlst())).rejects.toThrow(
      /self-test.*signature mismatch/,
    );
  });

  test('"noble" never calls the blst loader', async () => {
    let called = false;
    const { backend } = await chooseBackend("noble", async () => {
      called = true;
      return createBlstBackend();
    });
    expect(backend.name).toBe("noble");
    expect(called).toBe(false);
  });

  test("the self-test passes for blst and for noble", () => {
    expect(selfTestBackend(createBlstBackend())).toBeUndefined();
    expect(selfTestBackend(createNobleBackend())).toBeUndefined();
  });

  test("the self-test's known answers are what noble computes", () => {
    const noble = createNobleBackend();
    const key = noble.importSecretKey(SELF_TEST_KEY);
    expect(toHex(key.publicKey)).toBe(SELF_TEST_PUBKEY);
    expect(toHex(noble.sign(key, SELF_TEST_MESSAGE))).toBe(SELF_TEST_SIGNATURE);
  });

  test("a backend deriving another public key fails the self-test", async () => {
    const real = createBlstBackend();
    const otherKey: LocalBlsBackend = {
      ...real,
      name: "blst",
      importSecretKey: (secret) =>
        real.importSecretKey(Uint8Array.from(secret, (b, i) => (i === 31 ? b ^ 1 : b))),
    };
    expect(selfTestBackend(otherKey)).toContain("public key mismatch");
    const { backend, note } = await chooseBackend("auto", async () => otherKey);
    expect(backend.name).toBe("noble");
    expect(note).toContain("public key mismatch");
  });
});
