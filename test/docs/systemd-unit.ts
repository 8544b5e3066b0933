// A reader for systemd unit files, enough to check examples/systemd/sigil.service where
// systemd-analyze is not installed (.ci/run installs it where it can).

export type UnitFile = Map<string, [key: string, value: string][]>;

/** Sections in order, each with its assignments in order; comments and blank lines dropped. */
export function parseUnit(text: string): UnitFile {
  const unit: UnitFile = new Map();
  let section: [string, string][] | undefined;
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = pending + raw.trim();
    pending = "";
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.endsWith("\\")) {
      pending = `${line.slice(0, -1).trimEnd()} `;
      continue;
    }
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header?.[1]) {
      section = unit.get(header[1]) ?? [];
      unit.set(header[1], section);
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 1 || !section) throw new Error(`not a unit file line: ${line}`);
    section.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()]);
  }
  return unit;
}

/** The effective value of a key: the last assignment wins. */
export function unitValue(unit: UnitFile, section: string, key: string): string | undefined {
  const assignments = unit.get(section)?.filter(([k]) => k === key) ?? [];
  return assignments.at(-1)?.[1];
}

/** systemd's boolean spellings. */
export function unitBoolean(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (["1", "yes", "y", "true", "t", "on"].includes(value.toLowerCase())) return true;
  if (["0", "no", "n", "false", "f", "off"].includes(value.toLowerCase())) return false;
  throw new Error(`not a systemd boolean: ${value}`);
}

const SPAN_UNITS: Record<string, number> = {
  "": 1,
  s: 1,
  sec: 1,
  second: 1,
  seconds: 1,
  m: 60,
  min: 60,
  minute: 60,
  minutes: 60,
  h: 3600,
  hr: 3600,
  hour: 3600,
  hours: 3600,
  ms: 0.001,
  msec: 0.001,
};

/** A systemd time span ("45", "45s", "1min 30s") in seconds. */
export function timeSpanSeconds(value: string): number {
  const parts = value.trim().match(/(\d+(?:\.\d+)?)\s*([a-z]*)/g);
  if (!parts) throw new Error(`not a time span: ${value}`);
  let seconds = 0;
  for (const part of parts) {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(part);
    const factor = SPAN_UNITS[match?.[2] ?? "?"];
    if (!match || factor === undefined) throw new Error(`not a time span: ${value}`);
    seconds += Number(match[1]) * factor;
  }
  return seconds;
}
