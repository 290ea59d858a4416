// The trials tab's filters as the URL and the API write them: `range=COLUMN:LOW..HIGH`
// (either end may be empty) and `value=hparams.NAME:VALUE` (one per value), and the sort keys
// of its columns (`hparams.NAME`, `metrics.NAME`: the trial's latest validation value).

export interface Bounds {
  low: string;
  high: string;
}

/** `hparams.optimizer.lr`: the sort and filter key of a hyperparameter column. */
export const hparamKey = (name: string): string => `hparams.${name}`;
/** `metrics.val_loss`: the sort and filter key of a metric column (its latest value). */
export const metricKey = (name: string): string => `metrics.${name}`;

/** The bounds of each column a list of `range` parameters filters (the last one wins). The
 * column ends at the last colon (a metric's name may hold one), or at the `first` (where the
 * bounds may: datetimes). */
export function parseRanges(ranges: readonly string[], split: "first" | "last" = "last"): Map<string, Bounds> {
  const out = new Map<string, Bounds>();
  for (const text of ranges) {
    const colon = split === "first" ? text.indexOf(":") : text.lastIndexOf(":");
    if (colon <= 0) continue;
    const bounds = text.slice(colon + 1);
    const dots = bounds.indexOf("..");
    if (dots < 0) continue;
    out.set(text.slice(0, colon), { low: bounds.slice(0, dots).trim(), high: bounds.slice(dots + 2).trim() });
  }
  return out;
}

/** The bounds a filter box's text gives: `low..high` (either end may be empty), or one value
 * for exactly it. */
export function typedBounds(text: string): Bounds {
  const trimmed = text.trim();
  const dots = trimmed.indexOf("..");
  return dots < 0 ? { low: trimmed, high: trimmed } : { low: trimmed.slice(0, dots), high: trimmed.slice(dots + 2) };
}

/** `ranges` with `column`'s bounds replaced (left out when both ends are empty). */
export function withRange(
  ranges: readonly string[],
  column: string,
  bounds: Bounds,
  split: "first" | "last" = "last",
): string[] {
  const kept = [...parseRanges(ranges, split)].filter(([key]) => key !== column);
  const low = bounds.low.trim();
  const high = bounds.high.trim();
  if (low || high) kept.push([column, { low, high }]);
  return kept.map(([key, b]) => `${key}:${b.low}..${b.high}`);
}

/** The values each hyperparameter is filtered to, from a list of `value` parameters. */
export function parseValues(values: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const text of values) {
    const colon = text.indexOf(":");
    if (colon <= 0) continue;
    const key = text.slice(0, colon);
    out.set(key, [...(out.get(key) ?? []), text.slice(colon + 1)]);
  }
  return out;
}

/** `values` with `column`'s values replaced by `chosen` (blank ones dropped). */
export function withValues(values: readonly string[], column: string, chosen: readonly string[]): string[] {
  const kept = values.filter((text) => !text.startsWith(`${column}:`));
  return [
    ...kept,
    ...chosen
      .map((v) => v.trim())
      .filter(Boolean)
      .map((v) => `${column}:${v}`),
  ];
}

/** A comma-separated list typed into a filter box, as values. */
export function splitValues(text: string): string[] {
  return text
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
}

/** The hyperparameters a config declares, by dotted name, as the master reads them for
 * `hparams.NAME` (pedl.db.trials.hparam_paths): nested groups without a `type` are
 * walked into; a bare value (a constant's short form) is one hyperparameter. */
export function configuredHparams(hyperparameters: unknown, prefix = "", out: string[] = []): string[] {
  if (!hyperparameters || typeof hyperparameters !== "object" || Array.isArray(hyperparameters)) return out;
  for (const [key, spec] of Object.entries(hyperparameters as Record<string, unknown>)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (spec && typeof spec === "object" && !Array.isArray(spec) && !("type" in spec))
      configuredHparams(spec, name, out);
    else out.push(name);
  }
  return out;
}
