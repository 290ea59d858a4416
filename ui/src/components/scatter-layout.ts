// A scatter plot's layout (scatter.ts): where each trial's dot goes, the axes' ranges, ticks
// and labels, and the scene drawn from them (chart-paint.ts). Plain data in, plain data out,
// no DOM: the charts' worker lays out and draws each plot from the summary's columns (the page
// posts them, chart-surface.ts), and the page runs the same function only where it draws the
// plot itself, or when the pointer first arrives over a plot (its hit-testing).

import { formatAxisNumbers, formatNumber } from "../format";
import { BEST, GREYED, SELECTED, type ScatterScene, type SceneTheme, type Ticks } from "./chart-paint";
import { positionOf } from "./hp-axis";
import { leastInset, niceTicks, paddedRange } from "./plot-margin";

/** The axis of one hyperparameter, as hp-axis.ts built it, without its functions. */
export interface ScatterAxisSpec {
  name: string;
  kind: "linear" | "log" | "categorical";
  /** The raw value of each trial, in summary order. */
  values: readonly unknown[];
  categories: readonly string[];
  min: number;
  max: number;
}

/** What one plot is drawn from. The columns are in summary order. */
export interface ScatterInput {
  axis: ScatterAxisSpec;
  ids: Float64Array;
  /** The searcher metric (NaN: none yet). */
  metric: Float64Array;
  /** 1 where the trial is among the best. */
  isBest: Uint8Array;
  /** GREYED (outside the brushes) and SELECTED bits by trial; null: none of either. */
  view: Uint8Array | null;
  metricName: string;
  /** CSS pixels, and device pixels per CSS pixel. */
  width: number;
  height: number;
  ratio: number;
  theme: SceneTheme;
}

/** What the page shows of a plot beside its canvas (the data- attributes the tests read). */
export interface ScatterInfo {
  /** Dots drawn; of them, greyed and selected. */
  points: number;
  greyed: number;
  selected: number;
  /** The least distance (CSS pixels) of a dot's centre from the plot area's edges ("": none). */
  inset: string;
}

export interface ScatterLayout {
  scene: ScatterScene;
  info: ScatterInfo;
  /** Per dot: its trial's summary index, metric and flags (BEST, GREYED, SELECTED). */
  index: Uint32Array;
  ys: Float64Array;
  flags: Uint8Array;
}

const MAX_JITTERED_INTEGERS = 20;
/** Room around the plot area (CSS pixels): the y axis' ticks and name left, the x axis' below. */
export const PAD = { left: 76, right: 14, top: 10, bottom: 42 };

/** The plot area (CSS pixels) of a plot this wide and high. */
export function plotArea(width: number, height: number): { left: number; top: number; width: number; height: number } {
  return {
    left: PAD.left,
    top: PAD.top,
    width: Math.max(1, width - PAD.left - PAD.right),
    height: Math.max(1, height - PAD.top - PAD.bottom),
  };
}

/** Whether the axis holds only integers, at most MAX_JITTERED_INTEGERS apart. */
function fewIntegers(axis: ScatterAxisSpec): boolean {
  if (axis.kind !== "linear" || axis.max - axis.min > MAX_JITTERED_INTEGERS) return false;
  return axis.values.every((v) => v == null || (typeof v === "number" && Number.isInteger(v)));
}

/** A small deterministic offset in -0.5..0.5 per trial. */
function jitter(id: number): number {
  const x = Math.sin(id * 12.9898) * 43758.5453;
  return x - Math.floor(x) - 0.5;
}

/** One of the plot's scales: its range and whether it is logarithmic. */
interface Scale {
  lo: number;
  hi: number;
  log: boolean;
}

/** A scale laid over `size` pixels from `from` (`flip`: upwards) as pixel = `o` + `f`(value)
 * × `k`, `f` the identity or log10: the dots are placed in one pass per axis. */
function pixels(
  scale: Scale,
  from: number,
  size: number,
  flip: boolean,
): { f: (v: number) => number; o: number; k: number } {
  const f = scale.log ? Math.log10 : (v: number) => v;
  const lo = f(scale.lo);
  const k = (size / (f(scale.hi) - lo || 1)) * (flip ? -1 : 1);
  return { f, o: (flip ? from + size : from) - lo * k, k };
}

/** The ticks of a numeric scale (values inside it): nice steps, or decades on a log scale
 * (with 2 and 5 between them where it spans few). */
function scaleTicks(scale: Scale, count: number): number[] {
  if (!scale.log) return niceTicks(scale.lo, scale.hi, count).filter((v) => v >= scale.lo && v <= scale.hi);
  const out: number[] = [];
  const decades = Math.log10(scale.hi) - Math.log10(scale.lo);
  const mantissas = decades < 2 ? [1, 2, 5] : [1];
  const step = Math.max(1, Math.ceil(decades / count));
  for (let e = Math.floor(Math.log10(scale.lo)); e <= Math.ceil(Math.log10(scale.hi)); e += step) {
    for (const m of mantissas) {
      const v = Number((m * 10 ** e).toPrecision(12));
      if (v >= scale.lo && v <= scale.hi) out.push(v);
    }
  }
  return out;
}

/** Lay the plot out: the trials with a metric and a value on the axis, each a dot (categories
 * and few integers jittered sideways so equal values stay visible), in ranges with margins so
 * no dot at an extreme is cut by the plot's edge. */
export function layoutScatter(input: ScatterInput): ScatterLayout {
  const { axis, ids, metric, isBest, view, width, height, ratio } = input;
  const few = fewIntegers(axis);
  const spread = axis.kind === "categorical" ? 0.5 : few ? 0.4 : 0;
  const positionAt = positionOf(axis.kind, axis.values, axis.categories);
  const n = ids.length;
  const index = new Uint32Array(n);
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  const flags = new Uint8Array(n);
  let count = 0;
  let greyed = 0;
  let selected = 0;
  let xMin = Infinity;
  let xMax = -Infinity;
  let yMin = Infinity;
  let yMax = -Infinity;
  for (let i = 0; i < n; i++) {
    const y = metric[i] as number;
    if (Number.isNaN(y)) continue;
    const position = positionAt(i);
    if (position == null) continue;
    const x = spread > 0 ? position + jitter(ids[i] as number) * spread : position;
    const bits = view ? (view[i] as number) : 0;
    index[count] = i;
    xs[count] = x;
    ys[count] = y;
    flags[count] = (isBest[i] ? BEST : 0) | bits;
    if (bits & GREYED) greyed += 1;
    if (bits & SELECTED) selected += 1;
    count += 1;
    if (x < xMin) xMin = x;
    if (x > xMax) xMax = x;
    if (y < yMin) yMin = y;
    if (y > yMax) yMax = y;
  }
  const log = axis.kind === "log";
  const [xLo, xHi] =
    axis.kind === "categorical"
      ? [-0.6, axis.categories.length - 0.4]
      : count > 0
        ? paddedRange(xMin, xMax, { log })
        : [0, 1];
  const [yLo, yHi] = count > 0 ? paddedRange(yMin, yMax) : [0, 1];
  const scales = { x: { lo: xLo, hi: xHi, log }, y: { lo: yLo, hi: yHi, log: false } };

  const area = plotArea(width, height);
  // CSS pixels for the ticks; device pixels (times `ratio`) for the dots.
  const x = pixels(scales.x, area.left, area.width, false);
  const y = pixels(scales.y, area.top, area.height, true);
  const px = (v: number) => x.o + x.f(v) * x.k;
  const py = (v: number) => y.o + y.f(v) * y.k;
  const [ox, kx, oy, ky] = [x.o * ratio, x.k * ratio, y.o * ratio, y.k * ratio];
  const cx = new Float64Array(count);
  const cy = new Float64Array(count);
  if (log) for (let k = 0; k < count; k++) cx[k] = ox + Math.log10(xs[k] as number) * kx;
  else for (let k = 0; k < count; k++) cx[k] = ox + (xs[k] as number) * kx;
  for (let k = 0; k < count; k++) cy[k] = oy + (ys[k] as number) * ky;
  const bbox = {
    left: area.left * ratio,
    top: area.top * ratio,
    width: area.width * ratio,
    height: area.height * ratio,
  };
  let xTicks: Ticks;
  if (axis.kind === "categorical") xTicks = axis.categories.map((c, i): [number, string] => [px(i), c]);
  else if (few) {
    // Every integer, or every other (...) where they would crowd.
    const step = Math.max(1, Math.ceil((axis.max - axis.min + 1) / Math.max(2, Math.floor(area.width / 40))));
    xTicks = [];
    for (let v = axis.min; v <= axis.max; v += step) xTicks.push([px(v), formatNumber(v)]);
  } else {
    const ticks = scaleTicks(scales.x, Math.max(2, Math.floor(area.width / 70)));
    const labels = formatAxisNumbers(ticks);
    xTicks = ticks.map((v, i): [number, string] => [px(v), labels[i] ?? ""]);
  }
  const yValues = scaleTicks(scales.y, Math.max(2, Math.floor(area.height / 30)));
  const yLabels = formatAxisNumbers(yValues);
  const dotFlags = flags.slice(0, count);
  return {
    scene: {
      kind: "scatter",
      canvasWidth: Math.round(width * ratio),
      canvasHeight: Math.round(height * ratio),
      ratio,
      bbox,
      cx,
      cy,
      flags: dotFlags,
      frame: {
        width,
        height,
        ratio,
        theme: input.theme,
        pad: PAD,
        xTicks,
        yTicks: yValues.map((v, i): [number, string] => [py(v), yLabels[i] ?? ""]),
        xLabel: axis.name,
        yLabel: input.metricName,
        xGrid: true,
      },
    },
    info: {
      points: count,
      greyed,
      selected,
      inset: count > 0 ? String(Math.floor(leastInset(cx, cy, bbox) / ratio)) : "",
    },
    index: index.slice(0, count),
    ys: ys.slice(0, count),
    flags: dotFlags,
  };
}
