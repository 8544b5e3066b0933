import { beforeAll, describe, expect, test } from "bun:test";
import type { KMSClient } from "@aws-sdk/client-kms";
import { generateIdentity, identityToRecipient } from "age-encryption";
import {
  formatWrapSpec,
  parseWrapSpec,
  parseWrapSpecList,
  type ShareContext,
  unwrapShare,
  WrapError,
  type WrapSpec,
  wrapShare,
} from "./index";

const KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";
const MRK_ARN = "arn:aws:kms:eu-west-2:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab";
const ALIAS_ARN = "arn:aws-us-gov:kms:us-gov-west-1:111122223333:alias/sigil/unseal-alice";
const ctx: ShareContext = { sealId: "seal-1", operator: "alice" };
const share = Uint8Array.from({ length: 33 }, (_, i) => 200 - i);

/** KMS must not be reached on the age path. */
const noKms = {
  kmsClient(): KMSClient {
    throw new Error("KMS used for an age share");
  },
};

let identity: string;
let recipient: string;

beforeAll(async () => {
  identity = await generateIdentity();
  recipient = await identityToRecipient(identity);
});

function reasonOf(text: string): string {
  const parsed = parseWrapSpec(text);
  if (parsed.ok) throw new Error(`${text} parsed`);
  return parsed.reason;
}

async function rejection(promise: Promise<unknown>): Promise<WrapError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WrapError);
    return error as WrapError;
  }
  throw new Error("expected a rejection");
}

describe("parseWrapSpec: valid", () => {
  test("KMS key, multi-Region key and alias ARNs, in any partition", () => {
    for (const arn of [
      KEY_ARN,
      MRK_ARN,
      ALIAS_ARN,
      "arn:aws-cn:kms:cn-north-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    ]) {
      expect(parseWrapSpec(`awskms:${arn}`)).toEqual({
        ok: true,
        spec: { kind: "awskms", keyArn: arn },
      });
    }
  });

  test("an age recipient, with surrounding whitespace ignored", () => {
    expect(parseWrapSpec(`  age:${recipient}\n`)).toEqual({
      ok: true,
      spec: { kind: "age", recipient },
    });
  });

  test("formatWrapSpec reads back to the same spec", () => {
    const specs: WrapSpec[] = [
      { kind: "awskms", keyArn: KEY_ARN },
      { kind: "age", recipient },
    ];
    for (const spec of specs) {
      const text = formatWrapSpec(spec);
      expect(text.startsWith(`${spec.kind}:`)).toBe(true);
      expect(parseWrapSpec(text)).toEqual({ ok: true, spec });
    }
  });
});

describe("parseWrapSpec: refused", () => {
  test("empty, no scheme, unknown scheme", () => {
    expect(reasonOf("")).toContain("it is empty");
    expect(reasonOf("   ")).toContain("it is empty");
    expect(reasonOf("hello")).toBe(
      "it has no scheme; expected awskms:<KMS key ARN> or age:<age1… recipient>",
    );
    expect(reasonOf(`kms:${KEY_ARN}`)).toBe(
      'unknown wrap scheme "kms"; expected awskms:<KMS key ARN> or age:<age1… recipient>',
    );
    expect(reasonOf(`AWSKMS:${KEY_ARN}`)).toContain('unknown wrap scheme "AWSKMS"');
  });

  test("a long or odd scheme is not echoed", () => {
    const reason = reasonOf("p@ssw0rd!:x");
    expect(reason).toBe(
      "unknown wrap scheme; expected awskms:<KMS key ARN> or age:<age1… recipient>",
    );
  });

  test("a missing scheme on an ARN or a recipient is pointed out", () => {
    expect(reasonOf(KEY_ARN)).toContain("write awskms:arn:aws:kms:");
    expect(reasonOf(recipient)).toBe("an age recipient needs the scheme: write age:age1…");
  });

  test("a secret key pasted as a recipient is named but not echoed", () => {
    for (const text of [`age:${identity}`, identity, `age:${identity.toLowerCase()}`]) {
      const reason = reasonOf(text);
      expect(reason).toContain("it is an age secret key");
      expect(reason.toUpperCase()).not.toContain(identity);
    }
  });

  test("an invalid age recipient", () => {
    const broken = `${recipient.slice(0, -1)}${recipient.endsWith("q") ? "p" : "q"}`;
    for (const text of [`age:${broken}`, "age:", "age:age1abc", `age:${recipient.toUpperCase()}`]) {
      expect(reasonOf(text)).toContain("not a valid age X25519 recipient");
    }
    expect(reasonOf("age:age1pq1qqqq")).toContain("post-quantum and tag age recipients");
  });

  test("bad ARN shapes say which part is wrong", () => {
    const cases: Array<[string, string]> = [
      ["awskms:", "not a KMS key ARN"],
      ["awskms:arn:aws:kms:us-east-1:111122223333", "not a KMS key ARN"],
      [`awskms:${KEY_ARN}:extra`, "not a KMS key ARN"],
      [`awskms:${KEY_ARN.replace("arn:aws:", "arn:gcp:")}`, "partition"],
      [`awskms:${KEY_ARN.replace(":kms:", ":s3:")}`, "kms service"],
      [`awskms:${KEY_ARN.replace("us-east-1", "useast")}`, "region"],
      [`awskms:${KEY_ARN.replace("111122223333", "11112222333")}`, "account is not 12 digits"],
      [`awskms:${KEY_ARN.replace("key/", "keys/")}`, "resource"],
      [`awskms:${KEY_ARN.replace("1234abcd-", "1234ABCD-")}`, "lowercase UUID"],
      [`awskms:${KEY_ARN.replace(/key\/.*/, "key/")}`, "resource"],
      [`awskms:${KEY_ARN.replace(/key\/.*/, "alias/")}`, "resource"],
      [`awskms:${KEY_ARN.replace(/key\/.*/, "alias/aws/s3")}`, "AWS managed key"],
    ];
    for (const [text, part] of cases) expect(reasonOf(text)).toContain(part);
  });
});

describe("parseWrapSpecList", () => {
  test("parses every spec in order", () => {
    const parsed = parseWrapSpecList([
      `awskms:${KEY_ARN}`,
      `age:${recipient}`,
      `awskms:${MRK_ARN}`,
    ]);
    expect(parsed).toEqual({
      ok: true,
      specs: [
        { kind: "awskms", keyArn: KEY_ARN },
        { kind: "age", recipient },
        { kind: "awskms", keyArn: MRK_ARN },
      ],
    });
  });

  test("refuses an empty list", () => {
    expect(parseWrapSpecList([])).toEqual({
      ok: false,
      reason: "no wrap keys given; each operator share needs one",
    });
  });

  test("names the position of a bad spec", () => {
    const parsed = parseWrapSpecList([`awskms:${KEY_ARN}`, "kms:x"]);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toStartWith('wrap key 2: unknown wrap scheme "kms"');
  });

  test("refuses the same key twice, even with different whitespace", () => {
    const parsed = parseWrapSpecList([
      `age:${recipient}`,
      `awskms:${KEY_ARN}`,
      ` age:${recipient} `,
    ]);
    expect(parsed).toEqual({
      ok: false,
      reason: `wrap key 3 repeats wrap key 1 (age:${recipient}): its holder would hold two shares`,
    });
  });

  test("refuses more keys than shares can exist", () => {
    const parsed = parseWrapSpecList(Array(256).fill(`age:${recipient}`));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toBe("256 wrap keys given; at most 255 shares can exist");
  });
});

describe("wrapShare / unwrapShare: age", () => {
  const ageSpec = (): WrapSpec => ({ kind: "age", recipient });

  test("round trip through the dispatcher without touching KMS", async () => {
    const wrapped = await wrapShare(ageSpec(), share, ctx, noKms);
    const out = await unwrapShare(ageSpec(), wrapped, ctx, { ...noKms, ageIdentities: [identity] });
    expect([...out]).toEqual([...share]);
  });

  test("an age share without identities asks for --identity", async () => {
    const wrapped = await wrapShare(ageSpec(), share, ctx, noKms);
    for (const deps of [noKms, { ...noKms, ageIdentities: [] }]) {
      const error = await rejection(unwrapShare(ageSpec(), wrapped, ctx, deps));
      expect(error.message).toBe(
        `this share is wrapped for age recipient ${recipient}; pass --identity FILE with its age identity`,
      );
    }
  });

  test("the wrong identity names the file and the recipient", async () => {
    const wrapped = await wrapShare(ageSpec(), share, ctx, noKms);
    const other = await generateIdentity();
    const error = await rejection(
      unwrapShare(ageSpec(), wrapped, ctx, {
        ...noKms,
        ageIdentities: [other],
        ageIdentityPath: "bob.key",
      }),
    );
    expect(error.message).toBe(
      `the age identity in bob.key cannot decrypt this share: it was wrapped for ${recipient}`,
    );
  });

  test("KMS specs go to the client for their key", async () => {
    const asked: string[] = [];
    const deps = {
      kmsClient(keyArn: string): KMSClient {
        asked.push(keyArn);
        throw new Error("stop here");
      },
    };
    const spec: WrapSpec = { kind: "awskms", keyArn: KEY_ARN };
    await expect(wrapShare(spec, share, ctx, deps)).rejects.toThrow("stop here");
    await expect(unwrapShare(spec, share, ctx, deps)).rejects.toThrow("stop here");
    expect(asked).toEqual([KEY_ARN, KEY_ARN]);
  });

  test("an unknown kind from stored data is refused", async () => {
    const bogus = { kind: "gpg", recipient } as unknown as WrapSpec;
    expect((await rejection(wrapShare(bogus, share, ctx, noKms))).message).toBe(
      'unknown wrap kind "gpg"',
    );
    expect((await rejection(unwrapShare(bogus, share, ctx, noKms))).message).toBe(
      'unknown wrap kind "gpg"',
    );
  });
});
