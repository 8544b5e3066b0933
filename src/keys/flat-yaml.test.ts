import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseAllDocuments } from "yaml";
import { parseFlatYaml } from "./flat-yaml";

/**
 * The reference: what the YAML parser makes of the text, as descriptor.ts reads it (failsafe
 * schema, empty documents dropped), or "error".
 */
function viaYaml(text: string): unknown[] | "error" {
  const parsed = parseAllDocuments(text, { schema: "failsafe" });
  const docs = Array.isArray(parsed) ? parsed : [parsed];
  if (docs.some((doc) => doc.errors.length > 0)) return "error";
  return docs
    .map((doc) => doc.toJS({ maxAliasCount: 100 }) as unknown)
    .filter((value) => value !== "" && value !== null && value !== undefined);
}

/** Whenever the shortcut accepts a text, YAML reads exactly that one mapping from it. */
function agreesWithYaml(text: string): boolean {
  const flat = parseFlatYaml(text);
  if (flat !== undefined) expect({ text, result: viaYaml(text) }).toEqual({ text, result: [flat] });
  return flat !== undefined;
}

const KEY = `0x${"ab".repeat(16)}${"0F".repeat(16)}`;
const hexKey = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map((bytes) => `0x${Buffer.from(bytes).toString("hex")}`);
const fieldName = fc.constantFrom(
  "type",
  "keyType",
  "privateKey",
  "keystoreFile",
  "keystorePasswordFile",
  "description",
);
const safePlain = fc.stringMatching(/^[A-Za-z0-9_./][A-Za-z0-9_./-]{0,20}$/);
const lineEnding = fc.constantFrom("\n", "\r\n");

describe("parseFlatYaml", () => {
  test.each([
    ["unquoted 0x key stays a string", `type: file-raw\nprivateKey: ${KEY}\n`],
    ["comment after a value", `type: file-raw # comment\nprivateKey: "${KEY}" # the key\n`],
    ["CRLF line endings", `type: file-raw\r\nkeyType: BLS\r\nprivateKey: ${KEY}\r\n`],
    ["any order, extra fields", `keyType: BLS\nprivateKey: '${KEY}'\nnote: x\ntype: file-raw`],
    ["comments and blank lines", `# key 7\n\ntype: file-raw\n   \n#\nprivateKey: ${KEY}\n\n`],
    [
      "relative paths",
      "type: file-keystore\nkeystoreFile: ks/a.json\nkeystorePasswordFile: ./a.pw\n",
    ],
    [
      "quoted text with spaces and #",
      `type: "file-raw"\ndescription: 'a # b: c'\nprivateKey: ${KEY}`,
    ],
  ])("reads the common shape: %s", (_, text) => {
    expect(agreesWithYaml(text)).toBe(true);
  });

  test.each([
    ["a BOM", `\ufefftype: file-raw\n`],
    ["several documents", `type: file-raw\n---\ntype: file-raw\n`],
    ["a document start", `---\ntype: file-raw\n`],
    ["a document end", `type: file-raw\n...\n`],
    ["a tab", "type:\tfile-raw\n"],
    ["an indented line (a continued plain scalar)", "description: a\n  b\ntype: file-raw\n"],
    ["a duplicate name", `privateKey: ${KEY}\nprivateKey: ${KEY}\n`],
    ["an empty value", "type:\nprivateKey: x\n"],
    ["flow style", "{type: file-raw}\n"],
    ["a flow value", "type: [file-raw]\n"],
    ["an anchor and an alias", "type: &t file-raw\nkeyType: *t\n"],
    ["a tag", "type: !!str file-raw\n"],
    ["an escape", 'type: "file\\x2draw"\n'],
    ["a doubled single quote", "type: 'it''s'\n"],
    ["a lone carriage return", "type: file-raw\rkeyType: BLS\n"],
    ["a plain value with a space", "description: two words\n"],
    ["a value starting with an indicator", "type: -x\n"],
    ["non-ASCII", "description: café\n"],
    ["a sequence", "- type: file-raw\n"],
    ["only comments", "# nothing\n\n"],
    ["nothing", ""],
    ["a scalar document", "file-raw\n"],
    ["a name over 64 characters", `${"k".repeat(65)}: x\n`],
  ])("leaves the rest to YAML: %s", (_, text) => {
    expect(parseFlatYaml(text)).toBeUndefined();
  });

  test("descriptors of the common shape are always read, and read as YAML reads them", () => {
    const descriptor = fc
      .record({
        fields: fc.uniqueArray(fc.tuple(fieldName, fc.oneof(safePlain, hexKey)), {
          minLength: 1,
          maxLength: 6,
          selector: ([name]) => name,
        }),
        quote: fc.array(fc.constantFrom("", '"', "'"), { minLength: 6, maxLength: 6 }),
        comment: fc.array(fc.constantFrom("", " # note", "   #", " #: - [x] 'y\""), {
          minLength: 6,
          maxLength: 6,
        }),
        spaces: fc.array(fc.constantFrom(" ", "  "), { minLength: 6, maxLength: 6 }),
        extraLines: fc.array(fc.constantFrom("", "# comment", "  ", "#"), { maxLength: 3 }),
        ending: lineEnding,
        finalEnding: fc.boolean(),
      })
      .map(({ fields, quote, comment, spaces, extraLines, ending, finalEnding }) => {
        const lines = fields.map(
          ([name, value], i) => `${name}:${spaces[i]}${quote[i]}${value}${quote[i]}${comment[i]}`,
        );
        lines.splice(1, 0, ...extraLines);
        return lines.join(ending) + (finalEnding ? ending : "");
      });
    fc.assert(
      fc.property(descriptor, (text) => agreesWithYaml(text)),
      { numRuns: 2_000 },
    );
  });

  test("on any text built from YAML's tricky pieces, a text read is read as YAML reads it", () => {
    /** Mostly the common piece, sometimes a tricky one, so that both paths are taken often. */
    const mostly = <T>(common: fc.Arbitrary<T>, tricky: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 5, arbitrary: common }, { weight: 1, arbitrary: tricky });
    const name = mostly(
      fieldName,
      fc.constantFrom("_x", "9k", "a b", "a:b", "-k", "? k", '"type"', "k ", "<<"),
    );
    const valueChar = fc.constantFrom(..."aZ09_./-:#'\"\\ \t{}[]&*!|>%@`,?~=+\u00e9\ufeff\r");
    const value = mostly(
      fc.oneof(
        safePlain,
        hexKey,
        hexKey.map((k) => `"${k}"`),
        hexKey.map((k) => `'${k}'`),
      ),
      fc.oneof(
        fc.string({ unit: valueChar, maxLength: 12 }),
        fc.string({ unit: valueChar, maxLength: 8 }).map((s) => `"${s}"`),
        fc.string({ unit: valueChar, maxLength: 8 }).map((s) => `'${s}'`),
      ),
    );
    const separator = mostly(fc.constant(": "), fc.constantFrom(":  ", ":", " : ", ":\t"));
    const suffix = mostly(
      fc.constantFrom("", " # c"),
      fc.constantFrom(" ", "# c", "\t# c", " #", "'", '"'),
    );
    const otherLine = fc.constantFrom(
      ...["", "  ", "\t", "# c", " # c", "---", "...", "--- # c", "  continued", "- item"],
      ...["{a: b}", "&a x", "*a", "%YAML 1.2"],
    );
    const line = mostly(
      fc.tuple(name, separator, value, suffix).map((parts) => parts.join("")),
      otherLine,
    );
    const ending = mostly(lineEnding, fc.constantFrom("\r", ""));
    const text = fc
      .tuple(
        mostly(fc.constant(""), fc.constant("\ufeff")),
        fc.array(fc.tuple(line, ending), { minLength: 1, maxLength: 5 }),
      )
      .map(([bom, lines]) => bom + lines.map(([l, end]) => l + end).join(""));
    let accepted = 0;
    let runs = 0;
    fc.assert(
      fc.property(text, (t) => {
        runs++;
        if (agreesWithYaml(t)) accepted++;
      }),
      { numRuns: 5_000 },
    );
    // Neither path is a vacuous pass: the generator reaches both often.
    expect(accepted).toBeGreaterThan(runs / 10);
    expect(accepted).toBeLessThan(runs * 0.9);
  });
});
