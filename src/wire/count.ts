/** `1 validator`, `2 validators`: a count and its noun, in the plural unless it is one. */
export function counted(count: number | bigint, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 || count === 1n ? noun : plural}`;
}
