// Line charts on uPlot (canvas): learning curves of many trials, or a trial's own metrics.
// Series may have different x values; they are aligned on the union of the x values with
// gaps spanned. The best trials draw last (on top), thicker and opaque; the others thin and
// translucent. Hover shows the nearest point's trial and value, a click picks that trial
// (`onPick`, told whether shift, ctrl or cmd was held), a drag zooms (a double click zooms
// back out).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "../dom";
import { uplotAxis } from "../theme";
import { formatAxisNumbers, formatNumber } from "../format";
import { withAlpha } from "../palette";
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

/** Tick labels; uPlot passes null for ticks it draws without a label (log scales). */
export function axisValues(_u: uPlot, splits: (number | null)[]): string[] {
  return formatAxisNumbers(splits);
}

const AXIS_GAP_PX = 5;
const AXIS_TICK_PX = 10;

/** The y axis' width: its widest tick label, the tick and the gap (uPlot's axis label has its
 * own room, labelSize), so no label is clipped however wide its numbers are. */
function yAxisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx] as uPlot.Axis & { _size?: number; font?: [string, number] };
  if (cycleNum > 1 && axis._size) return axis._size;
  let widest = 0;
  if (values && values.length > 0) {
    u.ctx.save();
    u.ctx.font = axis.font?.[0] ?? "12px system-ui";
    for (const v of values) widest = Math.max(widest, u.ctx.measureText(v).width / devicePixelRatio);
    u.ctx.restore();
  }
  const size = Math.ceil(widest + AXIS_TICK_PX + AXIS_GAP_PX + 4);
  const chart = u.root.closest<HTMLElement>(".chart");
  if (chart) {
    chart.dataset.yTicksPx = String(Math.ceil(widest));
    chart.dataset.yAxisPx = String(size);
  }
  return Math.max(40, size);
}

/** A range of one value: around it (the value itself, or a unit either side of 0). */
function padded(min: number | null, max: number | null): [number, number] {
  if (min == null || max == null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min !== max) return [min, max];
  const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
  return [min - pad, max + pad];
}

/** The x axis' range when uPlot asks for [`min`, `max`]: the data's extent (which uPlot widens
 * to 0-100 on its own when it is one value) or a part of it zoomed into. A request that covers
 * the data (`extent`) is the automatic range: `xRange`'s for the data's own extent, else that
 * extent padded when it is one value. A narrower one (a zoom) is kept as asked. */
export function xScaleRange(
  min: number | null,
  max: number | null,
  extent: [number, number] | null,
  xRange?: (min: number, max: number) => [number, number],
): [number, number] {
  const known = min != null && max != null && Number.isFinite(min) && Number.isFinite(max);
  if (!known || extent === null) return padded(min, max);
  if (min > extent[0] || max < extent[1]) return [min, max];
  return xRange ? xRange(extent[0], extent[1]) : padded(extent[0], extent[1]);
}

/** The series' points on the union of their x values (uPlot's aligned data). */
function align(series: readonly LineSeries[]): uPlot.AlignedData {
  let total = 0;
  for (const s of series) total += s.points.length;
  const all = new Float64Array(total);
  let at = 0;
  for (const s of series) for (const p of s.points) all[at++] = p[0];
  all.sort();
  const xs: number[] = [];
  for (let i = 0; i < all.length; i++) {
    const x = all[i] as number;
    if (i === 0 || x !== all[i - 1]) xs.push(x);
  }
  const index = new Map<number, number>();
  xs.forEach((x, i) => index.set(x, i));
  const data: (number | null)[][] = [xs];
  for (const s of series) {
    const ys = new Array<number | null>(xs.length).fill(null);
    for (const [x, y] of s.points) {
      if (y != null && Number.isFinite(y)) ys[index.get(x) as number] = y;
    }
    data.push(ys);
  }
  return data as uPlot.AlignedData;
}

function sameSeries(a: readonly LineSeries[], b: readonly LineSeries[]): boolean {
  return (
    a.length === b.length &&
    a.every((s, i) => {
      const t = b[i];
      return t !== undefined && s.id === t.id && s.emphasis === t.emphasis && s.color === t.color;
    })
  );
}

export class LineChart {
  readonly el: HTMLElement;
  private readonly host: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly marker: HTMLElement;
  private readonly legendEl: HTMLElement | null;
  private plot: uPlot | null = null;
  private series: LineSeries[] = [];
  /** The smallest and largest x of the points drawn (null: none). */
  private xExtent: [number, number] | null = null;
  private hovered: LineSeries | null = null;
  private zoomed = false;
  private paintWaiters: (() => void)[] = [];
  private readonly resizeObserver: ResizeObserver;

  constructor(private readonly options: LineChartOptions) {
    this.host = h("div", {
      class: "chart-canvas",
      role: "img",
      "aria-label": `${options.yLabel} by ${options.xLabel}`,
    });
    this.empty = h("div", { class: "chart-empty", hidden: true }, options.emptyText);
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.marker = h("div", { class: "chart-marker", hidden: true });
    this.legendEl = options.legend === false ? null : h("ul", { class: "chart-legend" });
    this.el = h(
      "div",
      {
        class: "chart",
        "data-testid": options.testId ?? null,
        "data-series-count": 0,
      },
      this.host,
      this.empty,
      this.legendEl,
    );
    this.resizeObserver = new ResizeObserver(() => this.fit());
    this.resizeObserver.observe(this.el);
  }

  /** Draw these series (the chart is rebuilt only when the set of series changed). */
  setData(series: LineSeries[]): void {
    const ordered = [...series.filter((s) => !s.emphasis), ...series.filter((s) => s.emphasis)];
    const drawn = ordered.filter((s) => s.points.some((p) => p[1] != null && Number.isFinite(p[1])));
    this.el.dataset.seriesCount = String(drawn.length);
    this.empty.hidden = drawn.length > 0;
    this.renderLegend(series);
    const data = align(ordered);
    const xs = data[0];
    this.xExtent = xs.length > 0 ? [xs[0] as number, xs[xs.length - 1] as number] : null;
    if (this.plot && sameSeries(ordered, this.series)) {
      this.series = ordered;
      this.plot.setData(data, !this.zoomed);
      return;
    }
    this.series = ordered;
    this.plot?.destroy();
    this.plot = new uPlot(this.plotOptions(ordered), data, this.host);
    this.plot.over.append(this.marker, this.tooltip);
    this.attachPointer(this.plot);
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
    this.plot?.destroy();
    this.plot = null;
  }

  private width(): number {
    return Math.max(240, Math.floor(this.el.clientWidth || this.el.parentElement?.clientWidth || 640));
  }

  private fit(): void {
    if (!this.plot) return;
    const width = this.width();
    if (Math.abs(width - this.plot.width) >= 1) this.plot.setSize({ width, height: this.options.height });
  }

  private plotOptions(series: readonly LineSeries[]): uPlot.Options {
    // A line needs two points; a series with very few points shows them as dots.
    const fewPoints = (_u: uPlot, seriesIdx: number) => (this.series[seriesIdx - 1]?.points.length ?? 0) <= 2;
    return {
      width: this.width(),
      height: this.options.height,
      legend: { show: false },
      cursor: {
        points: { show: false },
        drag: { x: true, y: false, setScale: true },
        focus: { prox: -1 },
      },
      scales: {
        x: {
          time: false,
          range: (_u, min, max) => {
            const [low, high] = xScaleRange(min, max, this.xExtent, this.options.xRange);
            this.el.dataset.xRange = `${low},${high}`;
            return [low, high];
          },
        },
      },
      axes: [
        { ...uplotAxis(), label: this.options.xLabel, values: axisValues, labelSize: 24 },
        { ...uplotAxis(), label: this.options.yLabel, values: axisValues, size: yAxisSize, labelSize: 24 },
      ],
      series: [
        { label: this.options.xLabel },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.emphasis ? s.color : withAlpha(s.color, series.length > 20 ? 0.45 : 0.7),
          width: s.emphasis ? 2.5 : series.length > 20 ? 1 : 1.5,
          dash: s.dash,
          spanGaps: true,
          points: {
            show: fewPoints,
            size: s.emphasis ? 7 : 5,
            fill: s.color,
            stroke: s.color,
          },
        })),
      ],
      hooks: {
        draw: [() => this.painted()],
        setSelect: [(u) => (this.zoomed = u.select.width > 0 || this.zoomed)],
        setCursor: [(u) => this.hover(u)],
      },
    };
  }

  private painted(): void {
    const u = this.plot;
    const yAxis = u?.axes[1] as (uPlot.Axis & { labelFont?: [string, number] }) | undefined;
    if (u && yAxis) {
      // Whether the y axis' label, drawn along it, fits the plot's height (the browser tests).
      u.ctx.save();
      u.ctx.font = yAxis.labelFont?.[0] ?? "bold 12px system-ui";
      const label = u.ctx.measureText(this.options.yLabel).width / devicePixelRatio;
      u.ctx.restore();
      this.el.dataset.yLabelPx = String(Math.ceil(label));
      this.el.dataset.plotHeightPx = String(Math.floor(u.bbox.height / devicePixelRatio));
    }
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

  private attachPointer(u: uPlot): void {
    let down: [number, number] | null = null;
    u.over.addEventListener("mousedown", (e) => (down = [e.clientX, e.clientY]));
    u.over.addEventListener("click", (e) => {
      const moved = down ? Math.hypot(e.clientX - down[0], e.clientY - down[1]) : 0;
      if (moved < 4 && this.hovered && this.options.onPick) this.options.onPick(this.hovered.id, isAdditive(e));
    });
    u.over.addEventListener("dblclick", () => (this.zoomed = false));
    u.over.addEventListener("mouseleave", () => this.showHover(null));
  }

  /** Find the point nearest the cursor (in pixels) over all series. */
  private hover(u: uPlot): void {
    const left = u.cursor.left ?? -1;
    const top = u.cursor.top ?? -1;
    if (left < 0 || top < 0) {
      this.showHover(null);
      return;
    }
    const xValue = u.posToVal(left, "x");
    let best: { s: LineSeries; x: number; y: number; px: number; py: number; d: number } | null = null;
    for (const s of this.series) {
      const pts = s.points;
      let lo = 0;
      let hi = pts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((pts[mid] as Point)[0] < xValue) lo = mid + 1;
        else hi = mid;
      }
      for (let i = Math.max(0, lo - 2); i <= Math.min(pts.length - 1, lo + 2); i++) {
        const [x, y] = pts[i] as Point;
        if (y == null || !Number.isFinite(y)) continue;
        const px = u.valToPos(x, "x");
        const py = u.valToPos(y, "y");
        const d = Math.hypot(px - left, py - top);
        if (d < HOVER_RADIUS_PX && (!best || d < best.d)) best = { s, x, y, px, py, d };
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
    const width = u.over.clientWidth;
    const flip = best.px > width - 200;
    this.tooltip.style.transform = `translate(${flip ? best.px - 12 : best.px + 12}px, ${Math.max(0, best.py - 40)}px)${flip ? " translateX(-100%)" : ""}`;
  }

  private showHover(series: LineSeries | null): void {
    this.hovered = series;
    this.tooltip.hidden = series === null;
    this.marker.hidden = series === null;
    if (this.plot) this.plot.over.style.cursor = series && this.options.onPick ? "pointer" : "";
  }
}
