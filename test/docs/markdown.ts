// Reads the fenced code blocks of a Markdown document and the doc-test directives attached to
// them. Pure: text in, blocks and problems out. The rules the docs follow are in harness.ts.

export type Directive =
  | { kind: "skip"; reason: string }
  | { kind: "serve"; config: string }
  | { kind: "background" }
  | { kind: "stop" }
  | { kind: "expect-exit"; code: number }
  | { kind: "expect-output"; text: string };

export interface CodeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** First word of the info string; "" when the fence has none. */
  tag: string;
  text: string;
  directives: Directive[];
}

export interface ParsedDocument {
  blocks: CodeBlock[];
  /** Each a sentence naming its line: a malformed directive, an untagged fence, … */
  problems: string[];
}

/** Tags that mean "shell" in other people's Markdown; ours is `sh`, output is `text`. */
const SHELL_SYNONYMS = new Set([
  "bash",
  "shell",
  "console",
  "zsh",
  "shell-session",
  "shellsession",
]);

const DIRECTIVE_LINE = /^\s*<!--\s*doc-test:(.*?)-->\s*$/;
const FENCE_OPEN = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/;

export function parseMarkdown(markdown: string): ParsedDocument {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  const problems: string[] = [];
  const attached = new Set<number>();

  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i] ?? "");
    if (!open) continue;
    const indent = open[1]?.length ?? 0;
    const fence = open[2] ?? "```";
    const tag = (open[3] ?? "").toLowerCase();
    const body: string[] = [];
    let end = i + 1;
    for (; end < lines.length; end++) {
      const line = lines[end] ?? "";
      if (isClosingFence(line, fence)) break;
      body.push(stripIndent(line, indent));
    }
    if (end >= lines.length) problems.push(`line ${i + 1}: code fence is never closed`);

    const directiveLines = directiveLinesBefore(lines, i);
    const directives: Directive[] = [];
    for (const index of directiveLines) {
      attached.add(index);
      const parsed = parseDirective(DIRECTIVE_LINE.exec(lines[index] ?? "")?.[1] ?? "");
      if (typeof parsed === "string") problems.push(`line ${index + 1}: ${parsed}`);
      else directives.push(parsed);
    }
    if (tag === "") {
      problems.push(
        `line ${i + 1}: code fence without a tag: use sh for commands, text for output, yaml, json, ini, …`,
      );
    } else if (SHELL_SYNONYMS.has(tag)) {
      problems.push(`line ${i + 1}: tag "${tag}": commands are tagged sh, their output text`);
    } else if (tag !== "sh" && directiveLines.length > 0) {
      problems.push(`line ${i + 1}: doc-test directives apply to sh blocks only, not ${tag}`);
    }
    problems.push(...conflicts(directives, i + 1));
    blocks.push({ line: i + 1, tag, text: body.join("\n"), directives });
    i = end;
  }

  lines.forEach((line, index) => {
    if (DIRECTIVE_LINE.test(line) && !attached.has(index)) {
      problems.push(`line ${index + 1}: doc-test directive not followed by a code block`);
    }
  });
  problems.push(...indentedCodeBlocks(lines, blocks));
  return { blocks, problems };
}

function isClosingFence(line: string, fence: string): boolean {
  const trimmed = line.trim();
  return (
    trimmed.length >= fence.length &&
    trimmed[0] === fence[0] &&
    /^(`+|~+)$/.test(trimmed) &&
    trimmed.startsWith(fence)
  );
}

function stripIndent(line: string, indent: number): string {
  let cut = 0;
  while (cut < indent && line[cut] === " ") cut++;
  return line.slice(cut);
}

/** Directive comments above a fence, nearest last; blank lines may separate them. */
function directiveLinesBefore(lines: readonly string[], fenceIndex: number): number[] {
  const found: number[] = [];
  for (let j = fenceIndex - 1; j >= 0; j--) {
    const line = lines[j] ?? "";
    if (line.trim() === "") continue;
    if (!DIRECTIVE_LINE.test(line)) break;
    found.unshift(j);
  }
  return found;
}

export function parseDirective(raw: string): Directive | string {
  const text = raw.trim();
  const [word = "", ...restWords] = text.split(/\s+/);
  const rest = text.slice(word.length).trim();
  switch (word) {
    case "skip": {
      const reason = rest.replace(/^[—–:-]+\s*/, "").trim();
      return reason.length >= 10
        ? { kind: "skip", reason }
        : `"skip" needs a reason: <!-- doc-test: skip — why this block cannot run in a test -->`;
    }
    case "serve":
      return restWords.length === 1 && rest !== ""
        ? { kind: "serve", config: rest }
        : `"serve" takes one configuration file, e.g. serve examples/dev.yaml`;
    case "background":
    case "stop":
      return rest === "" ? { kind: word } : `"${word}" takes no argument`;
    case "expect-exit": {
      const code = Number(rest);
      return /^\d{1,3}$/.test(rest) && code <= 255
        ? { kind: "expect-exit", code }
        : `"expect-exit" takes an exit status from 0 to 255`;
    }
    case "expect-output":
      return rest !== "" ? { kind: "expect-output", text: rest } : `"expect-output" needs text`;
    default:
      return `unknown doc-test directive "${word}" (skip, serve, background, stop, expect-exit, expect-output)`;
  }
}

function conflicts(directives: readonly Directive[], line: number): string[] {
  const kinds = directives.map((d) => d.kind);
  const problems: string[] = [];
  if (kinds.includes("skip") && kinds.length > 1)
    problems.push(`line ${line}: a skipped block takes no other directive`);
  if (kinds.includes("background") && kinds.some((k) => k === "expect-exit" || k === "serve"))
    problems.push(`line ${line}: a background block cannot also expect an exit status or serve`);
  if (kinds.filter((k) => k === "expect-exit").length > 1)
    problems.push(`line ${line}: more than one expect-exit`);
  return problems;
}

/**
 * Commands hidden in an indented code block would escape the doc tests. A line indented by four
 * spaces after a blank line starts one, unless it continues a list item (CommonMark: the item's
 * content is indented, so its paragraphs and nested blocks are too).
 */
function indentedCodeBlocks(lines: readonly string[], blocks: readonly CodeBlock[]): string[] {
  const inFence = new Set<number>();
  for (const block of blocks) {
    const start = block.line - 1;
    const length = block.text.split("\n").length;
    for (let k = start; k <= start + length + 1; k++) inFence.add(k);
  }
  const problems: string[] = [];
  let inList = false;
  let previousBlank = true;
  lines.forEach((line, index) => {
    if (inFence.has(index)) {
      previousBlank = false;
      return;
    }
    if (line.trim() === "") {
      previousBlank = true;
      return;
    }
    const indent = line.length - line.trimStart().length;
    if (indent === 0) inList = /^([-*+]|\d+[.)])\s/.test(line);
    if (indent >= 4 && previousBlank && !inList) {
      problems.push(
        `line ${index + 1}: indented code block: fence it and tag it (sh for commands, text otherwise)`,
      );
    }
    previousBlank = false;
  });
  return problems;
}
