/**
 * "Did you mean": the known name closest to a mistyped one (an option in a YAML file, a flag, a
 * command), or none when nothing is close enough to be a likely typo.
 */
export function closestName(word: string, known: Iterable<string>): string | undefined {
  const names = [...known];
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(word, name);
    if (distance <= allowedDistance(word) && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  if (best) return best.name;
  // A shortened name: `--listen-port` for `--server-listen-port`. The shortest such name first.
  if (word.length < 4) return undefined;
  const containing = names.filter((name) => name.includes(word));
  return containing.sort((a, b) => a.length - b.length)[0];
}

/** Two edits for most words, one for short ones (so "ab" does not suggest "cd"). */
function allowedDistance(word: string): number {
  return word.length <= 3 ? 1 : 2;
}

/** Levenshtein distance with adjacent transpositions counting as one edit ("prot" → "port"). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1] ?? [];
      let value = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      row.push(value);
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] ?? 0;
}
