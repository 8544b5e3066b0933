import { beforeAll, describe, expect, test } from "bun:test";
import {
  Encrypter,
  generateHybridIdentity,
  generateIdentity,
  identityToRecipient,
} from "age-encryption";
import {
  containsAgeSecretKey,
  isAgeRecipient,
  parseAgeIdentityFile,
  unwrapWithAge,
  wrapWithAge,
} from "./age";
import { WrapError } from "./types";

interface KeyPair {
  identity: string;
  recipient: string;
}

async function keyPair(): Promise<KeyPair> {
  const identity = await generateIdentity();
  return { identity, recipient: await identityToRecipient(identity) };
}

/** The error a promise rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<WrapError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WrapError);
    return error as WrapError;
  }
  throw new Error("expected a rejection");
}

function thrown(run: () => unknown): WrapError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WrapError);
    return error as WrapError;
  }
  throw new Error("expected a throw");
}

/** Offset of the first byte after "age-encryption.org/v1\n", where the first stanza starts. */
const AGE_HEADER_END = "age-encryption.org/v1\n".length;

const share = Uint8Array.from({ length: 33 }, (_, i) => i + 1);
let alice: KeyPair;
let bob: KeyPair;

beforeAll(async () => {
  alice = await keyPair();
  bob = await keyPair();
});

describe("isAgeRecipient", () => {
  test("accepts generated X25519 recipients", () => {
    expect(isAgeRecipient(alice.recipient)).toBe(true);
    expect(isAgeRecipient(bob.recipient)).toBe(true);
  });

  test("refuses everything else", async () => {
    const flipped = `${alice.recipient.slice(0, -1)}${alice.recipient.endsWith("q") ? "p" : "q"}`;
    const hybrid = await identityToRecipient(await generateHybridIdentity());
    const refused = [
      "",
      "age1",
      flipped, // bad checksum
      alice.recipient.toUpperCase(),
      alice.recipient.slice(0, -2),
      ` ${alice.recipient}`,
      alice.identity,
      hybrid,
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI",
    ];
    for (const text of refused) expect(isAgeRecipient(text)).toBe(false);
  });

  test("containsAgeSecretKey spots a secret key in any case", () => {
    expect(containsAgeSecretKey(alice.identity)).toBe(true);
    expect(containsAgeSecretKey(`age:${alice.identity.toLowerCase()}`)).toBe(true);
    expect(containsAgeSecretKey(alice.recipient)).toBe(false);
  });
});

describe("wrapWithAge / unwrapWithAge", () => {
  test("round trip with the matching identity", async () => {
    const wrapped = await wrapWithAge(alice.recipient, share);
    expect(Buffer.from(wrapped).includes(Buffer.from(share))).toBe(false);
    const out = await unwrapWithAge([alice.identity], wrapped);
    expect([...out]).toEqual([...share]);
  });

  test("any identity of a file may be the matching one", async () => {
    const wrapped = await wrapWithAge(bob.recipient, share);
    const out = await unwrapWithAge([alice.identity, bob.identity], wrapped);
    expect([...out]).toEqual([...share]);
  });

  test("each wrap is fresh", async () => {
    const first = await wrapWithAge(alice.recipient, share);
    const second = await wrapWithAge(alice.recipient, share);
    expect(Buffer.from(first).equals(Buffer.from(second))).toBe(false);
  });

  test("a wrong identity is refused, naming the file and the recipient", async () => {
    const wrapped = await wrapWithAge(alice.recipient, share);
    const one = await rejection(
      unwrapWithAge([bob.identity], wrapped, {
        recipient: alice.recipient,
        identityPath: "/home/bob/key.txt",
      }),
    );
    expect(one.message).toBe(
      `the age identity in /home/bob/key.txt cannot decrypt this share: it was wrapped for ${alice.recipient}`,
    );
    const carol = await keyPair();
    const many = await rejection(unwrapWithAge([bob.identity, carol.identity], wrapped));
    expect(many.message).toBe("the age identities given cannot decrypt this share");
    for (const error of [one, many]) {
      expect(error.message).not.toContain(bob.identity);
      expect(error.message).not.toContain(carol.identity);
    }
  });

  test("not an age file, a malformed one, a corrupted one", async () => {
    const wrapped = await wrapWithAge(alice.recipient, share);
    const notAge = await rejection(unwrapWithAge([alice.identity], share));
    expect(notAge.message).toBe("the wrapped share is not an age-encrypted file");

    const malformed = wrapped.slice();
    malformed[AGE_HEADER_END] = 0x21; // breaks the "-> X25519" stanza line
    expect((await rejection(unwrapWithAge([alice.identity], malformed))).message).toBe(
      "the wrapped share is a malformed age file",
    );

    const tampered = wrapped.slice();
    const last = tampered.length - 1;
    tampered[last] = (tampered[last] ?? 0) ^ 0x01;
    expect((await rejection(unwrapWithAge([alice.identity], tampered))).message).toBe(
      "the wrapped share is corrupted: its age authentication failed",
    );

    const truncated = wrapped.subarray(0, wrapped.length - 4);
    expect((await rejection(unwrapWithAge([alice.identity], truncated))).message).toBe(
      "the wrapped share is corrupted: its age authentication failed",
    );
  });

  test("a file for another recipient type reads as no match", async () => {
    const encrypter = new Encrypter();
    encrypter.setPassphrase("correct horse");
    encrypter.setScryptWorkFactor(2);
    const wrapped = await encrypter.encrypt(share);
    const error = await rejection(unwrapWithAge([alice.identity], wrapped));
    expect(error.message).toBe("the age identity given cannot decrypt this share");
  });

  test("refuses bad identities without echoing them", async () => {
    const wrapped = await wrapWithAge(alice.recipient, share);
    const empty = await rejection(unwrapWithAge([], wrapped, { identityPath: "k.txt" }));
    expect(empty.message).toBe("no age identity in k.txt to unwrap the share with");
    const damaged = `${alice.identity.slice(0, -1)}${alice.identity.endsWith("Q") ? "P" : "Q"}`;
    const bad = await rejection(unwrapWithAge([alice.identity, damaged], wrapped));
    expect(bad.message).toBe("age identity 2 given is not a valid age identity");
    expect(bad.message).not.toContain(damaged);
  });

  test("wrap refuses a bad recipient, a secret key and an empty share", async () => {
    const secret = await rejection(wrapWithAge(alice.identity, share));
    expect(secret.message).toContain("an age secret key was given where a recipient belongs");
    expect(secret.message).not.toContain(alice.identity);
    expect((await rejection(wrapWithAge("age1nope", share))).message).toBe(
      "the recipient is not a valid age X25519 recipient (age1…)",
    );
    expect((await rejection(wrapWithAge(alice.recipient, new Uint8Array(0)))).message).toBe(
      "there is no share to wrap",
    );
  });
});

describe("parseAgeIdentityFile", () => {
  test("reads identities among comments and blank lines, LF or CRLF", () => {
    const text = [
      "# created: 2024-01-01T00:00:00Z",
      `# public key: ${alice.recipient}`,
      alice.identity,
      "",
      "   ",
      `  ${bob.identity}  `,
      "",
    ];
    expect(parseAgeIdentityFile(text.join("\n"), "k.txt")).toEqual([alice.identity, bob.identity]);
    expect(parseAgeIdentityFile(text.join("\r\n"), "k.txt")).toEqual([
      alice.identity,
      bob.identity,
    ]);
    expect(parseAgeIdentityFile(`\uFEFF${alice.identity}`, "k.txt")).toEqual([alice.identity]);
  });

  test("an empty file or only comments holds no identity", () => {
    expect(thrown(() => parseAgeIdentityFile("", "k.txt")).message).toBe(
      "k.txt holds no age identity (AGE-SECRET-KEY-1… line)",
    );
    expect(thrown(() => parseAgeIdentityFile("# nothing\n\n", "k.txt")).message).toContain(
      "holds no age identity",
    );
  });

  test("a garbage line is refused by number without being echoed", () => {
    const text = `${alice.identity}\nhunter2\n`;
    const error = thrown(() => parseAgeIdentityFile(text, "k.txt"));
    expect(error.message).toBe(
      "line 2 of k.txt is not an age identity (expected AGE-SECRET-KEY-1…, a # comment or a blank line)",
    );
    expect(error.message).not.toContain("hunter2");
  });

  test("a public key by mistake is named as such", () => {
    const error = thrown(() => parseAgeIdentityFile(`# mine\n${alice.recipient}\n`, "k.txt"));
    expect(error.message).toContain("line 2 of k.txt is an age recipient (a public key)");
  });

  test("a damaged identity is refused without being echoed", () => {
    const damaged = alice.identity.slice(0, -3);
    const error = thrown(() => parseAgeIdentityFile(damaged, "k.txt"));
    expect(error.message).toBe(
      "line 1 of k.txt looks like an age identity but is damaged (bad checksum or length)",
    );
    expect(error.message).not.toContain(damaged);
  });

  test("post-quantum and plugin identities are refused with their own reason", async () => {
    const hybrid = await generateHybridIdentity();
    expect(thrown(() => parseAgeIdentityFile(hybrid, "k.txt")).message).toContain(
      "line 1 of k.txt is a post-quantum age identity",
    );
    expect(thrown(() => parseAgeIdentityFile("AGE-PLUGIN-YUBIKEY-1QQQ", "k.txt")).message).toBe(
      "line 1 of k.txt is an age plugin identity, which sigil does not support",
    );
  });
});
