// Parallel coordinates on a canvas: one vertical axis per hyperparameter
// that varies, the searcher metric last; one polyline per trial coloured by its metric
// (viridis, brighter = better); the best trials drawn on top, thick, in the highlight colour.
// Hovering a line shows its trial on a second canvas (the many lines are not redrawn), and
// so do the selected trials' lines; a click selects the trial (shift, ctrl or cmd: adds it).
// Dragging along an axis brushes a range: lines outside every brushed range turn grey and
// `brushFilter` tells the other views which trials are kept.

import { h } from "../dom";
import { chartTheme } from "../theme";
import { formatAxisNumbers, formatNumber, formatValue } from "../format";
import { BEST_COLOR, metricShade, sequentialColor, sequentialRgb } from "../palette";
import { NOT_DRAWN, type ParallelScene, traceRow } from "./chart-paint";
import { ChartSurface } from "./chart-surface";
import type { Axis } from "./hp-axis";
import { niceTicks } from "./plot-margin";
import { SELECTED_COLOR, isAdditive } from "./selection";

export interface ParallelData {
  trialIds: readonly number[];
  /** The hyperparameter axes, then the metric's axis last. */
  axes: readonly Axis[];
  metric: Axis;
  smallerIsBetter: boolean;
  best: ReadonlySet<number>;
}

const PAD = { left: 56, right: 84, top: 46, bottom: 22 };
const HOVER_PX = 6;
const GREY: [number, number, number] = [150, 158, 172];
/** Above this many trials the lines are thinner, fainter and drawn by colour bucket. */
const MANY = 500;

/** A brushed range along an axis: [low, high], 0 (bottom) to 1 (top). */
export type BrushRange = readonly [number, number];

/** Keeps row i when, on every brushed axis, its normalized position (null: no value) lies in
 * the range (ends included). */
export function withinBrushes(
  brushes: readonly (readonly [(i: number) => number | null, BrushRange])[],
): (i: number) => boolean {
  return (i) =>
    brushes.every(([position, [lo, hi]]) => {
      const t = position(i);
      return t != null && t >= lo - 1e-9 && t <= hi + 1e-9;
    });
}

export class ParallelCoordinates {
  readonly el: HTMLElement;
  /** The many lines and the axes, drawn by the charts' worker where the browser can. */
  private readonly base: ChartSurface;
  private readonly overlay: HTMLCanvasElement;
  private readonly tooltip: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly stack: HTMLElement;
  private data: ParallelData | null = null;
  /** The y pixel of trial i at axis k is ys[i * axes + k] (NaN where it has no value). */
  private ys = new Float32Array(0);
  private axisCount = 0;
  private xs: number[] = [];
  private width = 0;
  private hovered = -1;
  /** Where the pointer was when it last hovered a line (CSS pixels on the chart). */
  private pointer: [number, number] = [0, 0];
  /** Nothing drawn on the overlay since it was last cleared: with nothing to draw on it, it is
   * left alone (a canvas drawn on the main thread costs the page a copy each frame). */
  private overlayBlank = true;
  private selected: ReadonlySet<number> = new Set();
  private kept: ((i: number) => boolean) | null = null;
  private readonly resizeObserver: ResizeObserver;
  /** Brushed ranges, by axis index: [low, high] along the axis, 0 (bottom) to 1 (top). */
  private readonly brushes = new Map<number, [number, number]>();
  private dragging: { axis: number; from: number } | null = null;
  /** What the last draw drew, for the legend: grey lines (no metric, or outside a brush),
   * those outside a brush, the best trials' lines. */
  private marks = { grey: 0, outside: 0, best: 0 };
  private dragged = false;

  constructor(
    private readonly height: number,
    private readonly onPick: (trialId: number, additive: boolean) => void,
    private readonly onBrush: () => void = () => undefined,
  ) {
    this.base = new ChartSurface("pc-base", () => this.draw());
    this.overlay = h("canvas", { class: "pc-overlay" });
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.legend = h("div", { class: "pc-legend" });
    this.stack = h(
      "div",
      { class: "pc-stack", style: `height: ${height}px`, role: "img" },
      this.base.el,
      this.overlay,
      this.tooltip,
    );
    this.el = h(
      "div",
      { class: "chart parallel", "data-testid": "parallel-coordinates", "data-trial-count": 0 },
      this.stack,
      this.legend,
    );
    this.overlay.addEventListener("mousemove", (e) => this.hover(e));
    this.overlay.addEventListener("mouseleave", () => this.setHovered(-1));
    this.overlay.addEventListener("mousedown", (e) => this.startBrush(e));
    window.addEventListener("mousemove", (e) => this.moveBrush(e));
    window.addEventListener("mouseup", () => this.endBrush());
    this.overlay.addEventListener("click", (event) => {
      if (this.dragged) {
        this.dragged = false;
        return;
      }
      const id = this.data?.trialIds[this.hovered];
      if (id !== undefined) this.onPick(id, isAdditive(event));
    });
    this.resizeObserver = new ResizeObserver(() => {
      if (this.data && Math.floor(this.el.clientWidth) !== this.width) this.draw();
    });
    this.resizeObserver.observe(this.el);
  }

  /** Draw `data`; resolves once the lines are drawn. */
  setData(data: ParallelData): Promise<void> {
    this.data = data;
    return this.draw();
  }

  dispose(): void {
    this.resizeObserver.disconnect();
    this.base.dispose();
  }

  /** Outline these trials' lines (drawn on the overlay: the many lines stay as they are). */
  setSelected(ids: ReadonlySet<number>): void {
    if (ids === this.selected) return;
    this.selected = ids;
    this.el.dataset.selected = String(ids.size);
    if (this.data) this.renderLegend(this.data);
    if (this.data) this.setHovered(this.hovered, ...this.pointer);
  }

  /** Whether trial i (data order) is inside every brushed range; null: nothing brushed. */
  brushFilter(): ((i: number) => boolean) | null {
    if (this.brushes.size === 0 || !this.data) return null;
    const axes = this.allAxes();
    return withinBrushes(
      [...this.brushes].flatMap(([k, range]) => {
        const axis = axes[k];
        return axis ? [[(i: number) => axis.normalized(i), range] as const] : [];
      }),
    );
  }

  private axisAt(mx: number): number {
    return this.xs.findIndex((x) => Math.abs(x - mx) <= 10);
  }

  private along(my: number): number {
    const plotH = this.height - PAD.top - PAD.bottom;
    return Math.max(0, Math.min(1, 1 - (my - PAD.top) / plotH));
  }

  private startBrush(event: MouseEvent): void {
    const rect = this.overlay.getBoundingClientRect();
    const axis = this.axisAt(event.clientX - rect.left);
    if (axis < 0) return;
    event.preventDefault();
    this.dragging = { axis, from: this.along(event.clientY - rect.top) };
    this.dragged = false;
  }

  private moveBrush(event: MouseEvent): void {
    if (!this.dragging) return;
    const rect = this.overlay.getBoundingClientRect();
    const to = this.along(event.clientY - rect.top);
    const { axis, from } = this.dragging;
    if (Math.abs(to - from) * (this.height - PAD.top - PAD.bottom) < 3) return;
    this.dragged = true;
    this.brushes.set(axis, [Math.min(from, to), Math.max(from, to)]);
    this.setHovered(-1);
  }

  private endBrush(): void {
    if (!this.dragging) return;
    const { axis } = this.dragging;
    this.dragging = null;
    if (!this.dragged) this.brushes.delete(axis); // a click on an axis clears its brush
    this.dragged = true; // the click that follows is not a pick
    this.el.dataset.brushed = String(this.brushes.size);
    this.draw();
    this.onBrush();
  }

  private drawBrushes(ctx: CanvasRenderingContext2D): void {
    const plotH = this.height - PAD.top - PAD.bottom;
    for (const [k, [lo, hi]] of this.brushes) {
      const x = this.xs[k];
      if (x === undefined) continue;
      ctx.fillStyle = "rgba(47, 93, 158, 0.22)";
      ctx.strokeStyle = "rgba(47, 93, 158, 0.9)";
      ctx.lineWidth = 1;
      const top = PAD.top + (1 - hi) * plotH;
      ctx.fillRect(x - 8, top, 16, (hi - lo) * plotH);
      ctx.strokeRect(x - 8, top, 16, (hi - lo) * plotH);
    }
  }

  private drawSelected(ctx: CanvasRenderingContext2D): void {
    const data = this.data;
    if (!data || this.selected.size === 0) return;
    const rows: number[] = [];
    data.trialIds.forEach((id, i) => {
      if (this.selected.has(id)) rows.push(i);
    });
    for (const [width, colour] of [
      [4.5, "rgba(255, 255, 255, 0.9)"],
      [2, SELECTED_COLOR],
    ] as const) {
      ctx.lineWidth = width;
      ctx.strokeStyle = colour;
      ctx.beginPath();
      for (const i of rows) this.traceRow(ctx, i);
      ctx.stroke();
    }
  }

  private allAxes(): Axis[] {
    return this.data ? [...this.data.axes, this.data.metric] : [];
  }

  /** Lay out and draw every line (on the base canvas, by the charts' worker where the browser
   * can: resolves once drawn); the overlay, the legend and the hit-testing stay here. */
  draw(): Promise<void> {
    const data = this.data;
    if (!data) return Promise.resolve();
    const axes = this.allAxes();
    this.width = Math.max(320, Math.floor(this.el.clientWidth || 800));
    const ratio = window.devicePixelRatio || 1;
    this.overlay.width = Math.round(this.width * ratio);
    this.overlay.height = Math.round(this.height * ratio);
    this.overlay.style.width = `${this.width}px`;
    this.overlay.style.height = `${this.height}px`;
    this.overlayBlank = true; // sized: cleared

    const plotW = this.width - PAD.left - PAD.right;
    const plotH = this.height - PAD.top - PAD.bottom;
    this.xs = axes.map((_a, k) => PAD.left + (axes.length === 1 ? plotW / 2 : (k * plotW) / (axes.length - 1)));
    const n = data.trialIds.length;
    const m = axes.length;
    this.axisCount = m;
    this.ys = new Float32Array(n * m);
    axes.forEach((axis, k) => {
      for (let i = 0; i < n; i++) {
        const t = axis.normalized(i);
        this.ys[i * m + k] = t == null ? Number.NaN : PAD.top + (1 - t) * plotH;
      }
    });

    // Within one bucket's path overlaps do not add up; across the buckets they do.
    const alpha = n <= 50 ? 0.85 : n <= MANY ? 0.5 : 0.12;
    const score = (i: number) => {
      const t = data.metric.normalized(i);
      if (t == null) return -1;
      return data.smallerIsBetter ? 1 - t : t;
    };
    // Colour buckets drawn in order: trials without a metric (grey) first, then from worse
    // to better, so the better ones stay visible on top; the best last, on their own.
    const BUCKETS = 32;
    const bucket = new Uint8Array(n);
    const best: [number, string][] = [];
    const kept = this.brushFilter();
    this.kept = kept;
    let keptCount = 0;
    let grey = 0;
    for (let i = 0; i < n; i++) {
      const inside = !kept || kept(i);
      if (inside) keptCount += 1;
      if (!inside)
        bucket[i] = 0; // outside a brush: grey
      else if (data.best.has(data.trialIds[i] as number)) {
        const s = score(i);
        bucket[i] = NOT_DRAWN;
        best.push([i, s < 0 ? BEST_COLOR : sequentialColor(metricShade(s * 0.9), 1)]);
      } else {
        const s = score(i);
        bucket[i] = s < 0 ? 0 : 1 + Math.round(s * BUCKETS);
      }
      if (bucket[i] === 0) grey += 1;
    }
    const colours = Array.from({ length: BUCKETS + 2 }, (_x, b): [number, number, number] =>
      b === 0 ? GREY : sequentialRgb(metricShade(((b - 1) / BUCKETS) * 0.9)),
    );
    this.el.dataset.worstColor = `rgb(${(colours[1] ?? GREY).join(", ")})`;
    // Many lines: one path per colour bucket, one device pixel wide (wider strokes of many
    // overlapping lines cost Skia ten times more without a GPU). Few: one stroke each.
    const theme = chartTheme();
    const scene: ParallelScene = {
      kind: "parallel",
      width: this.width,
      height: this.height,
      ratio,
      xs: this.xs,
      top: PAD.top,
      plotH,
      ys: this.ys.slice(),
      axisCount: m,
      bucket,
      strokes: colours.map(([r, g, b], k) => `rgba(${r}, ${g}, ${b}, ${k === 0 ? Math.min(0.35, alpha) : alpha})`),
      many: n > MANY,
      best,
      axes: axes.map((axis, k) => ({
        title: axis.name,
        sub: k === axes.length - 1 ? "metric" : axis.kind === "log" ? "log scale" : "",
        ticks: ticks(axis),
      })),
      theme: { text: theme.text, line: theme.line, halo: theme.halo, grid: theme.grid },
    };
    const painted = this.base.paint(scene);
    this.el.dataset.trialCount = String(n);
    this.el.dataset.kept = String(keptCount);
    this.stack.setAttribute(
      "aria-label",
      `Parallel coordinates of ${n} trials over ${axes.map((a) => a.name).join(", ")}; the ${data.best.size} best trials highlighted.`,
    );
    this.marks = { grey, outside: kept ? n - keptCount : 0, best: best.length };
    this.renderLegend(data);
    this.setHovered(-1);
    return painted;
  }

  private strokeRow(ctx: CanvasRenderingContext2D, i: number): void {
    ctx.beginPath();
    this.traceRow(ctx, i);
    ctx.stroke();
  }

  /** Add trial i's polyline to the current path (broken where it has no value). */
  private traceRow(ctx: CanvasRenderingContext2D, i: number): void {
    traceRow(ctx, this.xs, this.ys, this.axisCount, i);
  }

  /** The legend of the marks drawn: the metric's colours, and only those of the best, grey
   * and selected lines that are on the chart. */
  private renderLegend(data: ParallelData): void {
    const better = data.smallerIsBetter ? "lower" : "higher";
    const entry = (swatch: HTMLElement, label: string, mark: string) =>
      h("span", { class: "pc-legend-item", "data-testid": "legend-item", "data-mark": mark }, swatch, label);
    const { grey, outside, best } = this.marks;
    const noMetric = grey - outside;
    const greyLabel =
      outside > 0 && noMetric > 0
        ? "no metric yet, or outside the brushed ranges"
        : outside > 0
          ? "outside the brushed ranges"
          : "no metric yet";
    this.legend.replaceChildren(
      entry(
        h("span", { class: "gradient", "aria-hidden": "true" }),
        `${data.metric.name}: worse → better (${better} is better)`,
        "gradient",
      ),
      best > 0
        ? entry(
            h("span", { class: "swatch best", style: `border-color: ${sequentialColor(metricShade(0.9))}` }),
            best === 1 ? "the best trial (thick, outlined)" : `best ${best} trials (thick, outlined)`,
            "best",
          )
        : "",
      grey > 0 ? entry(h("span", { class: "swatch", style: "border-color: #969eac" }), greyLabel, "grey") : "",
      this.selected.size > 0
        ? entry(h("span", { class: "swatch", style: `border-color: ${SELECTED_COLOR}` }), "selected", "selected")
        : "",
      h(
        "span",
        { class: "muted" },
        "Drag along an axis to brush a range (every view keeps only the trials inside); click the axis to clear it. Click a line to select its trial, shift-click to add.",
      ),
    );
  }

  private hover(event: MouseEvent): void {
    if (!this.data || this.xs.length < 2) return;
    const rect = this.overlay.getBoundingClientRect();
    const mx = event.clientX - rect.left;
    const my = event.clientY - rect.top;
    let k = 0;
    while (k < this.xs.length - 2 && mx > (this.xs[k + 1] as number)) k++;
    const x0 = this.xs[k] as number;
    const x1 = this.xs[k + 1] as number;
    const f = Math.max(0, Math.min(1, (mx - x0) / (x1 - x0)));
    let nearest = -1;
    let nearestD = HOVER_PX;
    const m = this.axisCount;
    for (let i = 0; i < this.data.trialIds.length; i++) {
      const y0 = this.ys[i * m + k] as number;
      const y1 = this.ys[i * m + k + 1] as number;
      if (Number.isNaN(y0) || Number.isNaN(y1) || (this.kept && !this.kept(i))) continue;
      const d = Math.abs(y0 + (y1 - y0) * f - my);
      if (d < nearestD || (d === nearestD && this.data.best.has(this.data.trialIds[i] as number))) {
        nearestD = d;
        nearest = i;
      }
    }
    this.setHovered(nearest, mx, my);
  }

  private setHovered(i: number, mx = 0, my = 0): void {
    this.hovered = i;
    this.pointer = [mx, my];
    this.overlay.style.cursor = i < 0 ? "" : "pointer";
    const nothing = i < 0 && this.brushes.size === 0 && this.selected.size === 0;
    const ctx = nothing && this.overlayBlank ? null : this.overlay.getContext("2d");
    if (ctx && this.data) {
      const ratio = window.devicePixelRatio || 1;
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, this.width, this.height);
      this.drawBrushes(ctx);
      this.drawSelected(ctx);
      this.overlayBlank = nothing;
    }
    if (!ctx || !this.data || i < 0) {
      this.tooltip.hidden = true;
      return;
    }
    ctx.lineWidth = 5;
    ctx.strokeStyle = "rgba(255, 255, 255, 0.9)";
    this.strokeRow(ctx, i);
    ctx.lineWidth = 2.5;
    ctx.strokeStyle = "#111827";
    this.strokeRow(ctx, i);
    const id = this.data.trialIds[i];
    this.tooltip.replaceChildren(
      h(
        "strong",
        {},
        `Trial ${id}${this.data.best.has(id as number) ? " (best)" : ""}${this.selected.has(id as number) ? ", selected" : ""}`,
      ),
      ...this.allAxes().map((axis) =>
        h(
          "span",
          {},
          `${axis.name}: ${axis === this.data?.metric ? formatNumber(axis.position(i)) : formatValue(axis.values[i])}`,
        ),
      ),
    );
    this.tooltip.hidden = false;
    const flip = mx > this.width - 220;
    this.tooltip.style.transform = `translate(${flip ? mx - 14 : mx + 14}px, ${Math.max(0, my - 20)}px)${flip ? " translateX(-100%)" : ""}`;
  }
}

/** Up to ~6 labelled ticks at normalized positions along an axis. */
function ticks(axis: Axis): [number, string][] {
  if (axis.kind === "categorical") {
    const count = axis.categories.length;
    const step = Math.ceil(count / 12);
    return axis.categories
      .map((c, i): [number, string] => [count === 1 ? 0.5 : i / (count - 1), c])
      .filter((_t, i) => i % step === 0 || i === count - 1);
  }
  if (axis.min === axis.max) return [[0.5, formatNumber(axis.min)]];
  let at: [number, number][];
  if (axis.kind === "log") {
    const lo = Math.log10(axis.min);
    const hi = Math.log10(axis.max);
    at = [[0, axis.min]];
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
      const t = (e - lo) / (hi - lo);
      if (t > 0.06 && t < 0.94) at.push([t, 10 ** e]);
    }
    at.push([1, axis.max]);
  } else {
    const span = axis.max - axis.min;
    at = niceTicks(axis.min, axis.max).map((v): [number, number] => [(v - axis.min) / span, v]);
  }
  // One number format per axis.
  const labels = formatAxisNumbers(at.map(([, v]) => v));
  return at.map(([t], i): [number, string] => [t, labels[i] ?? ""]);
}
