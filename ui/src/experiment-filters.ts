// The experiment list's range filters, as its filter boxes show them and as the URL and the
// API hold them (`range=COLUMN:LOW..HIGH`, either end empty): progress is a fraction there and
// a percentage in its box; a duration is seconds there and `90s`, `10m`, `1h 30m` or `2d` in
// its box; ids, best metrics and start dates (ISO 8601) are the same in both.

import { parseRanges, typedBounds, withRange } from "./trial-filters";

export type ExperimentRangeColumn = "id" | "progress" | "best_validation" | "duration" | "created_at";

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** The seconds of a duration as typed (`90`, `90s`, `10m`, `1h 30m`, `2d 4h`); null if not one. */
export function parseDurationText(text: string): number | null {
  const trimmed = text.trim();
  if (!trimmed) return null;
  let seconds = 0;
  let read = 0;
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)\s*([smhd]?)\s*/gy)) {
    seconds += Number(match[1]) * (UNIT_SECONDS[match[2] || "s"] ?? 1);
    read += match[0].length;
  }
  return read === trimmed.length ? seconds : null;
}

/** `seconds` as a duration box shows it: `1h 30m`, `45s`, `2d`. */
export function durationText(seconds: number): string {
  const parts: string[] = [];
  let rest = Math.round(seconds);
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3600],
    ["m", 60],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest > 0 || parts.length === 0) parts.push(`${rest}s`);
  return parts.join(" ");
}

/** One bound as the API takes it, from its box's text (left as typed when it cannot be read,
 * so that the API's answer says what is wrong with it). */
function toApi(column: ExperimentRangeColumn, text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return "";
  if (column === "progress") {
    const percent = Number(trimmed.replace(/%$/, ""));
    return Number.isFinite(percent) ? String(percent / 100) : trimmed;
  }
  if (column === "duration") {
    const seconds = parseDurationText(trimmed);
    return seconds === null ? trimmed : String(seconds);
  }
  return trimmed;
}

/** One bound as its box shows it, from the API's form. */
function fromApi(column: ExperimentRangeColumn, text: string): string {
  const value = Number(text);
  if (!text || !Number.isFinite(value)) return text;
  if (column === "progress") return `${Number((value * 100).toPrecision(6))}%`;
  if (column === "duration") return durationText(value);
  return text;
}

/** What `column`'s filter box shows for `ranges` (the URL's): `low..high`, or empty. */
export function experimentRangeText(ranges: readonly string[], column: ExperimentRangeColumn): string {
  const bounds = parseRanges(ranges, "first").get(column);
  return bounds ? `${fromApi(column, bounds.low)}..${fromApi(column, bounds.high)}` : "";
}

/** `ranges` with `column`'s bounds set from its box's `text` (`low..high`; one value: exactly
 * it; empty: no filter on the column). */
export function withExperimentRange(ranges: readonly string[], column: ExperimentRangeColumn, text: string): string[] {
  const typed = typedBounds(text);
  return withRange(ranges, column, { low: toApi(column, typed.low), high: toApi(column, typed.high) }, "first");
}
