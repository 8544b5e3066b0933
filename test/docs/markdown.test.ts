import { describe, expect, test } from "bun:test";
import { rewritePorts } from "./harness";
import { parseDirective, parseMarkdown } from "./markdown";

const fence = "```";

describe("parseMarkdown", () => {
  test("reads fenced blocks with their tag, line, text and directives", () => {
    const doc = [
      "# Title",
      "",
      "<!-- doc-test: serve examples/dev.yaml -->",
      "<!-- doc-test: expect-output OK -->",
      `${fence}sh`,
      "curl http://127.0.0.1:9000/upcheck",
      fence,
      "",
      "1. A step:",
      "",
      `   ${fence}text`,
      "   indented output",
      `   ${fence}`,
    ].join("\n");
    const { blocks, problems } = parseMarkdown(doc);
    expect(problems).toEqual([]);
    expect(blocks).toEqual([
      {
        line: 5,
        tag: "sh",
        text: "curl http://127.0.0.1:9000/upcheck",
        directives: [
          { kind: "serve", config: "examples/dev.yaml" },
          { kind: "expect-output", text: "OK" },
        ],
      },
      { line: 11, tag: "text", text: "indented output", directives: [] },
    ]);
  });

  test("reports what would let a command escape the doc tests", () => {
    const doc = [
      fence,
      "untagged",
      fence,
      `${fence}bash`,
      "echo hi",
      fence,
      "<!-- doc-test: skip — this directive is attached to a yaml block -->",
      `${fence}yaml`,
      "a: 1",
      fence,
      "",
      "Text.",
      "",
      "    sigil serve -c indented.yaml",
      "",
      "<!-- doc-test: stop -->",
      "",
      "Not a block.",
      `${fence}sh`,
      "never closed",
    ].join("\n");
    const { problems } = parseMarkdown(doc);
    expect(problems).toEqual([
      expect.stringContaining("line 1: code fence without a tag"),
      expect.stringContaining('line 4: tag "bash"'),
      expect.stringContaining("line 8: doc-test directives apply to sh blocks only"),
      expect.stringContaining("line 19: code fence is never closed"),
      expect.stringContaining("line 16: doc-test directive not followed by a code block"),
      expect.stringContaining("line 14: indented code block"),
    ]);
  });

  test("does not take a list item's indented paragraph for code", () => {
    const doc = ["- item", "", "    continued paragraph of the item", ""].join("\n");
    expect(parseMarkdown(doc).problems).toEqual([]);
  });

  test("refuses contradictory directives", () => {
    const doc = [
      "<!-- doc-test: skip — cannot run anywhere at all -->",
      "<!-- doc-test: expect-exit 2 -->",
      `${fence}sh`,
      "false",
      fence,
    ].join("\n");
    expect(parseMarkdown(doc).problems).toEqual([
      expect.stringContaining("a skipped block takes no other directive"),
    ]);
  });
});

describe("parseDirective", () => {
  test("a skip needs a reason", () => {
    expect(parseDirective("skip")).toBeString();
    expect(parseDirective("skip —")).toBeString();
    expect(parseDirective("skip — needs root on the host")).toEqual({
      kind: "skip",
      reason: "needs root on the host",
    });
  });

  test("reads exit statuses and refuses anything else", () => {
    expect(parseDirective("expect-exit 2")).toEqual({ kind: "expect-exit", code: 2 });
    expect(parseDirective("expect-exit two")).toBeString();
    expect(parseDirective("expect-exit 300")).toBeString();
    expect(parseDirective("serve")).toBeString();
    expect(parseDirective("background now")).toBeString();
    expect(parseDirective("sleep 5")).toBeString();
  });
});

test("rewritePorts moves the documented ports to the signer's, and nothing else", () => {
  const script = [
    "curl http://127.0.0.1:9000/upcheck http://localhost:9000/x",
    "curl http://127.0.0.1:3000/metrics",
    "curl http://10.0.0.1:9000/ http://127.0.0.1:90001/",
  ].join("\n");
  expect(rewritePorts(script, "41234", "41235")).toBe(
    [
      "curl http://127.0.0.1:41234/upcheck http://localhost:41234/x",
      "curl http://127.0.0.1:41235/metrics",
      "curl http://10.0.0.1:9000/ http://127.0.0.1:90001/",
    ].join("\n"),
  );
});
