/**
 * Duplicate object keys in a JSON text. `JSON.parse` keeps the last of two equal keys, so
 * `{"attestation": A, "attestation": B}` would sign B while a log or a proxy that keeps the first
 * saw A: a request must mean one thing, and such a body is refused (RFC 8259 §4: names "SHOULD be
 * unique"). The check runs on every body, signing included, so it is done in two steps: the
 * text's keys are counted with native string search and compared with the keys the parse kept;
 * only when they differ is the text walked to name the duplicate.
 */

/** The first duplicate key of an already-parsed text, with where it stands, or undefined. */
export function duplicateKey(text: string, parsed: unknown): string | undefined {
  if (countTextKeys(text) === countParsedKeys(parsed)) return undefined;
  return findDuplicate(text);
}

const SPACE_BEFORE_COLON = /"[ \t\r\n]+:/;

/**
 * Each key of a valid JSON text ends in an unescaped `"` followed by `:` (a string value never
 * is). A `"` preceded by an odd run of backslashes is inside a string.
 */
function countTextKeys(text: string): number {
  if (SPACE_BEFORE_COLON.test(text)) return Number.NaN; // rare: counted exactly by the walk
  let count = 0;
  for (let at = text.indexOf('":'); at >= 0; at = text.indexOf('":', at + 2)) {
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) count++;
  }
  return count;
}

/** Iterative: a body may nest a million levels deep, more than the call stack holds. */
function countParsedKeys(value: unknown): number {
  let count = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next !== "object" || next === null) continue;
    if (Array.isArray(next)) {
      for (const item of next) if (typeof item === "object" && item !== null) pending.push(item);
      continue;
    }
    for (const key in next) {
      count++;
      const item = (next as Record<string, unknown>)[key];
      if (typeof item === "object" && item !== null) pending.push(item);
    }
  }
  return count;
}

/** Walks the text (known to be valid JSON) with a set of keys per open object. */
function findDuplicate(text: string): string | undefined {
  const open: { keys: Set<string> | undefined; path: string }[] = [];
  let i = 0;
  let pendingKey: string | undefined;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      const top = open[open.length - 1];
      let j = end;
      while (j < text.length && " \t\r\n".includes(text[j] as string)) j++;
      if (top?.keys && text[j] === ":") {
        const key = JSON.parse(text.slice(i, end)) as string;
        const where = top.path === "" ? key : `${top.path}.${key}`;
        if (top.keys.has(key)) return where;
        top.keys.add(key);
        pendingKey = where;
      }
      i = end;
      continue;
    }
    if (c === "{" || c === "[") {
      const parent = open[open.length - 1];
      const path = pendingKey ?? (parent ? `${parent.path}[]` : "");
      open.push({ keys: c === "{" ? new Set() : undefined, path });
      pendingKey = undefined;
    } else if (c === "}" || c === "]") {
      open.pop();
    } else if (c === ",") {
      pendingKey = undefined;
    }
    i++;
  }
  return undefined;
}

/** The index just past the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  return i;
}
