import { describe, expect, test } from "bun:test";
import {
  DescriptorError,
  parseDescriptorFile,
  stripFinalLineEnding,
} from "../../src/keys/descriptor";

const KEY = `0x${"11".repeat(32)}`;

function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    if (err instanceof DescriptorError) return err.reason;
    throw err;
  }
  throw new Error("expected a DescriptorError");
}

describe("parseDescriptorFile", () => {
  test("file-raw with an unquoted 0x key keeps every digit (read as a string)", () => {
    expect(parseDescriptorFile(`type: file-raw\nprivateKey: ${KEY}\n`, "/k/a.yaml")).toEqual([
      { ok: true, descriptor: { type: "file-raw", privateKey: new Uint8Array(32).fill(0x11) } },
    ]);
  });

  test("file-keystore paths resolve against the descriptor's directory; absolute ones stay", () => {
    const text =
      "type: file-keystore\nkeyType: BLS\nkeystoreFile: ks/k.json\nkeystorePasswordFile: /secrets/k.pw\n";
    expect(parseDescriptorFile(text, "/keys/d.yaml")).toEqual([
      {
        ok: true,
        descriptor: {
          type: "file-keystore",
          keystoreFile: "/keys/ks/k.json",
          keystorePasswordFile: "/secrets/k.pw",
        },
      },
    ]);
  });

  test("several documents, empty ones ignored, each judged on its own", () => {
    const text = `---\ntype: file-raw\nprivateKey: ${KEY}\n---\n---\ntype: aws-secret\n...\n`;
    const docs = parseDescriptorFile(text, "/k/m.yaml");
    expect(docs).toHaveLength(2);
    expect(docs[0]?.ok).toBe(true);
    expect(docs[1]).toEqual({ ok: false, reason: 'unsupported descriptor type "aws-secret"' });
  });

  test("unknown types name the supported ones; unknown fields are ignored", () => {
    expect(parseDescriptorFile("type: magic\n", "/k/x.yaml")).toEqual([
      {
        ok: false,
        reason: 'unsupported descriptor type "magic" (expected file-raw or file-keystore)',
      },
    ]);
    const docs = parseDescriptorFile(
      `type: file-raw\ndescription: hi\nprivateKey: ${KEY}\n`,
      "/k/x.yaml",
    );
    expect(docs[0]?.ok).toBe(true);
  });

  test("a YAML error anywhere refuses the file, without quoting the source", () => {
    const reason = reasonOf(() =>
      parseDescriptorFile(`type: file-raw\nprivateKey: ${KEY}\nprivateKey: ${KEY}\n`, "/k/d.yaml"),
    );
    expect(reason).toBe("malformed YAML at line 3, column 1 (DUPLICATE_KEY)");
    expect(reasonOf(() => parseDescriptorFile("", "/k/e.yaml"))).toBe("descriptor file is empty");
    expect(reasonOf(() => parseDescriptorFile("---\n...\n", "/k/e.yaml"))).toBe(
      "descriptor file is empty",
    );
  });
});

describe("stripFinalLineEnding", () => {
  test.each([
    ["pw", "pw"],
    ["pw\n", "pw"],
    ["pw\r\n", "pw"],
    ["pw\n\n", "pw\n"],
    [" p w \n", " p w "],
    ["pw\r", "pw\r"],
    ["", ""],
  ])("%j -> %j", (input, expected) => {
    expect(stripFinalLineEnding(input)).toBe(expected);
  });
});
