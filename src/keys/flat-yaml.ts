/**
 * A strict reader for the one YAML shape nearly every Web3Signer descriptor has:
 *
 *   # a comment
 *   type: file-raw
 *   keyType: BLS
 *   privateKey: 0x…            (or "0x…" or '0x…', with an optional trailing # comment)
 *
 * At 10,000 raw keys the YAML parser was a fifth of the start-up CPU; this reads the same files
 * about thirty times faster. It is only a shortcut: it accepts a text only when every line is
 * blank, a comment starting in column 0, or `name: value` starting in column 0, where the value
 * is a plain scalar of a few safe characters or a quoted string without escapes or quotes. For
 * ANYTHING else (other characters, tabs, a BOM, indentation, `---`, flow style, anchors, tags,
 * escapes, empty values, duplicate names, no names at all…) it answers undefined and the caller
 * uses the YAML parser. On every text it accepts, it gives what the YAML parser (failsafe schema)
 * gives: one document, a mapping of strings (flat-yaml.test.ts checks this on generated texts).
 */

/** Printable ASCII and line breaks only; `\r` only as part of `\r\n` (checked line by line). */
const SIMPLE_CHARACTERS = /^[\n\r -~]*$/;

/**
 * `name: value [# comment]`. Names are short (YAML refuses implicit keys over 1,024 characters)
 * and start with a letter. Values: "…" without `"` or `\`; '…' without `'`; or a plain scalar
 * that cannot start with a YAML indicator and holds no space, `:` or `#`.
 */
const ENTRY =
  /^([A-Za-z][A-Za-z0-9_-]{0,63}): +(?:"([ !#-[\]-~]*)"|'([ -&(-~]*)'|([A-Za-z0-9_./][A-Za-z0-9_./-]*))(?: +#[ -~]*)? *$/;
const LINE_BREAK = /\r?\n/;
const COMMENT = /^#[ -~]*$/;
const BLANK = /^ *$/;

/** The document's name → value mapping, or undefined when the text is not of the simple shape. */
export function parseFlatYaml(text: string): Record<string, string> | undefined {
  if (!SIMPLE_CHARACTERS.test(text)) return undefined;
  const mapping: Record<string, string> = {};
  const seen = new Set<string>();
  for (const line of text.split(LINE_BREAK)) {
    const entry = ENTRY.exec(line);
    if (entry === null) {
      // Also refuses a `\r` not followed by `\n`, left inside a line (YAML is inconsistent there).
      if (BLANK.test(line) || COMMENT.test(line)) continue;
      return undefined;
    }
    const [, name = "", doubleQuoted, singleQuoted, plain] = entry;
    const value = doubleQuoted ?? singleQuoted ?? plain ?? "";
    // Empty values and repeated names: what YAML makes of them is left to YAML.
    if (value === "" || seen.has(name)) return undefined;
    seen.add(name);
    mapping[name] = value;
  }
  return seen.size > 0 ? mapping : undefined;
}
