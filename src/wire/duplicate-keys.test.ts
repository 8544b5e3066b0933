import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { duplicateKey } from "./duplicate-keys";

const check = (text: string) => duplicateKey(text, JSON.parse(text));

describe("duplicate keys in a JSON text", () => {
  test.each([
    ['{"a":1,"a":2}', "a"],
    ['{"a":{"b":1,"c":{"d":0},"b":2}}', "a.b"],
    ['{"x":[{"k":1},{"k":2,"k":3}]}', "x[].k"],
    ['{ "a" : 1 , "a" : 2 }', "a"],
    ['{"\\u0061":1,"a":2}', "a"],
    ['{"__proto__":1,"__proto__":2}', "__proto__"],
  ])("%s has %p twice", (text, key) => {
    expect(check(text)).toBe(key);
  });

  test.each([
    '{"a":1,"b":{"a":2}}',
    '[{"a":1},{"a":2}]',
    '{"s":"\\":\\"a\\":","a":1}',
    '{"s":"\\\\","a":"\\\\\\":"}',
    '"a"',
    "[]",
    '{"a" :1,"b":{"a" :2}}',
  ])("%s has none", (text) => {
    expect(check(text)).toBeUndefined();
  });

  test("agrees with a parse that keeps every key, on generated JSON", () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), fc.boolean(), (text, spaced) => {
        const spelled = spaced ? text.replaceAll('":', '" :') : text;
        expect(check(spelled)).toBeUndefined();
        // The same text with its first key repeated in its object.
        const match = /\{"((?:[^"\\]|\\.)*)":/.exec(spelled);
        if (!match) return;
        const at = match.index + 1;
        const doubled = `${spelled.slice(0, at)}"${match[1]}":0,${spelled.slice(at)}`;
        expect(check(doubled)).toBeDefined();
      }),
      { numRuns: 500 },
    );
  });
});
