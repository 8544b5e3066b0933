import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { checkShape, describeProblem, joinPath, quoted } from "./check";

const Shape = Type.Object(
  {
    effect: Type.Union([Type.Literal("allow"), Type.Literal("deny")], {
      expected: '"allow" or "deny"',
    }),
    names: Type.Optional(
      Type.Array(Type.String({ pattern: "^[a-z]+$", problem: "bad name {value}" })),
    ),
    count: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false, problem: "request body must be a JSON object" },
);

const problemOf = (value: unknown) => {
  const checked = checkShape(Shape, value);
  return checked.ok ? "accepted" : describeProblem(checked);
};

describe("checkShape words a problem from the schema's annotations", () => {
  test("a valid value comes back as it is", () => {
    const value = { effect: "allow", names: ["a"] };
    expect(checkShape(Shape, value) as unknown).toEqual({ ok: true, value });
  });

  test("`expected` reads must be …; a missing property is required, with what it must be", () => {
    expect(problemOf({ effect: "maybe" })).toBe('effect: must be "allow" or "deny"');
    expect(problemOf({})).toBe('effect: is required ("allow" or "deny")');
  });

  test("`problem` is the whole wording, with the value quoted in place of {value}", () => {
    expect(problemOf(null)).toBe("request body must be a JSON object");
    expect(problemOf({ effect: "deny", names: ["ok", "NO"] })).toBe('names[1]: bad name "NO"');
    expect(problemOf({ effect: "deny", names: [7] })).toBe("names[0]: bad name 7");
  });

  test("an unknown field is named with the fields there are", () => {
    expect(problemOf({ effect: "allow", colour: "red" })).toBe(
      "colour: unknown field (fields: effect, names, count)",
    );
  });

  test("a node without annotations gets TypeBox's words, in lower case", () => {
    expect(problemOf({ effect: "allow", count: 0 })).toBe(
      "count: expected integer to be greater or equal to 1",
    );
  });
});

describe("hostile values", () => {
  test("a value nested a hundred thousand deep is refused, not a stack overflow", () => {
    const deep = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`);
    expect(problemOf(deep)).toBe("request body must be a JSON object");
    expect(problemOf({ effect: "allow", names: [deep] })).toBe("names[0]: bad name a list");
    expect(problemOf({ effect: deep })).toBe('effect: must be "allow" or "deny"');
  });
});

describe("helpers", () => {
  test("a long value is cut short; a string is quoted, a list or an object only named", () => {
    expect(quoted("x".repeat(1 << 20))).toBe(JSON.stringify(`${"x".repeat(61)}...`));
    expect(quoted(12)).toBe("12");
    expect(quoted({ a: [1] })).toBe("an object");
    expect(quoted([[1]])).toBe("a list");
    expect(quoted(null)).toBe("null");
  });

  test("joinPath puts an inner path under an outer one", () => {
    expect(joinPath("rules[0]", "effect")).toBe("rules[0].effect");
    expect(joinPath("rules", "[0].effect")).toBe("rules[0].effect");
    expect(joinPath("rules[0]", "")).toBe("rules[0]");
    expect(joinPath("", "effect")).toBe("effect");
  });
});
