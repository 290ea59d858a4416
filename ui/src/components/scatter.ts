// A scatter plot of one hyperparameter against the searcher metric, on a canvas: one dot per
// trial, the best trials larger and in the highlight colour. Numbers spanning more than two
// decades (learning rates) use a log axis; categories sit at evenly spaced positions, and so
// do integers with few distinct values (both jittered sideways so equal values stay visible).
//
// The axes, grid, labels and dots are one scene (chart-paint.ts), laid out from the summary's
// columns (scatter-layout.ts) and drawn by the charts' worker where the browser can
// (chart-surface.ts: the page posts the columns, the worker places the dots), else on the
// page. The page lays the plot out itself only when the pointer first arrives over it (its
// hit-testing). No plotting library: the page has nothing but the canvas and an element over
// the plot area that takes the pointer (hit-testing, the tooltip, the box being dragged).
//
// A click selects the trial of the nearest dot (shift, ctrl or cmd: adds it); a box dragged
// over the plot selects the trials inside (found through a grid of the dots' positions,
// selection.ts). The selected trials' dots are outlined; trials outside the parallel
// coordinates' brushes (`setView`'s `kept`) are drawn grey, under the others.

import { h } from "../dom";
import { chartTheme } from "../theme";
import { formatNumber, formatValue } from "../format";
import { BEST, GREYED, SELECTED } from "./chart-paint";
import { ChartSurface } from "./chart-surface";
import type { Axis } from "./hp-axis";
import { type ScatterInput, type ScatterLayout, layoutScatter, plotArea } from "./scatter-layout";
import { PointGrid, isAdditive } from "./selection";

export interface ScatterData {
  axis: Axis;
  trialIds: readonly number[];
  /** The searcher metric of each trial (null: none yet). */
  metric: readonly (number | null)[];
  best: ReadonlySet<number>;
  metricName: string;
}

const HOVER_PX = 14;
/** A drag shorter than this (CSS pixels) either way is a click, not a box. */
const BOX_MIN_PX = 3;

/** The columns every plot of one summary shares, read once for all of them: the trial ids,
 * each trial's metric (NaN: none) and whether it is among the best. */
interface Shared {
  best: ReadonlySet<number>;
  ids: Float64Array;
  metric: Float64Array;
  isBest: Uint8Array;
}

const sharedColumns = new WeakMap<object, Shared>();

function shared(data: ScatterData): Shared {
  const known = sharedColumns.get(data.metric);
  if (known && known.best === data.best) return known;
  const n = data.trialIds.length;
  const ids = Float64Array.from(data.trialIds);
  const metric = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const y = data.metric[i];
    metric[i] = y == null || !Number.isFinite(y) ? Number.NaN : y;
  }
  const isBest = new Uint8Array(n);
  if (data.best.size > 0) data.trialIds.forEach((id, i) => (isBest[i] = data.best.has(id) ? 1 : 0));
  const columns = { best: data.best, ids, metric, isBest };
  sharedColumns.set(data.metric, columns);
  return columns;
}

export class HpScatter {
  readonly el: HTMLElement;
  /** The element over the plot area: takes the pointer, holds the tooltip and the box. */
  private readonly over: HTMLElement;
  private readonly box: HTMLElement;
  private readonly tooltip: HTMLElement;
  /** The canvas: axes and dots, laid out and drawn by the charts' worker where it can. */
  private readonly surface: ChartSurface;
  private data: ScatterData | null = null;
  /** GREYED and SELECTED bits by summary index (null: nothing brushed or selected). */
  private view: Uint8Array | null = null;
  /** The width (CSS pixels) the plot was last laid out for. */
  private drawnWidth = 0;
  private hovered: number | null = null;
  private draws = 0;
  /** The plot as last drawn (made here only where the page draws it, or once the pointer
   * arrives), and the grid of its dots in CSS pixels of the plot area (for the pointer). */
  private layout: ScatterLayout | null = null;
  private gridCache: PointGrid | null = null;
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
    this.data = data;
    this.el.setAttribute("aria-label", `${data.metricName} by ${data.axis.name}`);
    this.markView();
    this.draw(width);
  }

  /** Which trials are kept by the brushes (by summary index; null: all) and which are
   * selected (ids): drawn again. */
  setView(kept: ((i: number) => boolean) | null, selected: ReadonlySet<number>): void {
    if (kept === this.kept && selected === this.selected) return;
    this.kept = kept;
    this.selected = selected;
    this.markView();
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

  /** The brushes and the selection as bits by summary index (none of either: null). */
  private markView(): void {
    const data = this.data;
    const kept = this.kept;
    const selected = this.selected;
    if (!data || (!kept && selected.size === 0)) {
      this.view = null;
      return;
    }
    const ids = data.trialIds;
    const view = new Uint8Array(ids.length);
    for (let i = 0; i < ids.length; i++)
      view[i] = (kept && !kept(i) ? GREYED : 0) | (selected.has(ids[i] as number) ? SELECTED : 0);
    this.view = view;
  }

  /** What the plot is laid out from, at `width` (CSS pixels). */
  private input(data: ScatterData, width: number): ScatterInput {
    const { ids, metric, isBest } = shared(data);
    const { axis } = data;
    const theme = chartTheme();
    return {
      axis: {
        name: axis.name,
        kind: axis.kind,
        values: axis.values,
        categories: axis.categories,
        min: axis.min,
        max: axis.max,
      },
      ids,
      metric,
      isBest,
      view: this.view,
      metricName: data.metricName,
      width,
      height: this.height,
      ratio: window.devicePixelRatio || 1,
      theme: { text: theme.axis, line: theme.line, halo: theme.halo, grid: theme.grid },
    };
  }

  /** Lay the plot out for `width` (CSS pixels) and draw it: axes and dots. */
  private draw(width = this.width()): void {
    const data = this.data;
    if (!data) return;
    this.drawnWidth = width;
    const area = plotArea(width, this.height);
    Object.assign(this.over.style, {
      left: `${area.left}px`,
      top: `${area.top}px`,
      width: `${area.width}px`,
      height: `${area.height}px`,
    });
    this.layout = null;
    this.gridCache = null;
    const drawn = ++this.draws;
    void this.surface.layOut(this.input(data, width)).then(({ info, layout }) => {
      if (layout && drawn === this.draws) this.layout = layout;
      if (info) {
        this.el.dataset.points = String(info.points);
        this.el.dataset.greyed = String(info.greyed);
        this.el.dataset.selected = String(info.selected);
        // How far the nearest dot's centre is from the plot's edges (tests read it).
        this.el.dataset.inset = info.inset;
      }
      this.firstPaint();
    });
  }

  /** The plot as drawn, laid out here the first time the pointer needs it. */
  private laidOut(): ScatterLayout | null {
    if (!this.layout && this.data) this.layout = layoutScatter(this.input(this.data, this.drawnWidth));
    return this.layout;
  }

  private grid(): PointGrid | null {
    const layout = this.laidOut();
    if (!this.gridCache && layout) {
      const { cx, cy, bbox, ratio } = layout.scene;
      this.gridCache = new PointGrid(
        cx.map((x) => (x - bbox.left) / ratio),
        cy.map((y) => (y - bbox.top) / ratio),
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
    const layout = this.layout;
    if (width < BOX_MIN_PX || height < BOX_MIN_PX || !grid || !layout || !this.data) return;
    this.boxed = true;
    const data = this.data;
    const ids = grid
      .inBox(left, top, left + width, top + height)
      .filter((k) => !((layout.flags[k] as number) & GREYED))
      .map((k) => data.trialIds[layout.index[k] as number] as number);
    if (ids.length > 0 || !additive) this.onPick(ids, additive);
  }

  /** The dot nearest the pointer (CSS pixels of the plot area), within HOVER_PX; greyed dots
   * are skipped. */
  private hover(left: number, top: number): void {
    const data = this.data;
    const grid = this.grid();
    const layout = this.layout;
    if (!data || !layout || !grid) return this.show(null);
    const { flags } = layout;
    const nearest = grid.nearest(left, top, HOVER_PX, (k) =>
      (flags[k] as number) & GREYED ? -HOVER_PX : (flags[k] as number) & BEST ? 3 : 0,
    );
    if (nearest < 0) return this.show(null);
    const { cx, cy, bbox, ratio } = layout.scene;
    const at: [number, number] = [
      ((cx[nearest] as number) - bbox.left) / ratio,
      ((cy[nearest] as number) - bbox.top) / ratio,
    ];
    const i = layout.index[nearest] as number;
    const id = data.trialIds[i] as number;
    const best = (flags[nearest] as number) & BEST;
    this.show(id);
    this.tooltip.replaceChildren(
      h("strong", {}, `Trial ${id}${best ? " (best)" : ""}${this.selected.has(id) ? ", selected" : ""}`),
      h("span", {}, `${data.axis.name}: ${formatValue(data.axis.values[i])}`),
      h("span", {}, `${data.metricName}: ${formatNumber(layout.ys[nearest])}`),
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
