// A scatter plot of one hyperparameter against the searcher metric, on a canvas: one dot per
// trial, the best trials larger and in the highlight colour. Numbers spanning more than two
// decades (learning rates) use a log axis; categories sit at evenly spaced positions, and so
// do integers with few distinct values (both jittered sideways so equal values stay visible).
//
// The axes, grid, labels and dots are one scene (chart-paint.ts) drawn from typed arrays: by
// the charts' worker where the browser can (chart-surface.ts), else on the page. No plotting
// library: the page lays out nothing but the canvas and an element over the plot area that
// takes the pointer (hit-testing, the tooltip, the box being dragged).
//
// A click selects the trial of the nearest dot (shift, ctrl or cmd: adds it); a box dragged
// over the plot selects the trials inside (found through a grid of the dots' positions,
// selection.ts). The selected trials' dots are outlined; trials outside the parallel
// coordinates' brushes (`setView`'s `kept`) are drawn grey, under the others.

import { h } from "../dom";
import { chartTheme } from "../theme";
import { formatAxisNumbers, formatNumber, formatValue } from "../format";
import { BEST, GREYED, SELECTED, type ScatterScene, type Ticks } from "./chart-paint";
import { ChartSurface } from "./chart-surface";
import type { Axis } from "./hp-axis";
import { leastInset, paddedRange } from "./plot-margin";
import { niceTicks } from "./search-charts";
import { PointGrid, isAdditive } from "./selection";

export interface ScatterData {
  axis: Axis;
  trialIds: readonly number[];
  /** The searcher metric of each trial (null: none yet). */
  metric: readonly (number | null)[];
  best: ReadonlySet<number>;
  metricName: string;
}

const MAX_JITTERED_INTEGERS = 20;
const HOVER_PX = 14;
/** Room around the plot area (CSS pixels): the y axis' ticks and name left, the x axis' below. */
const PAD = { left: 76, right: 14, top: 10, bottom: 42 };
/** A drag shorter than this (CSS pixels) either way is a click, not a box. */
const BOX_MIN_PX = 3;

/** Whether the axis holds only integers, at most MAX_JITTERED_INTEGERS apart. */
function fewIntegers(axis: Axis): boolean {
  if (axis.kind !== "linear" || axis.max - axis.min > MAX_JITTERED_INTEGERS) return false;
  return axis.values.every((v) => v == null || (typeof v === "number" && Number.isInteger(v)));
}

/** A small deterministic offset in -0.5..0.5 per trial. */
function jitter(id: number): number {
  const x = Math.sin(id * 12.9898) * 43758.5453;
  return x - Math.floor(x) - 0.5;
}

/** The columns every plot of one summary shares, read once for all of them: each trial's
 * metric (NaN: none) and whether it is among the best. */
interface Shared {
  best: ReadonlySet<number>;
  metric: Float64Array;
  isBest: Uint8Array;
}

const sharedColumns = new WeakMap<object, Shared>();

function shared(data: ScatterData): Shared {
  const known = sharedColumns.get(data.metric);
  if (known && known.best === data.best) return known;
  const n = data.trialIds.length;
  const metric = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const y = data.metric[i];
    metric[i] = y == null || !Number.isFinite(y) ? Number.NaN : y;
  }
  const isBest = new Uint8Array(n);
  if (data.best.size > 0) data.trialIds.forEach((id, i) => (isBest[i] = data.best.has(id) ? 1 : 0));
  const columns = { best: data.best, metric, isBest };
  sharedColumns.set(data.metric, columns);
  return columns;
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

export class HpScatter {
  readonly el: HTMLElement;
  /** The element over the plot area: takes the pointer, holds the tooltip and the box. */
  private readonly over: HTMLElement;
  private readonly box: HTMLElement;
  private readonly tooltip: HTMLElement;
  /** The canvas: axes and dots, drawn by the charts' worker where the browser can. */
  private readonly surface: ChartSurface;
  /** The drawn trials: summary index, position on x, metric. */
  private index = new Uint32Array(0);
  private xs = new Float64Array(0);
  private ys = new Float64Array(0);
  private best = new Uint8Array(0);
  private data: ScatterData | null = null;
  private scales: { x: Scale; y: Scale } | null = null;
  /** The width (CSS pixels) the plot was last laid out for. */
  private drawnWidth = 0;
  private hovered: number | null = null;
  /** The dots' canvas positions as last drawn (device pixels), and the grid of them in CSS
   * pixels of the plot area, built when first hovered or boxed (not at every draw). */
  private drawn: { cx: Float64Array; cy: Float64Array; left: number; top: number; ratio: number } | null = null;
  private gridCache: PointGrid | null = null;
  /** Per drawn dot: 1 when its trial is outside the brushes. */
  private greyed = new Uint8Array(0);
  private kept: ((i: number) => boolean) | null = null;
  private selected: ReadonlySet<number> = new Set();
  /** A box being dragged: where it started (CSS pixels of the plot area), and whether it adds. */
  private dragging: { x: number; y: number; additive: boolean } | null = null;
  private boxed = false;
  private firstPaint: () => void = () => undefined;
  private readonly painted = new Promise<void>((resolve) => (this.firstPaint = resolve));
  private readonly resizeObserver: ResizeObserver;

  constructor(
    private readonly height: number,
    /** Trials picked by a click (one) or a box (any number); `additive`: shift, ctrl or cmd. */
    private readonly onPick: (trialIds: number[], additive: boolean) => void,
  ) {
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.box = h("div", { class: "scatter-box", hidden: true });
    this.over = h("div", { class: "scatter-over" }, this.box, this.tooltip);
    this.surface = new ChartSurface("scatter-plot", () => this.draw());
    this.el = h(
      "div",
      { class: "chart scatter", role: "img", style: `height: ${height}px` },
      this.surface.el,
      this.over,
    );
    this.over.addEventListener("mousemove", (event) => {
      if (!this.dragging) this.hover(...this.at(event));
    });
    this.over.addEventListener("mouseleave", () => {
      if (!this.dragging) this.show(null);
    });
    this.over.addEventListener("mousedown", (event) => this.startBox(event));
    this.over.addEventListener("click", (event) => {
      if (this.boxed) return;
      if (this.hovered != null) this.onPick([this.hovered], isAdditive(event));
    });
    this.resizeObserver = new ResizeObserver(() => {
      if (this.data && Math.abs(this.width() - this.drawnWidth) >= 1) this.draw();
    });
    this.resizeObserver.observe(this.el);
  }

  /** Draw `data`; `width` (CSS pixels) saves a layout when many plots are made at once. */
  setData(data: ScatterData, width = this.width()): void {
    const { axis } = data;
    this.data = data;
    this.el.setAttribute("aria-label", `${data.metricName} by ${axis.name}`);
    const spread = axis.kind === "categorical" ? 0.5 : fewIntegers(axis) ? 0.4 : 0;
    const n = data.trialIds.length;
    const { metric, isBest } = shared(data);
    const index = new Uint32Array(n);
    const xs = new Float64Array(n);
    const ys = new Float64Array(n);
    const best = new Uint8Array(n);
    let count = 0;
    let xMin = Infinity;
    let xMax = -Infinity;
    let yMin = Infinity;
    let yMax = -Infinity;
    for (let i = 0; i < n; i++) {
      const y = metric[i] as number;
      if (Number.isNaN(y)) continue;
      const position = axis.position(i);
      if (position == null) continue;
      const x = spread > 0 ? position + jitter(data.trialIds[i] as number) * spread : position;
      index[count] = i;
      xs[count] = x;
      ys[count] = y;
      best[count] = isBest[i] as number;
      count += 1;
      if (x < xMin) xMin = x;
      if (x > xMax) xMax = x;
      if (y < yMin) yMin = y;
      if (y > yMax) yMax = y;
    }
    this.index = index.subarray(0, count);
    this.xs = xs.subarray(0, count);
    this.ys = ys.subarray(0, count);
    this.best = best.subarray(0, count);
    // Ranges with margins, so no dot at an extreme is cut by the plot's edge.
    const log = axis.kind === "log";
    const [xLo, xHi] =
      axis.kind === "categorical"
        ? [-0.6, axis.categories.length - 0.4]
        : count > 0
          ? paddedRange(xMin, xMax, { log })
          : [0, 1];
    const [yLo, yHi] = count > 0 ? paddedRange(yMin, yMax) : [0, 1];
    this.scales = { x: { lo: xLo, hi: xHi, log }, y: { lo: yLo, hi: yHi, log: false } };
    this.markGreyed();
    this.draw(width);
  }

  /** Which trials are kept by the brushes (by summary index; null: all) and which are
   * selected (ids): redrawn without laying the plot out again. */
  setView(kept: ((i: number) => boolean) | null, selected: ReadonlySet<number>): void {
    if (kept === this.kept && selected === this.selected) return;
    this.kept = kept;
    this.selected = selected;
    this.markGreyed();
    if (this.data) this.draw(this.drawnWidth);
  }

  /** Resolves once the dots were first drawn. */
  whenPainted(): Promise<void> {
    return this.painted;
  }

  dispose(): void {
    this.resizeObserver.disconnect();
    this.endBox();
    this.surface.dispose();
    this.firstPaint();
  }

  width(): number {
    return Math.max(200, Math.floor(this.el.clientWidth || 320));
  }

  private markGreyed(): void {
    const kept = this.kept;
    this.greyed = new Uint8Array(this.index.length);
    let greyed = 0;
    if (kept) {
      this.index.forEach((i, k) => {
        if (!kept(i)) {
          this.greyed[k] = 1;
          greyed += 1;
        }
      });
    }
    this.el.dataset.points = String(this.index.length);
    this.el.dataset.greyed = String(greyed);
    this.el.dataset.selected = String(this.index.filter((i) => this.selected.has(this.data?.trialIds[i] ?? -1)).length);
  }

  /** The plot area (CSS pixels) at this width. */
  private plotArea(width: number): { left: number; top: number; width: number; height: number } {
    return {
      left: PAD.left,
      top: PAD.top,
      width: Math.max(1, width - PAD.left - PAD.right),
      height: Math.max(1, this.height - PAD.top - PAD.bottom),
    };
  }

  /** Lay the plot out for `width` (CSS pixels) and draw it: axes and dots. */
  private draw(width = this.width()): void {
    const data = this.data;
    const scales = this.scales;
    if (!data || !scales) return;
    this.drawnWidth = width;
    const ratio = window.devicePixelRatio || 1;
    const area = this.plotArea(width);
    // CSS pixels for the ticks; device pixels (times `ratio`) for the dots.
    const x = pixels(scales.x, area.left, area.width, false);
    const y = pixels(scales.y, area.top, area.height, true);
    const px = (v: number) => x.o + x.f(v) * x.k;
    const py = (v: number) => y.o + y.f(v) * y.k;
    const [ox, kx, oy, ky] = [x.o * ratio, x.k * ratio, y.o * ratio, y.k * ratio];
    Object.assign(this.over.style, {
      left: `${area.left}px`,
      top: `${area.top}px`,
      width: `${area.width}px`,
      height: `${area.height}px`,
    });
    // Device pixels on the canvas, and CSS pixels of the plot area for the hit-testing.
    const count = this.xs.length;
    const cx = new Float64Array(count);
    const cy = new Float64Array(count);
    const xs = this.xs;
    const ys = this.ys;
    if (scales.x.log) for (let k = 0; k < count; k++) cx[k] = ox + Math.log10(xs[k] as number) * kx;
    else for (let k = 0; k < count; k++) cx[k] = ox + (xs[k] as number) * kx;
    for (let k = 0; k < count; k++) cy[k] = oy + (ys[k] as number) * ky;
    const bbox = {
      left: area.left * ratio,
      top: area.top * ratio,
      width: area.width * ratio,
      height: area.height * ratio,
    };
    this.drawn = { cx, cy, left: bbox.left, top: bbox.top, ratio };
    // How far the nearest dot's centre is from the plot's edges, in CSS pixels (tests read it).
    this.el.dataset.inset = count > 0 ? String(Math.floor(leastInset(cx, cy, bbox) / ratio)) : "";
    this.gridCache = null;
    const flags = new Uint8Array(count);
    const ids = data.trialIds;
    const anySelected = this.selected.size > 0;
    for (let k = 0; k < count; k++) {
      flags[k] =
        (this.best[k] ? BEST : 0) |
        (this.greyed[k] ? GREYED : 0) |
        (anySelected && this.selected.has(ids[this.index[k] as number] as number) ? SELECTED : 0);
    }
    const { axis } = data;
    let xTicks: Ticks;
    if (axis.kind === "categorical") xTicks = axis.categories.map((c, i): [number, string] => [px(i), c]);
    else if (fewIntegers(axis)) {
      // Every integer, or every other (...) where they would crowd.
      const step = Math.max(1, Math.ceil((axis.max - axis.min + 1) / Math.max(2, Math.floor(area.width / 40))));
      xTicks = [];
      for (let v = axis.min; v <= axis.max; v += step) xTicks.push([px(v), formatNumber(v)]);
    } else {
      const values = scaleTicks(scales.x, Math.max(2, Math.floor(area.width / 70)));
      const labels = formatAxisNumbers(values);
      xTicks = values.map((v, i): [number, string] => [px(v), labels[i] ?? ""]);
    }
    const yValues = scaleTicks(scales.y, Math.max(2, Math.floor(area.height / 30)));
    const yLabels = formatAxisNumbers(yValues);
    const theme = chartTheme();
    const scene: ScatterScene = {
      kind: "scatter",
      canvasWidth: Math.round(width * ratio),
      canvasHeight: Math.round(this.height * ratio),
      ratio,
      bbox,
      cx: this.surface.offMainThread ? cx.slice() : cx,
      cy: this.surface.offMainThread ? cy.slice() : cy,
      flags,
      frame: {
        width,
        height: this.height,
        ratio,
        theme: { text: theme.axis, line: theme.line, halo: theme.halo, grid: theme.grid },
        pad: PAD,
        xTicks,
        yTicks: yValues.map((v, i): [number, string] => [py(v), yLabels[i] ?? ""]),
        xLabel: axis.name,
        yLabel: data.metricName,
        xGrid: true,
      },
    };
    void this.surface.paint(scene).then(this.firstPaint);
  }

  private grid(): PointGrid | null {
    const drawn = this.drawn;
    if (!this.gridCache && drawn) {
      const { cx, cy, left, top, ratio } = drawn;
      this.gridCache = new PointGrid(
        cx.map((x) => (x - left) / ratio),
        cy.map((y) => (y - top) / ratio),
        HOVER_PX,
      );
    }
    return this.gridCache;
  }

  /** The pointer's position over the plot area (CSS pixels). */
  private at(event: MouseEvent): [number, number] {
    const rect = this.over.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  }

  private readonly onMove = (event: MouseEvent): void => {
    const start = this.dragging;
    if (!start) return;
    const [x, y] = this.clamp(...this.at(event));
    Object.assign(this.box.style, {
      left: `${Math.min(x, start.x)}px`,
      top: `${Math.min(y, start.y)}px`,
      width: `${Math.abs(x - start.x)}px`,
      height: `${Math.abs(y - start.y)}px`,
    });
    this.box.hidden = false;
  };

  private readonly onUp = (event: MouseEvent): void => {
    const start = this.dragging;
    this.endBox();
    if (!start) return;
    const [x, y] = this.clamp(...this.at(event));
    this.boxSelect(
      Math.min(x, start.x),
      Math.min(y, start.y),
      Math.abs(x - start.x),
      Math.abs(y - start.y),
      start.additive,
    );
  };

  private clamp(x: number, y: number): [number, number] {
    const { width, height } = this.over.getBoundingClientRect();
    return [Math.max(0, Math.min(width, x)), Math.max(0, Math.min(height, y))];
  }

  private startBox(event: MouseEvent): void {
    if (event.button !== 0) return;
    event.preventDefault(); // no text selected while dragging
    const [x, y] = this.at(event);
    this.dragging = { x, y, additive: isAdditive(event) };
    this.boxed = false;
    window.addEventListener("mousemove", this.onMove);
    window.addEventListener("mouseup", this.onUp);
  }

  private endBox(): void {
    this.dragging = null;
    this.box.hidden = true;
    window.removeEventListener("mousemove", this.onMove);
    window.removeEventListener("mouseup", this.onUp);
  }

  /** A box dragged over the plot: the trials of the dots inside it (not the greyed ones). */
  private boxSelect(left: number, top: number, width: number, height: number, additive: boolean): void {
    const grid = this.grid();
    if (width < BOX_MIN_PX || height < BOX_MIN_PX || !grid || !this.data) return;
    this.boxed = true;
    const data = this.data;
    const ids = grid
      .inBox(left, top, left + width, top + height)
      .filter((k) => !this.greyed[k])
      .map((k) => data.trialIds[this.index[k] as number] as number);
    if (ids.length > 0 || !additive) this.onPick(ids, additive);
  }

  /** The dot nearest the pointer (CSS pixels of the plot area), within HOVER_PX; greyed dots
   * are skipped. */
  private hover(left: number, top: number): void {
    const data = this.data;
    const drawn = this.drawn;
    const grid = this.grid();
    if (!data || !drawn || !grid) return this.show(null);
    const nearest = grid.nearest(left, top, HOVER_PX, (k) => (this.greyed[k] ? -HOVER_PX : this.best[k] ? 3 : 0));
    if (nearest < 0) return this.show(null);
    const at: [number, number] = [
      ((drawn.cx[nearest] as number) - drawn.left) / drawn.ratio,
      ((drawn.cy[nearest] as number) - drawn.top) / drawn.ratio,
    ];
    const i = this.index[nearest] as number;
    const id = data.trialIds[i] as number;
    this.show(id);
    this.tooltip.replaceChildren(
      h("strong", {}, `Trial ${id}${this.best[nearest] ? " (best)" : ""}${this.selected.has(id) ? ", selected" : ""}`),
      h("span", {}, `${data.axis.name}: ${formatValue(data.axis.values[i])}`),
      h("span", {}, `${data.metricName}: ${formatNumber(this.ys[nearest])}`),
    );
    const flip = at[0] > this.over.clientWidth - 140;
    this.tooltip.style.transform = `translate(${flip ? at[0] - 10 : at[0] + 10}px, ${Math.max(0, at[1] - 40)}px)${flip ? " translateX(-100%)" : ""}`;
  }

  private show(id: number | null): void {
    this.hovered = id;
    this.tooltip.hidden = id === null;
    this.over.style.cursor = id === null ? "" : "pointer";
  }
}
