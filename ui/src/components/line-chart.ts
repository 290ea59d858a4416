// Line charts: learning curves of many trials, or a trial's own metrics. The lines and axes are
// drawn by the charts' worker (chart-surface.ts, chart-paint.ts' "lines" scene), off the page's
// main thread; the page keeps the scales, the hit-testing and what lies over the canvas (the
// tooltip, the marker, the zoom's box, the legend). Series may have different x values; a
// series' gaps (null values) are spanned. The best trials draw last (on top), thicker and
// opaque; the others thin and translucent. Hover shows the nearest point's trial and value, a
// click picks that trial (`onPick`, told whether shift, ctrl or cmd was held), a drag along x
// zooms (a double click zooms back out).

import { h } from "../dom";
import { formatNumber } from "../format";
import { withAlpha } from "../palette";
import { chartTheme } from "../theme";
import { FONT, type LineStyle, type Ticks } from "./chart-paint";
import { ChartSurface } from "./chart-surface";
import { labelledTicks, paddedRange } from "./plot-margin";
import { isAdditive } from "./selection";

export type Point = [number, number | null];

export interface LineSeries {
  /** A trial id (what a click opens), or any number unique in the chart. */
  id: number;
  label: string;
  /** Sorted by x. */
  points: Point[];
  color: string;
  /** A best trial: drawn on top, thicker and opaque. */
  emphasis: boolean;
  dash?: number[];
}

export interface LineChartOptions {
  testId?: string;
  height: number;
  xLabel: string;
  yLabel: string;
  /** The message shown while there is nothing to draw. */
  emptyText: string;
  onPick?: (id: number, additive: boolean) => void;
  /** Where a series' legend entry links to (a trial's page). */
  linkOf?: (id: number) => string;
  /** A legend of the series under the chart; by default, when there are at most 12. */
  legend?: boolean;
  /** The x axis' range given the data's (e.g. a trial's duration, so that one sample is not a
   * dot on an axis of its own making); by default the data's, padded when it is one value. */
  xRange?: (min: number, max: number) => [number, number];
}

const HOVER_RADIUS_PX = 28;
const AXIS_GAP_PX = 5;
const AXIS_TICK_PX = 10;
/** The room of an axis' name (the y axis' is written upwards along the left edge). */
const LABEL_PX = 24;
const PAD_TOP = 10;
const PAD_RIGHT = 16;
/** Below the plot: the x ticks' labels, then the axis' name. */
const PAD_BOTTOM = 40;
/** A drag shorter than this (CSS pixels) is a click, not a zoom. */
const DRAG_PX = 4;
/** Above this many series the others are drawn thinner and more translucent. */
const MANY_SERIES = 20;

/** The x axis' range for [`min`, `max`] asked for: the data's extent, or a part of it zoomed
 * into. A request that covers the data (`extent`) is the automatic range: `xRange`'s for the
 * data's own extent, else that extent padded when it is one value. A narrower one (a zoom) is
 * kept as asked. */
export function xScaleRange(
  min: number | null,
  max: number | null,
  extent: [number, number] | null,
  xRange?: (min: number, max: number) => [number, number],
): [number, number] {
  const known = min != null && max != null && Number.isFinite(min) && Number.isFinite(max);
  // A range of one value is widened around it (the value itself, or a unit either side of 0).
  const padded = (lo: number | null, hi: number | null) =>
    paddedRange(lo ?? Number.NaN, hi ?? Number.NaN, { fraction: 0 });
  if (!known || extent === null) return padded(min, max);
  if (min > extent[0] || max < extent[1]) return [min, max];
  return xRange ? xRange(extent[0], extent[1]) : padded(extent[0], extent[1]);
}

let measurer: CanvasRenderingContext2D | null | undefined;

/** The widest of `texts` in the charts' font (CSS pixels). */
function textWidth(texts: readonly string[]): number {
  if (measurer === undefined) measurer = h("canvas").getContext("2d");
  let widest = 0;
  if (measurer) measurer.font = FONT;
  for (const text of texts) widest = Math.max(widest, measurer ? measurer.measureText(text).width : 7 * text.length);
  return widest;
}

/** The scales of a drawn chart: data to CSS pixels of the plot area (its top-left corner 0, 0). */
interface Scales {
  xLo: number;
  xHi: number;
  yLo: number;
  yHi: number;
  width: number;
  height: number;
}

function toX(s: Scales, x: number): number {
  return ((x - s.xLo) / (s.xHi - s.xLo)) * s.width;
}

function toY(s: Scales, y: number): number {
  return (1 - (y - s.yLo) / (s.yHi - s.yLo)) * s.height;
}

function finite(y: number | null): y is number {
  return y != null && Number.isFinite(y);
}

export class LineChart {
  readonly el: HTMLElement;
  private readonly surface: ChartSurface;
  /** Over the plot area: takes the pointer, holds the tooltip, the marker and the zoom's box. */
  private readonly over: HTMLElement;
  private readonly zoomBox: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly marker: HTMLElement;
  private readonly legendEl: HTMLElement | null;
  /** In drawing order: the others first, the emphasised on top. */
  private series: LineSeries[] = [];
  /** The smallest and largest x of the points drawn (null: none). */
  private xExtent: [number, number] | null = null;
  /** The x range zoomed into (null: the automatic range). */
  private zoom: [number, number] | null = null;
  private scales: Scales | null = null;
  private drawnWidth = 0;
  private hovered: LineSeries | null = null;
  private dragFrom: number | null = null;
  private down: [number, number] | null = null;
  private paintWaiters: (() => void)[] = [];
  private readonly resizeObserver: ResizeObserver;

  constructor(private readonly options: LineChartOptions) {
    this.surface = new ChartSurface("chart-canvas", () => this.draw());
    this.empty = h("div", { class: "chart-empty", hidden: true }, options.emptyText);
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.marker = h("div", { class: "chart-marker", hidden: true });
    this.zoomBox = h("div", { class: "chart-zoom", hidden: true });
    this.over = h("div", { class: "chart-over" }, this.zoomBox, this.marker, this.tooltip);
    this.legendEl = options.legend === false ? null : h("ul", { class: "chart-legend" });
    this.el = h(
      "div",
      {
        class: "chart line-chart",
        "data-testid": options.testId ?? null,
        "data-series-count": 0,
      },
      h(
        "div",
        { class: "chart-plot", role: "img", "aria-label": `${options.yLabel} by ${options.xLabel}` },
        this.surface.el,
        this.over,
        this.empty,
      ),
      this.legendEl,
    );
    this.attachPointer();
    // Drawn again at its new width once drawn at all (before its first data, nothing to draw).
    this.resizeObserver = new ResizeObserver(() => {
      if (this.drawnWidth > 0 && Math.abs(this.width() - this.drawnWidth) >= 1) this.draw();
    });
    this.resizeObserver.observe(this.el);
  }

  /** Draw these series. */
  setData(series: LineSeries[]): void {
    const ordered = [...series.filter((s) => !s.emphasis), ...series.filter((s) => s.emphasis)];
    const drawn = ordered.filter((s) => s.points.some((p) => finite(p[1])));
    this.el.dataset.seriesCount = String(drawn.length);
    this.empty.hidden = drawn.length > 0;
    this.renderLegend(series);
    let low = Infinity;
    let high = -Infinity;
    for (const s of ordered)
      for (const [x, y] of s.points) {
        if (!finite(y)) continue;
        if (x < low) low = x;
        if (x > high) high = x;
      }
    this.xExtent = low <= high ? [low, high] : null;
    this.series = ordered;
    this.draw();
  }

  setEmptyText(text: string): void {
    this.empty.textContent = text;
  }

  /** Resolves once the chart has drawn a frame with data on its canvas. */
  whenPainted(): Promise<void> {
    return new Promise((resolve) => this.paintWaiters.push(resolve));
  }

  dispose(): void {
    this.resizeObserver.disconnect();
    this.surface.dispose();
  }

  private width(): number {
    return Math.max(240, Math.floor(this.el.clientWidth || this.el.parentElement?.clientWidth || 640));
  }

  /** Scales, axes and the lines' points in CSS pixels, sent to be drawn. */
  private draw(): void {
    const width = this.width();
    const height = this.options.height;
    this.drawnWidth = width;
    const extent = this.xExtent;
    const [xLo, xHi] = xScaleRange(
      this.zoom?.[0] ?? extent?.[0] ?? null,
      this.zoom?.[1] ?? extent?.[1] ?? null,
      extent,
      this.options.xRange,
    );
    this.el.dataset.xRange = `${xLo},${xHi}`;
    // The y range: the values inside the x range.
    let yMin = Infinity;
    let yMax = -Infinity;
    for (const s of this.series)
      for (const [x, y] of s.points) {
        if (!finite(y) || x < xLo || x > xHi) continue;
        if (y < yMin) yMin = y;
        if (y > yMax) yMax = y;
      }
    const [yLo, yHi] = yMin <= yMax ? paddedRange(yMin, yMax) : [0, 1];
    const plotH = height - PAD_TOP - PAD_BOTTOM;
    const yTicks = labelledTicks(yLo, yHi, Math.max(2, Math.min(8, Math.floor(plotH / 40))));
    // The y axis as wide as its widest label, the tick and the gap: no label clipped.
    const widest = textWidth(yTicks.map(([, label]) => label));
    const yAxis = Math.max(40, Math.ceil(widest + AXIS_TICK_PX + AXIS_GAP_PX + 4));
    const pad = { left: LABEL_PX + yAxis, right: PAD_RIGHT, top: PAD_TOP, bottom: PAD_BOTTOM };
    const plotW = Math.max(1, width - pad.left - pad.right);
    const scales: Scales = { xLo, xHi, yLo, yHi, width: plotW, height: plotH };
    this.scales = scales;
    const xTicks = labelledTicks(xLo, xHi, Math.max(2, Math.min(10, Math.floor(plotW / 90))));
    Object.assign(this.el.dataset, {
      yTicksPx: String(Math.ceil(widest)),
      yAxisPx: String(yAxis),
      yLabelPx: String(Math.ceil(textWidth([this.options.yLabel]))),
      plotHeightPx: String(Math.floor(plotH)),
    });
    Object.assign(this.over.style, {
      left: `${pad.left}px`,
      top: `${pad.top}px`,
      width: `${plotW}px`,
      height: `${plotH}px`,
    });
    // Every series' points, the gaps spanned.
    let total = 0;
    for (const s of this.series) for (const p of s.points) if (finite(p[1])) total++;
    const xy = new Float32Array(2 * total);
    const starts = new Uint32Array(this.series.length + 1);
    const many = this.series.length > MANY_SERIES;
    const styles: LineStyle[] = [];
    let at = 0;
    this.series.forEach((s, k) => {
      for (const [x, y] of s.points) {
        if (!finite(y)) continue;
        xy[2 * at] = pad.left + toX(scales, x);
        xy[2 * at + 1] = pad.top + toY(scales, y);
        at++;
      }
      starts[k + 1] = at;
      // A line needs two points; a series with very few shows them as dots as well.
      styles.push({
        color: s.emphasis ? s.color : withAlpha(s.color, many ? 0.45 : 0.7),
        width: s.emphasis ? 2.5 : many ? 1 : 1.5,
        dash: s.dash,
        dot: s.points.length <= 2 ? (s.emphasis ? 3.5 : 2.5) : 0,
      });
    });
    const { axis, line, halo, grid } = chartTheme();
    const place = (ticks: [number, string][], to: (v: number) => number): Ticks =>
      ticks.map(([v, label]) => [to(v), label]);
    void this.surface
      .paint({
        kind: "lines",
        width,
        height,
        ratio: window.devicePixelRatio || 1,
        theme: { text: axis, line, halo, grid },
        xTicks: place(xTicks, (v) => pad.left + toX(scales, v)),
        yTicks: place(yTicks, (v) => pad.top + toY(scales, v)),
        xLabel: this.options.xLabel,
        yLabel: this.options.yLabel,
        xGrid: true,
        pad,
        xy,
        starts,
        styles,
      })
      .then(() => this.painted());
  }

  private painted(): void {
    if (this.el.dataset.seriesCount === "0") return;
    const waiters = this.paintWaiters;
    this.paintWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private renderLegend(series: readonly LineSeries[]): void {
    if (!this.legendEl) return;
    const shown = this.options.legend === true || series.length <= 12;
    this.legendEl.hidden = !shown;
    if (!shown) return;
    this.legendEl.replaceChildren(
      ...series.map((s) => {
        const swatch = h("span", {
          class: "swatch",
          style: `border-color: ${s.color}; border-top-width: ${s.emphasis ? 4 : 2}px`,
        });
        const link = this.options.linkOf?.(s.id);
        return h("li", {}, link ? h("a", { href: link }, swatch, s.label) : [swatch, s.label]);
      }),
    );
  }

  /** The pointer's position over the plot area (CSS pixels). */
  private at(event: MouseEvent): [number, number] {
    const rect = this.over.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  }

  private attachPointer(): void {
    const over = this.over;
    over.addEventListener("mousedown", (event) => {
      if (event.button !== 0) return;
      event.preventDefault(); // no text selection while dragging
      this.down = [event.clientX, event.clientY];
      this.dragFrom = this.at(event)[0];
      const move = (e: MouseEvent) => this.dragTo(this.at(e)[0]);
      const up = (e: MouseEvent) => {
        window.removeEventListener("mousemove", move);
        window.removeEventListener("mouseup", up);
        this.endDrag(this.at(e)[0]);
      };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
    over.addEventListener("mousemove", (event) => {
      if (this.dragFrom === null) this.hover(...this.at(event));
    });
    over.addEventListener("click", (event) => {
      const moved = this.down ? Math.hypot(event.clientX - this.down[0], event.clientY - this.down[1]) : 0;
      if (moved < DRAG_PX && this.hovered && this.options.onPick)
        this.options.onPick(this.hovered.id, isAdditive(event));
    });
    over.addEventListener("dblclick", () => {
      if (this.zoom === null) return;
      this.zoom = null;
      this.draw();
    });
    over.addEventListener("mouseleave", () => this.showHover(null));
  }

  /** A drag along x: its box. */
  private dragTo(x: number): void {
    const from = this.dragFrom;
    const s = this.scales;
    if (from === null || !s) return;
    const to = Math.max(0, Math.min(s.width, x));
    this.zoomBox.hidden = Math.abs(to - from) < DRAG_PX;
    this.zoomBox.style.left = `${Math.min(from, to)}px`;
    this.zoomBox.style.width = `${Math.abs(to - from)}px`;
    if (!this.zoomBox.hidden) this.showHover(null);
  }

  /** The drag ended at `x`: zoom into what it spanned (a click spans nothing). */
  private endDrag(x: number): void {
    const from = this.dragFrom;
    const s = this.scales;
    this.dragFrom = null;
    this.zoomBox.hidden = true;
    if (from === null || !s) return;
    const to = Math.max(0, Math.min(s.width, x));
    if (Math.abs(to - from) < DRAG_PX) return;
    const value = (px: number) => s.xLo + (px / s.width) * (s.xHi - s.xLo);
    this.zoom = [value(Math.min(from, to)), value(Math.max(from, to))];
    this.draw();
  }

  /** Find the point nearest the cursor (in pixels) over all series. */
  private hover(left: number, top: number): void {
    const s = this.scales;
    if (!s || left < 0 || top < 0 || left > s.width || top > s.height) {
      this.showHover(null);
      return;
    }
    const xValue = s.xLo + (left / s.width) * (s.xHi - s.xLo);
    let best: { s: LineSeries; x: number; y: number; px: number; py: number; d: number } | null = null;
    for (const series of this.series) {
      const pts = series.points;
      let lo = 0;
      let hi = pts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((pts[mid] as Point)[0] < xValue) lo = mid + 1;
        else hi = mid;
      }
      for (let i = Math.max(0, lo - 2); i <= Math.min(pts.length - 1, lo + 2); i++) {
        const [x, y] = pts[i] as Point;
        if (!finite(y)) continue;
        const px = toX(s, x);
        const py = toY(s, y);
        const d = Math.hypot(px - left, py - top);
        if (d < HOVER_RADIUS_PX && (!best || d < best.d)) best = { s: series, x, y, px, py, d };
      }
    }
    if (!best) {
      this.showHover(null);
      return;
    }
    this.showHover(best.s);
    this.marker.style.transform = `translate(${best.px}px, ${best.py}px)`;
    this.marker.style.background = best.s.color;
    this.tooltip.replaceChildren(
      h("strong", {}, best.s.label),
      h("span", {}, `${this.options.yLabel}: ${formatNumber(best.y)}`),
      h("span", { class: "muted" }, `${this.options.xLabel}: ${formatNumber(best.x)}`),
    );
    const flip = best.px > s.width - 200;
    this.tooltip.style.transform = `translate(${flip ? best.px - 12 : best.px + 12}px, ${Math.max(0, best.py - 40)}px)${flip ? " translateX(-100%)" : ""}`;
  }

  private showHover(series: LineSeries | null): void {
    this.hovered = series;
    this.tooltip.hidden = series === null;
    this.marker.hidden = series === null;
    this.over.style.cursor = series && this.options.onPick ? "pointer" : "";
  }
}
