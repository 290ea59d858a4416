// How numbers, sizes, durations and times read on every page.

const EM_DASH = "—";

/** `value` rounded to an integer, its digits grouped by thousands: 1,235. Written out, not
 * `Intl.NumberFormat`: making one costs a page load ~6 ms of its main thread (ICU's locale
 * data), on every page, for what this does. */
function groupedInteger(value: number): string {
  if (!Number.isFinite(value)) return value > 0 ? "∞" : Number.isNaN(value) ? "NaN" : "-∞";
  const rounded = Math.sign(value) * Math.round(Math.abs(value)); // halves away from zero
  const magnitude = Math.abs(rounded);
  let digits = String(magnitude);
  if (magnitude >= 1e21) {
    // String() writes these as 1e+21: the shortest digits, then zeros (as Intl does).
    const [mantissa = "", exponent = "0"] = magnitude.toExponential().split("e+");
    const shortest = mantissa.replace(".", "");
    digits = shortest.padEnd(Number(exponent) + 1, "0");
  }
  const sign = rounded < 0 ? "-" : ""; // -0.4 reads 0
  return sign + digits.replace(/\B(?=(\d{3})+$)/g, ",");
}

/** A number with 4 significant digits: 0.9812, 12.35, 1,235, 1.235e+6, 3.2e-5. */
export function formatNumber(value: number | null | undefined, digits = 4): string {
  if (value == null) return EM_DASH;
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "∞" : "-∞";
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6 || magnitude < 1e-3) {
    const [mantissa, exponent] = value.toExponential(digits - 1).split("e");
    return `${trimZeros(mantissa ?? "")}e${exponent}`;
  }
  const rounded = Number(value.toPrecision(digits));
  if (Number.isInteger(rounded) && Math.abs(rounded) >= 1000) return groupedInteger(rounded);
  return trimZeros(rounded.toPrecision(digits));
}

/** An axis' tick labels in one number format: all in exponent notation when any of them
 * needs it (log axes over decades: 5.178e-3 beside 3.466e-4, not 0.005178 beside 3.466e-4),
 * else each as formatNumber writes it. */
export function formatAxisNumbers(values: readonly (number | null)[], digits = 4): string[] {
  const exponent = values.some((v) => {
    if (v == null || !Number.isFinite(v) || v === 0) return false;
    const magnitude = Math.abs(v);
    return magnitude >= 1e6 || magnitude < 1e-3;
  });
  return values.map((v) => {
    if (v == null) return "";
    if (!exponent || v === 0 || !Number.isFinite(v)) return formatNumber(v, digits);
    const [mantissa, power] = v.toExponential(digits - 1).split("e");
    return `${trimZeros(mantissa ?? "")}e${power}`;
  });
}

/** Time-axis ticks from 0 to `maxSeconds` in one unit chosen by the span (s, min or h), the
 * first labelled "0" (no "0ms"): [seconds, label] pairs at nice steps of that unit. */
export function durationTicks(maxSeconds: number, count = 5): [number, string][] {
  if (!Number.isFinite(maxSeconds) || maxSeconds <= 0) return [[0, "0"]];
  const [unit, name] = maxSeconds >= 7200 ? [3600, "h"] : maxSeconds >= 120 ? [60, "min"] : [1, "s"];
  const top = maxSeconds / unit;
  const raw = top / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  const out: [number, string][] = [];
  for (let v = 0; v <= top + step * 1e-9; v += step) {
    const value = Number(v.toPrecision(12));
    out.push([value * unit, value === 0 ? "0" : `${formatNumber(value)} ${name}`]);
  }
  return out;
}

function trimZeros(text: string): string {
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}

/** A count: 12,345. */
export function formatInteger(value: number | null | undefined): string {
  return value == null ? EM_DASH : groupedInteger(value);
}

/** A fraction 0..1 as a percentage: 42%. */
export function formatPercent(fraction: number): string {
  return `${Math.round(Math.max(0, Math.min(1, fraction)) * 100)}%`;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB"];

/** A size in bytes in binary units with one decimal, as the CLI writes it (pedl.cli's
 * format_size): 512 B, 1.5 KiB, 12.3 MiB, 1.2 GiB (GiB the largest). */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes == null) return EM_DASH;
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** A duration in milliseconds, two units at most: 850ms, 42s, 3m 12s, 2h 05m, 3d 4h. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return EM_DASH;
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, "0")}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h ${String(minutes % 60).padStart(2, "0")}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** How long something started at `start` ran: until `end`, or until now while it runs. */
export function elapsed(start: string, end: string | null, now = Date.now()): number {
  return (end ? Date.parse(end) : now) - Date.parse(start);
}

// The months as Intl's en-GB short format writes them.
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sept", "Oct", "Nov", "Dec"];

function twoDigits(value: number): string {
  return String(value).padStart(2, "0");
}

/** `date`'s local time of day: 14:03, or with `seconds` 14:03:09. */
export function formatClock(date: Date, seconds = false): string {
  const clock = `${twoDigits(date.getHours())}:${twoDigits(date.getMinutes())}`;
  return seconds ? `${clock}:${twoDigits(date.getSeconds())}` : clock;
}

/** A timestamp in local time: "3 May, 14:03" this year, "3 May 2024, 14:03" before. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return EM_DASH;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  // Written out as Intl's en-GB format would write it: making an Intl.DateTimeFormat costs a
  // page load 10-20 ms of its main thread (ICU's calendars and time zones), for one header.
  const year = date.getFullYear() === new Date().getFullYear() ? "" : ` ${date.getFullYear()}`;
  return `${date.getDate()} ${MONTHS[date.getMonth()]}${year}, ${formatClock(date)}`;
}

/** A hyperparameter value as it reads in a table cell. */
export function formatValue(value: unknown): string {
  if (typeof value === "number") return formatNumber(value);
  if (value == null) return EM_DASH;
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** A state constant for people: STOPPING_CANCELED → "stopping (cancel)". */
export function formatState(state: string): string {
  const stopping = /^STOPPING_(\w+)$/.exec(state);
  if (stopping) return stopping[1] === "KILLED" ? "stopping (kill)" : "stopping (cancel)";
  return state.toLowerCase().replace(/_/g, " ");
}

export { EM_DASH };
