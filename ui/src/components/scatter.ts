// A scatter plot of one hyperparameter against the searcher metric, on uPlot (canvas): one
// dot per trial, the best trials larger and in the highlight colour. Numbers spanning more
// than two decades (learning rates) use a log axis; categories sit at evenly spaced
// positions (jittered so equal values stay visible).

import uPlot from "uplot";
import { h } from "../dom";
import { formatNumber, formatValue } from "../format";
import { BEST_COLOR, withAlpha } from "../palette";
import type { Axis } from "./hp-axis";
import { axisValues } from "./line-chart";

export interface ScatterData {
  axis: Axis;
  trialIds: readonly number[];
  /** The searcher metric of each trial (null: none yet). */
  metric: readonly (number | null)[];
  best: ReadonlySet<number>;
  metricName: string;
}

interface ScatterPoint {
  id: number;
  x: number;
  y: number;
  raw: unknown;
  best: boolean;
}

const OTHER_COLOR = "#4e79a7";
const AXIS = { stroke: "#5b6474", grid: { stroke: "#eef0f3", width: 1 }, ticks: { stroke: "#d5dae1", width: 1 } };

/** A small deterministic offset in -0.5..0.5 per trial (for categorical positions). */
function jitter(id: number): number {
  const x = Math.sin(id * 12.9898) * 43758.5453;
  return x - Math.floor(x) - 0.5;
}

export class HpScatter {
  readonly el: HTMLElement;
  private plot: uPlot | null = null;
  private readonly tooltip: HTMLElement;
  private points: ScatterPoint[] = [];
  private hovered: number | null = null;
  private names: [string, string] = ["", ""];
  private readonly resizeObserver: ResizeObserver;

  constructor(
    private readonly height: number,
    private readonly onPick: (trialId: number) => void,
  ) {
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true, role: "status" });
    this.el = h("div", { class: "chart scatter" });
    this.resizeObserver = new ResizeObserver(() => {
      const width = this.width();
      if (this.plot && Math.abs(width - this.plot.width) >= 1) this.plot.setSize({ width, height: this.height });
    });
    this.resizeObserver.observe(this.el);
  }

  setData(data: ScatterData): void {
    const { axis } = data;
    this.el.setAttribute("aria-label", `${data.metricName} by ${axis.name}`);
    this.names = [axis.name, data.metricName];
    this.points = [];
    data.trialIds.forEach((id, i) => {
      const y = data.metric[i];
      const position = axis.position(i);
      if (y == null || !Number.isFinite(y) || position == null) return;
      const x = axis.kind === "categorical" ? position + jitter(id) * 0.5 : position;
      this.points.push({ id, x, y, raw: axis.values[i], best: data.best.has(id) });
    });
    this.points.sort((a, b) => a.x - b.x);
    const xs = this.points.map((p) => p.x);
    const others = this.points.map((p) => (p.best ? null : p.y));
    const bests = this.points.map((p) => (p.best ? p.y : null));

    this.plot?.destroy();
    const xAxis: uPlot.Axis = {
      ...AXIS,
      label: axis.name,
      labelSize: 20,
      values: (u, splits) =>
        axis.kind === "categorical" ? splits.map((v) => String(axis.categories[Math.round(v)] ?? "")) : axisValues(u, splits),
    };
    if (axis.kind === "categorical") {
      xAxis.splits = () => axis.categories.map((_c, i) => i);
    }
    this.plot = new uPlot(
      {
        width: this.width(),
        height: this.height,
        legend: { show: false },
        cursor: { points: { show: false }, drag: { x: false, y: false }, focus: { prox: -1 } },
        scales: {
          x:
            axis.kind === "categorical"
              ? { time: false, range: () => [-0.6, axis.categories.length - 0.4] }
              : axis.kind === "log"
                ? { time: false, distr: 3, log: 10 }
                : { time: false },
        },
        axes: [xAxis, { ...AXIS, label: data.metricName, labelSize: 20, size: 56, values: axisValues }],
        // The series set the scales; the dots are drawn by drawDots (squares for the many:
        // far cheaper than uPlot's arcs with 10,000 trials; circles for the best).
        series: [
          {},
          { label: "trials", paths: () => null, points: { show: false } },
          { label: "best trials", paths: () => null, points: { show: false } },
        ],
        hooks: { draw: [(u) => this.drawDots(u)], setCursor: [(u) => this.hover(u)] },
      },
      [xs, others, bests],
      this.el,
    );
    this.plot.over.append(this.tooltip);
    this.plot.over.addEventListener("click", () => {
      if (this.hovered != null) this.onPick(this.hovered);
    });
    this.plot.over.addEventListener("mouseleave", () => this.show(null));
  }

  dispose(): void {
    this.resizeObserver.disconnect();
    this.plot?.destroy();
  }

  private drawDots(u: uPlot): void {
    const { ctx, bbox } = u;
    const ratio = window.devicePixelRatio || 1;
    const many = this.points.length > 500;
    const half = (many ? 1.6 : 2.6) * ratio;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
    ctx.clip();
    ctx.fillStyle = withAlpha(OTHER_COLOR, many ? 0.35 : 0.65);
    for (const p of this.points) {
      if (p.best) continue;
      const x = u.valToPos(p.x, "x", true);
      const y = u.valToPos(p.y, "y", true);
      ctx.fillRect(x - half, y - half, 2 * half, 2 * half);
    }
    ctx.fillStyle = BEST_COLOR;
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 1.5 * ratio;
    for (const p of this.points) {
      if (!p.best) continue;
      ctx.beginPath();
      ctx.arc(u.valToPos(p.x, "x", true), u.valToPos(p.y, "y", true), 5 * ratio, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    ctx.restore();
  }

  private width(): number {
    return Math.max(200, Math.floor(this.el.clientWidth || 320));
  }

  private hover(u: uPlot): void {
    const left = u.cursor.left ?? -1;
    const top = u.cursor.top ?? -1;
    if (left < 0) return this.show(null);
    let nearest: { p: ScatterPoint; px: number; py: number; d: number } | null = null;
    for (const p of this.points) {
      const px = u.valToPos(p.x, "x");
      const py = u.valToPos(p.y, "y");
      const d = Math.hypot(px - left, py - top) - (p.best ? 3 : 0);
      if (d < 14 && (!nearest || d < nearest.d)) nearest = { p, px, py, d };
    }
    if (!nearest) return this.show(null);
    this.show(nearest.p.id);
    this.tooltip.replaceChildren(
      h("strong", {}, `Trial ${nearest.p.id}${nearest.p.best ? " (best)" : ""}`),
      h("span", {}, `${this.names[0]}: ${formatValue(nearest.p.raw)}`),
      h("span", {}, `${this.names[1]}: ${formatNumber(nearest.p.y)}`),
    );
    const flip = nearest.px > u.over.clientWidth - 140;
    this.tooltip.style.transform = `translate(${flip ? nearest.px - 10 : nearest.px + 10}px, ${Math.max(0, nearest.py - 40)}px)${flip ? " translateX(-100%)" : ""}`;
  }

  private show(id: number | null): void {
    this.hovered = id;
    this.tooltip.hidden = id === null;
    if (this.plot) this.plot.over.style.cursor = id === null ? "" : "pointer";
  }
}
