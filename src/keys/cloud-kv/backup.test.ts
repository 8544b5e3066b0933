import { beforeAll, describe, expect, test } from "bun:test";
import {
  armor,
  Decrypter,
  generateHybridIdentity,
  generateIdentity,
  identityToRecipient,
} from "age-encryption";
import {
  BackupRecipientError,
  checkBackupRecipients,
  encryptMnemonicBackup,
  MAX_BACKUP_RECIPIENTS,
} from "./backup";
import { deriveValidatorKeys, newMnemonic } from "./derive";

interface KeyPair {
  identity: string;
  recipient: string;
}

async function keyPair(): Promise<KeyPair> {
  const identity = await generateIdentity();
  return { identity, recipient: await identityToRecipient(identity) };
}

/** Decrypts an armored backup with age-encryption directly, as an operator's tool would. */
async function decryptBackup(armored: string, identity: string): Promise<string> {
  const decrypter = new Decrypter();
  decrypter.addIdentity(identity);
  return decrypter.decrypt(armor.decode(armored), "text");
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

const pubkeysOf = (mnemonic: string): string[] =>
  deriveValidatorKeys(mnemonic, 0, 3).map((key) => key.pubkey);

describe("encryptMnemonicBackup", () => {
  let alice: KeyPair;
  let bob: KeyPair;
  let mallory: KeyPair;
  const mnemonic = newMnemonic();

  beforeAll(async () => {
    [alice, bob, mallory] = await Promise.all([keyPair(), keyPair(), keyPair()]);
  });

  test("is an armored age file without the mnemonic in it", async () => {
    const armored = await encryptMnemonicBackup(mnemonic, [alice.recipient]);
    expect(armored.startsWith("-----BEGIN AGE ENCRYPTED FILE-----\n")).toBe(true);
    expect(armored.endsWith("-----END AGE ENCRYPTED FILE-----\n")).toBe(true);
    for (const word of mnemonic.split(" ")) expect(armored).not.toContain(` ${word} `);
    expect(armored).not.toContain(mnemonic);
  });

  test("each recipient's identity gives back the mnemonic, which re-derives the same keys", async () => {
    const expected = pubkeysOf(mnemonic);
    const armored = await encryptMnemonicBackup(mnemonic, [alice.recipient, bob.recipient]);
    for (const { identity } of [alice, bob]) {
      const restored = await decryptBackup(armored, identity);
      expect(restored).toBe(mnemonic);
      expect(pubkeysOf(restored)).toEqual(expected);
    }
  });

  test("an identity that is not a recipient cannot decrypt", async () => {
    const armored = await encryptMnemonicBackup(mnemonic, [alice.recipient, bob.recipient]);
    expect(await rejection(decryptBackup(armored, mallory.identity))).toBeInstanceOf(Error);
  });

  test("each backup is freshly encrypted", async () => {
    const first = await encryptMnemonicBackup(mnemonic, [alice.recipient]);
    const second = await encryptMnemonicBackup(mnemonic, [alice.recipient]);
    expect(first).not.toBe(second);
  });

  test("an invalid mnemonic is refused without being echoed", async () => {
    const bad = Array.from({ length: 24 }, () => "zoo").join(" ");
    const error = await rejection(encryptMnemonicBackup(bad, [alice.recipient]));
    expect(error.message).toContain("checksum");
    expect(error.message).not.toContain("zoo");
  });

  test("a pasted identity is refused by position, never echoed", async () => {
    const error = await rejection(
      encryptMnemonicBackup(mnemonic, [alice.recipient, mallory.identity]),
    );
    expect(error).toBeInstanceOf(BackupRecipientError);
    expect((error as BackupRecipientError).position).toBe(2);
    expect(error.message).toContain("recipient 2 is an age secret key");
    expect(error.message).not.toContain(mallory.identity);
    expect(error.message).not.toContain(mallory.identity.slice(16, 40));
    // Lowercased or embedded in other text, it is still recognised.
    const lower = `  ${mallory.identity.toLowerCase()}`;
    expect(() => checkBackupRecipients([lower])).toThrow("recipient 1 is an age secret key");
  });

  test("a post-quantum identity pasted by mistake is refused as a secret key too", async () => {
    const hybrid = await generateHybridIdentity();
    expect(() => checkBackupRecipients([alice.recipient, bob.recipient, hybrid])).toThrow(
      "recipient 3 is an age secret key",
    );
  });

  test("malformed recipients are refused by position, without echo", () => {
    const damaged = `${alice.recipient.slice(0, -1)}${alice.recipient.endsWith("q") ? "p" : "q"}`;
    const cases: [unknown, string][] = [
      ["age1notarecipient", "age1notarecipient"],
      [damaged, damaged],
      [alice.recipient.toUpperCase(), alice.recipient.toUpperCase()],
      [` ${alice.recipient}`, alice.recipient],
      [42, "42"],
    ];
    for (const [bad, secretish] of cases) {
      let error: unknown;
      try {
        checkBackupRecipients([bob.recipient, bad as string]);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(BackupRecipientError);
      const message = (error as BackupRecipientError).message;
      expect(message).toBe("backup recipient 2 is not a valid age X25519 recipient (age1…)");
      expect(message).not.toContain(secretish);
    }
  });

  test("a post-quantum recipient is not accepted (X25519 only, as for unseal shares)", async () => {
    const pq = await identityToRecipient(await generateHybridIdentity());
    expect(() => checkBackupRecipients([pq])).toThrow("recipient 1 is not a valid");
  });

  test("the list must be non-empty, bounded and without repeats", () => {
    expect(() => checkBackupRecipients([])).toThrow("at least one");
    expect(() => checkBackupRecipients("age1x" as unknown as string[])).toThrow("at least one");
    const many = Array.from({ length: MAX_BACKUP_RECIPIENTS + 1 }, () => alice.recipient);
    expect(() => checkBackupRecipients(many)).toThrow(`at most ${MAX_BACKUP_RECIPIENTS}`);
    expect(() => checkBackupRecipients([alice.recipient, bob.recipient, alice.recipient])).toThrow(
      "backup recipient 3 repeats recipient 1",
    );
    expect(() => checkBackupRecipients([alice.recipient, bob.recipient])).not.toThrow();
  });
});
