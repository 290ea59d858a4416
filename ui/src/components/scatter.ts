// A scatter plot of one hyperparameter against the searcher metric, on uPlot (canvas): one
// dot per trial, the best trials larger and in the highlight colour. Numbers spanning more
// than two decades (learning rates) use a log axis; categories sit at evenly spaced
// positions, and so do integers with few distinct values (both jittered sideways so equal
// values stay visible).
//
// uPlot draws the axes, grid and cursor; the dots are drawn from typed arrays (uPlot is handed
// only the corners of the data, for its scales): 10,000 trials cost a few milliseconds instead
// of uPlot's ~100 ms of arcs. Where the browser can, they are drawn by the charts' worker on a
// canvas of their own laid over uPlot's (chart-surface.ts); else in uPlot's draw hook on its
// canvas (chart-paint.ts draws both).
//
// A click selects the trial of the nearest dot (shift, ctrl or cmd: adds it); a box dragged
// over the plot selects the trials inside (found through a grid of the dots' positions,
// selection.ts). The selected trials' dots are outlined; trials outside the parallel
// coordinates' brushes (`setView`'s `kept`) are drawn grey, under the others.

import uPlot from "uplot";
import { h } from "../dom";
import { uplotAxis } from "../theme";
import { formatNumber, formatValue } from "../format";
import { BEST, GREYED, SELECTED, type ScatterScene, drawScatter } from "./chart-paint";
import { ChartSurface, paintsOffMainThread } from "./chart-surface";
import type { Axis } from "./hp-axis";
import { axisValues } from "./line-chart";
import { leastInset, paddedRange } from "./plot-margin";
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

/** Value → canvas pixel of one of uPlot's scales (linear or log), for the current layout. */
function mapper(u: uPlot, key: "x" | "y"): (value: number) => number {
  const scale = u.scales[key];
  const log = scale?.distr === 3;
  const f = (v: number) => (log ? Math.log10(v) : v);
  const lo = f(scale?.min ?? 0);
  const hi = f(scale?.max ?? 1);
  const span = hi - lo || 1;
  const { left, top, width, height } = u.bbox;
  return key === "x" ? (v) => left + ((f(v) - lo) / span) * width : (v) => top + height - ((f(v) - lo) / span) * height;
}

export class HpScatter {
  readonly el: HTMLElement;
  private plot: uPlot | null = null;
  private readonly tooltip: HTMLElement;
  /** The drawn trials: summary index, position on x, metric. */
  private index = new Uint32Array(0);
  private xs = new Float64Array(0);
  private ys = new Float64Array(0);
  private best = new Uint8Array(0);
  private data: ScatterData | null = null;
  private hovered: number | null = null;
  /** The dots' canvas positions as last drawn (device pixels), and the grid of them in CSS
   * pixels of the plot area, built when first hovered or boxed (not at every draw). */
  private drawn: { cx: Float64Array; cy: Float64Array; left: number; top: number; ratio: number } | null = null;
  private gridCache: PointGrid | null = null;
  /** Per drawn dot: 1 when its trial is outside the brushes. */
  private greyed = new Uint8Array(0);
  private kept: ((i: number) => boolean) | null = null;
  private selected: ReadonlySet<number> = new Set();
  private additive = false;
  private boxed = false;
  /** The dots' own canvas, drawn by the charts' worker (null: drawn on uPlot's canvas). */
  private dots: ChartSurface | null = null;
  private firstPaint: () => void = () => undefined;
  private readonly painted = new Promise<void>((resolve) => (this.firstPaint = resolve));
  private readonly resizeObserver: ResizeObserver;

  constructor(
    private readonly height: number,
    /** Trials picked by a click (one) or a box (any number); `additive`: shift, ctrl or cmd. */
    private readonly onPick: (trialIds: number[], additive: boolean) => void,
  ) {
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.el = h("div", { class: "chart scatter", role: "img" });
    if (paintsOffMainThread())
      this.dots = new ChartSurface("scatter-dots", () => {
        // The worker failed: the dots go back to uPlot's canvas.
        this.dots?.el.remove();
        this.dots = null;
        this.plot?.redraw(false, false);
      });
    this.resizeObserver = new ResizeObserver(() => {
      const width = this.width();
      if (this.plot && Math.abs(width - this.plot.width) >= 1) this.plot.setSize({ width, height: this.height });
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
      const y = data.metric[i];
      const position = axis.position(i);
      if (y == null || !Number.isFinite(y) || position == null) continue;
      const id = data.trialIds[i] as number;
      const x = spread > 0 ? position + jitter(id) * spread : position;
      index[count] = i;
      xs[count] = x;
      ys[count] = y;
      best[count] = data.best.has(id) ? 1 : 0;
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
    this.markGreyed();
    const corners: uPlot.AlignedData =
      count > 0
        ? [
            [xMin, xMax],
            [yMin, yMax],
          ]
        : [[], []];

    this.plot?.destroy();
    const xAxis: uPlot.Axis = {
      ...uplotAxis(),
      label: axis.name,
      labelSize: 20,
      values: (u, splits) =>
        axis.kind === "categorical"
          ? splits.map((v) => String(axis.categories[Math.round(v)] ?? ""))
          : axisValues(u, splits),
    };
    if (axis.kind === "categorical") xAxis.splits = () => axis.categories.map((_c, i) => i);
    this.plot = new uPlot(
      {
        width,
        height: this.height,
        legend: { show: false },
        cursor: { points: { show: false }, drag: { x: true, y: true, setScale: false }, focus: { prox: -1 } },
        scales: {
          // Ranges with margins, so no dot at an extreme is cut by the plot's edge.
          x:
            axis.kind === "categorical"
              ? { time: false, range: () => [-0.6, axis.categories.length - 0.4] }
              : axis.kind === "log"
                ? { time: false, distr: 3, log: 10, range: (_u, lo, hi) => paddedRange(lo, hi, { log: true }) }
                : { time: false, range: (_u, lo, hi) => paddedRange(lo, hi) },
          y: { range: (_u, lo, hi) => paddedRange(lo, hi) },
        },
        axes: [xAxis, { ...uplotAxis(), label: data.metricName, labelSize: 20, size: 56, values: axisValues }],
        series: [{}, { label: data.metricName, paths: () => null, points: { show: false } }],
        hooks: {
          draw: [(u) => this.drawDots(u)],
          setCursor: [(u) => this.hover(u)],
          setSelect: [(u) => this.boxSelect(u)],
        },
      },
      corners,
      this.el,
    );
    this.plot.over.append(this.tooltip);
    if (this.dots) this.plot.over.before(this.dots.el);
    this.plot.over.addEventListener("mousedown", (event) => {
      this.additive = isAdditive(event);
      this.boxed = false;
    });
    this.plot.over.addEventListener("click", (event) => {
      if (this.boxed) return;
      if (this.hovered != null) this.onPick([this.hovered], isAdditive(event));
    });
    this.plot.over.addEventListener("mouseleave", () => this.show(null));
  }

  /** Which trials are kept by the brushes (by summary index; null: all) and which are
   * selected (ids): redrawn without rebuilding the plot. */
  setView(kept: ((i: number) => boolean) | null, selected: ReadonlySet<number>): void {
    if (kept === this.kept && selected === this.selected) return;
    this.kept = kept;
    this.selected = selected;
    this.markGreyed();
    this.plot?.redraw(false, false);
  }

  /** Resolves once the dots were first drawn. */
  whenPainted(): Promise<void> {
    return this.painted;
  }

  dispose(): void {
    this.resizeObserver.disconnect();
    this.plot?.destroy();
    this.dots?.dispose();
    this.firstPaint();
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

  /** A box dragged over the plot: the trials of the dots inside it (not the greyed ones). */
  private boxSelect(u: uPlot): void {
    const { left, top, width, height } = u.select;
    const grid = this.grid();
    if (width < 3 || height < 3 || !grid || !this.data) return;
    this.boxed = true;
    const data = this.data;
    const ids = grid
      .inBox(left, top, left + width, top + height)
      .filter((k) => !this.greyed[k])
      .map((k) => data.trialIds[this.index[k] as number] as number);
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (ids.length > 0 || !this.additive) this.onPick(ids, this.additive);
  }

  width(): number {
    return Math.max(200, Math.floor(this.el.clientWidth || 320));
  }

  private drawDots(u: uPlot): void {
    const { bbox } = u;
    const ratio = window.devicePixelRatio || 1;
    const count = this.xs.length;
    const px = mapper(u, "x");
    const py = mapper(u, "y");
    // Device pixels on the canvas, and CSS pixels of the plot area for the hit-testing.
    const cx = new Float64Array(count);
    const cy = new Float64Array(count);
    for (let k = 0; k < count; k++) {
      cx[k] = px(this.xs[k] as number);
      cy[k] = py(this.ys[k] as number);
    }
    this.drawn = { cx, cy, left: bbox.left, top: bbox.top, ratio };
    // How far the nearest dot's centre is from the plot's edges, in CSS pixels (tests read it).
    this.el.dataset.inset = count > 0 ? String(Math.floor(leastInset(cx, cy, bbox) / ratio)) : "";
    this.gridCache = null;
    const flags = new Uint8Array(count);
    const ids = this.data?.trialIds ?? [];
    const anySelected = this.selected.size > 0;
    for (let k = 0; k < count; k++) {
      flags[k] =
        (this.best[k] ? BEST : 0) |
        (this.greyed[k] ? GREYED : 0) |
        (anySelected && this.selected.has(ids[this.index[k] as number] as number) ? SELECTED : 0);
    }
    const { left, top, width, height } = bbox;
    const scene: ScatterScene = {
      kind: "scatter",
      canvasWidth: u.ctx.canvas.width,
      canvasHeight: u.ctx.canvas.height,
      ratio,
      bbox: { left, top, width, height },
      cx: this.dots ? cx.slice() : cx,
      cy: this.dots ? cy.slice() : cy,
      flags,
    };
    if (this.dots) void this.dots.paint(scene).then(this.firstPaint);
    else {
      drawScatter(u.ctx, scene);
      this.firstPaint();
    }
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

  /** The dot nearest the cursor (CSS pixels), within HOVER_PX; greyed dots are skipped. */
  private hover(u: uPlot): void {
    const left = u.cursor.left ?? -1;
    const top = u.cursor.top ?? -1;
    const data = this.data;
    if (left < 0 || !data) return this.show(null);
    const grid = this.grid();
    if (!grid) return this.show(null);
    const ratio = window.devicePixelRatio || 1;
    const nearest = grid.nearest(left, top, HOVER_PX, (k) => (this.greyed[k] ? -HOVER_PX : this.best[k] ? 3 : 0));
    if (nearest < 0) return this.show(null);
    const at: [number, number] = [
      (mapper(u, "x")(this.xs[nearest] as number) - u.bbox.left) / ratio,
      (mapper(u, "y")(this.ys[nearest] as number) - u.bbox.top) / ratio,
    ];
    const i = this.index[nearest] as number;
    const id = data.trialIds[i] as number;
    this.show(id);
    this.tooltip.replaceChildren(
      h("strong", {}, `Trial ${id}${this.best[nearest] ? " (best)" : ""}${this.selected.has(id) ? ", selected" : ""}`),
      h("span", {}, `${data.axis.name}: ${formatValue(data.axis.values[i])}`),
      h("span", {}, `${data.metricName}: ${formatNumber(this.ys[nearest])}`),
    );
    const flip = at[0] > u.over.clientWidth - 140;
    this.tooltip.style.transform = `translate(${flip ? at[0] - 10 : at[0] + 10}px, ${Math.max(0, at[1] - 40)}px)${flip ? " translateX(-100%)" : ""}`;
  }

  private show(id: number | null): void {
    this.hovered = id;
    this.tooltip.hidden = id === null;
    if (this.plot) this.plot.over.style.cursor = id === null ? "" : "pointer";
  }
}
