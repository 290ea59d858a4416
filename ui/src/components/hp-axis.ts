// One hyperparameter (or the metric) as an axis: numeric (linear, or log when positive values
// span more than two decades) or categorical. Shared by the parallel coordinates and the
// scatter plots.

import { formatValue } from "../format";
import type { DeclaredType } from "../hparams";
import { naturalCompare } from "../natural-order";

export interface Axis {
  name: string;
  kind: "linear" | "log" | "categorical";
  /** The raw value of each trial, in summary order. */
  values: readonly unknown[];
  /** Categorical axes: the distinct values in order. */
  categories: string[];
  min: number;
  max: number;
  /** Trial i's value in axis units (categorical: its category's index), or null. */
  position(i: number): number | null;
  /** Trial i's place along the axis, 0 (min) to 1 (max), or null. */
  normalized(i: number): number | null;
}

const LOG_SPAN = 100;

function categoryKey(value: unknown): string {
  return typeof value === "string" ? value : formatValue(value);
}

/** Trial i's value in axis units on an axis of `kind` over `values`: the number itself, or on a
 * categorical axis its category's index in `categories` (null: none). Also what the charts'
 * worker places a scatter plot's dots by (scatter-layout.ts), from the axis' plain data. */
export function positionOf(
  kind: Axis["kind"],
  values: readonly unknown[],
  categories: readonly string[],
): (i: number) => number | null {
  if (kind !== "categorical")
    return (i) => {
      const v = values[i];
      return typeof v === "number" && Number.isFinite(v) ? v : null;
    };
  const index = new Map(categories.map((c, i) => [c, i]));
  return (i) => {
    const v = values[i];
    return v == null ? null : (index.get(categoryKey(v)) ?? null);
  };
}

/** The axis of these values, or null when they never vary (nothing to show). A declared
 * `categorical` is categorical even with numeric values; a declared `log` is a log axis. */
export function buildAxis(name: string, values: readonly unknown[], declared?: DeclaredType): Axis | null {
  const present = values.filter((v) => v != null);
  if (present.length === 0) return null;
  const numeric = declared !== "categorical" && present.every((v) => typeof v === "number" && Number.isFinite(v));
  if (numeric) {
    const numbers = present as number[];
    let min = Infinity;
    let max = -Infinity;
    for (const v of numbers) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    if (min === max) return null;
    const log = min > 0 && (declared === "log" || (declared === undefined && max / min >= LOG_SPAN));
    const lo = log ? Math.log10(min) : min;
    const span = (log ? Math.log10(max) : max) - lo;
    return {
      name,
      kind: log ? "log" : "linear",
      values,
      categories: [],
      min,
      max,
      position: positionOf("linear", values, []),
      normalized: (i) => {
        const v = values[i];
        if (typeof v !== "number" || !Number.isFinite(v)) return null;
        return ((log ? Math.log10(v) : v) - lo) / span;
      },
    };
  }
  const distinct = [...new Set(present.map(categoryKey))];
  if (distinct.length < 2) return null;
  const allNumbers = present.every((v) => typeof v === "number");
  distinct.sort(allNumbers ? (a, b) => Number(a) - Number(b) : naturalCompare);
  const position = positionOf("categorical", values, distinct);
  return {
    name,
    kind: "categorical",
    values,
    categories: distinct,
    min: 0,
    max: distinct.length - 1,
    position,
    normalized: (i) => {
      const p = position(i);
      return p == null ? null : distinct.length === 1 ? 0.5 : p / (distinct.length - 1);
    },
  };
}

/** The axis of the searcher metric (kept even when constant, centred then). */
export function metricAxis(name: string, values: readonly (number | null)[]): Axis {
  const axis = buildAxis(
    name,
    values.map((v) => (v != null && Number.isFinite(v) ? v : null)),
  );
  if (axis && axis.kind !== "categorical")
    return { ...axis, kind: "linear", normalized: linearNormalized(values, axis.min, axis.max) };
  const only = values.find((v) => v != null && Number.isFinite(v)) ?? 0;
  return {
    name,
    kind: "linear",
    values,
    categories: [],
    min: only,
    max: only,
    position: (i) => values[i] ?? null,
    normalized: (i) => (values[i] == null ? null : 0.5),
  };
}

function linearNormalized(values: readonly (number | null)[], min: number, max: number): (i: number) => number | null {
  return (i) => {
    const v = values[i];
    return v == null || !Number.isFinite(v) ? null : (v - min) / (max - min);
  };
}
