// What a search found, at a glance: hyperparameter importance (bars), the optimization
// history (each trial's best value as it ended, and the best so far as a step line) and the
// timeline of trials' attempts over slots. The two plots are canvases with a legend; each
// chart also lists what it drew in a table for screen readers (the first MAX_ROWS rows),
// built once the browser is idle: the charts come first. The history greys the trials
// outside the parallel coordinates' brushes (`setKept`).

import type { History, Importance, Timeline, TrialState } from "../api";
import { h } from "../dom";
import {
  durationTicks,
  formatAxisNumbers,
  formatDuration,
  formatInteger,
  formatNumber,
  formatPercent,
  formatState,
} from "../format";
import { BEST_COLOR, MUTED_COLOR, seriesColor } from "../palette";
import { chartTheme } from "../theme";
import { MARGIN_FRACTION, paddedRange } from "./plot-margin";

const FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const PAD = { left: 64, right: 16, top: 12, bottom: 34 };
const MAX_ROWS = 200;
/** Above this many points the history draws squares, one path per colour. */
const MANY_POINTS = 1000;

/** Run `task` when the browser is idle (within `timeout` ms at the latest). */
export function whenIdle(task: () => void, timeout = 1000): void {
  if (typeof window.requestIdleCallback === "function") window.requestIdleCallback(task, { timeout });
  else window.setTimeout(task, 0); // a browser without it
}

/** Up to ~6 "nice" tick values (1, 2, 5 × 10^k steps) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Nice ticks over [lo, hi] with their labels in one number format. */
function axisTicks(lo: number, hi: number): [number, string][] {
  const values = niceTicks(lo, hi);
  const labels = formatAxisNumbers(values);
  return values.map((v, i) => [v, labels[i] ?? ""]);
}

function hiddenTable(caption: string, head: string[], rows: (string | number)[][], total: number): HTMLElement {
  return h(
    "table",
    { class: "visually-hidden" },
    h("caption", {}, total > rows.length ? `${caption} (the first ${rows.length} of ${total})` : caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          {},
          r.map((c) => h("td", {}, String(c))),
        ),
      ),
    ),
  );
}

/** One entry of a chart's legend: the mark as drawn (a dot, a line or a bar) in its colour. */
export interface LegendMark {
  mark: "dot" | "line" | "bar";
  color: string;
  label: string;
}

/** A legend of the marks a chart drew, each swatch the shape and colour of its mark (the
 * caller lists only what it drew: no entry for a mark that is not on the chart). */
export function markLegend(items: readonly LegendMark[]): HTMLElement {
  return h(
    "ul",
    { class: "chart-legend" },
    items.map((item) =>
      h(
        "li",
        { "data-testid": "legend-item", "data-mark": item.mark, "data-color": item.color },
        h("span", {
          class: `swatch ${item.mark}`,
          style: item.mark === "line" ? `border-color: ${item.color}` : `background: ${item.color}`,
        }),
        item.label,
      ),
    ),
  );
}

/** A canvas sized to its host's width (device pixels), with a 2D context scaled to CSS px. */
function sizedCanvas(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D | null {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx?.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

function drawFrame(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  xTicks: [number, string][],
  yTicks: [number, string][],
  xLabel: string,
): void {
  const theme = chartTheme();
  ctx.font = FONT;
  ctx.strokeStyle = theme.grid;
  ctx.fillStyle = theme.text;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [y, label] of yTicks) {
    ctx.beginPath();
    ctx.moveTo(PAD.left, y);
    ctx.lineTo(width - PAD.right, y);
    ctx.stroke();
    ctx.fillText(label, PAD.left - 6, y);
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const [x, label] of xTicks) ctx.fillText(label, x, height - PAD.bottom + 4);
  ctx.fillText(xLabel, PAD.left + (width - PAD.left - PAD.right) / 2, height - 14);
  ctx.strokeStyle = theme.line;
  ctx.beginPath();
  ctx.moveTo(PAD.left, PAD.top);
  ctx.lineTo(PAD.left, height - PAD.bottom);
  ctx.lineTo(width - PAD.right, height - PAD.bottom);
  ctx.stroke();
}

function timeLabel(seconds: number): string {
  return seconds < 0.001 ? "0s" : formatDuration(seconds * 1000);
}

export function importanceChart(data: Importance): HTMLElement {
  const el = h("div", {
    class: "chart importance",
    "data-testid": "importance",
    "data-trials": data.trials,
    "data-ready": data.ready ? "true" : "false",
  });
  if (!data.ready) {
    el.append(h("p", { class: "muted" }, "Computing the importance…"));
    return el;
  }
  if (data.importances.length === 0) {
    el.append(
      h(
        "p",
        { class: "muted" },
        data.trials < 2
          ? `Needs two trials with a ${data.metric ?? "metric"} value.`
          : "No hyperparameter varies between the trials.",
      ),
    );
    return el;
  }
  const top = Math.max(...data.importances.map((i) => i.importance), 1e-12);
  el.append(
    h(
      "ol",
      { class: "importance-bars" },
      data.importances.map((item, rank) =>
        h(
          "li",
          {
            "data-testid": "importance-bar",
            "data-name": item.name,
            "data-importance": item.importance,
            title: `${item.name}: ${formatPercent(item.importance)} of the importance`,
          },
          h("span", { class: "importance-name" }, item.name),
          h(
            "span",
            { class: "importance-track" },
            h("span", {
              class: "importance-fill",
              style: `width: ${((item.importance / top) * 100).toFixed(1)}%; background: ${rank === 0 ? BEST_COLOR : seriesColor(0)}`,
            }),
          ),
          h("span", { class: "importance-value" }, formatPercent(item.importance)),
        ),
      ),
    ),
    h(
      "p",
      { class: "muted small" },
      `${data.method} over ${formatInteger(data.trials)} trials with a ${data.metric ?? "metric"} value: how much each hyperparameter's values differ between the best 10% and all trials (shares sum to 100%).${data.current ? "" : " Being computed again for newer values."}`,
    ),
  );
  return el;
}

export class HistoryChart {
  readonly el: HTMLElement;
  private readonly canvas = h("canvas");
  private readonly caption = h("p", { class: "muted small" });
  private readonly table = h("div");
  private readonly legendHost = h("div");
  private data: History | null = null;
  private kept: ReadonlySet<number> | null = null;

  constructor(private readonly height: number) {
    this.el = h(
      "div",
      { class: "chart history", "data-testid": "history", "data-trial-count": 0 },
      this.canvas,
      this.legendHost,
      this.caption,
      this.table,
    );
  }

  setData(data: History): void {
    this.data = data;
    const n = data.trial_ids.length;
    this.el.dataset.trialCount = String(n);
    this.el.dataset.best = n ? String(data.best_so_far[n - 1]) : "";
    this.caption.textContent = n
      ? `${formatInteger(n)} trials with a ${data.metric ?? "metric"} value, in the order they ended (${data.smaller_is_better ? "lower" : "higher"} is better); best ${formatNumber(data.best_so_far[n - 1])}.`
      : `No trial has a ${data.metric ?? "metric"} value yet.`;
    const rows = data.trial_ids
      .slice(0, MAX_ROWS)
      .map((id, i) => [
        id,
        timeLabel(data.times[i] ?? 0),
        formatNumber(data.values[i]),
        formatNumber(data.best_so_far[i]),
      ]);
    whenIdle(() =>
      this.table.replaceChildren(
        hiddenTable("Optimization history", ["Trial", "Ended after", "Value", "Best so far"], rows, n),
      ),
    );
    this.draw();
  }

  /** The trials kept by the brushes (null: all): the others' points turn grey. */
  setKept(kept: ReadonlySet<number> | null): void {
    if (kept === this.kept) return;
    this.kept = kept;
    this.draw();
  }

  draw(): void {
    const data = this.data;
    if (!data) return;
    const width = Math.max(320, Math.floor(this.el.clientWidth || 640));
    const ctx = sizedCanvas(this.canvas, width, this.height);
    if (!ctx || data.trial_ids.length === 0) {
      this.legendHost.replaceChildren();
      return;
    }
    const xs = data.times;
    const all = [...data.values, ...data.best_so_far].filter(Number.isFinite);
    // A margin around the values (one value: a tenth of it either side), so no dot is cut.
    const [lo, hi] = paddedRange(Math.min(...all), Math.max(...all));
    const xMax = Math.max(1e-9, ...xs) * (1 + MARGIN_FRACTION);
    const plotW = width - PAD.left - PAD.right;
    const plotH = this.height - PAD.top - PAD.bottom;
    const px = (x: number) => PAD.left + (x / xMax) * plotW;
    const py = (y: number) => PAD.top + (1 - (y - lo) / (hi - lo)) * plotH;
    drawFrame(
      ctx,
      width,
      this.height,
      durationTicks(xMax).map(([t, label]) => [px(t), label]),
      axisTicks(lo, hi).map(([t, label]) => [py(t), label]),
      "Time since the experiment started",
    );
    this.el.dataset.yRange = `${lo},${hi}`;
    this.el.dataset.xTicks = durationTicks(xMax)
      .map(([, label]) => label)
      .join("|");
    // One path per colour: the greyed points first, under the kept ones.
    const kept = this.kept;
    const many = xs.length > MANY_POINTS;
    let greyed = 0;
    for (const outside of [true, false]) {
      ctx.fillStyle = outside ? MUTED_COLOR : seriesColor(0);
      ctx.globalAlpha = many ? (outside ? 0.2 : 0.35) : outside ? 0.45 : 0.8;
      ctx.beginPath();
      for (let i = 0; i < xs.length; i++) {
        if ((kept !== null && !kept.has(data.trial_ids[i] as number)) !== outside) continue;
        if (outside) greyed += 1;
        const x = px(xs[i] ?? 0);
        const y = py(data.values[i] ?? 0);
        if (many) ctx.rect(x - 1.5, y - 1.5, 3, 3);
        else {
          ctx.moveTo(x + 2.5, y);
          ctx.arc(x, y, 2.5, 0, 2 * Math.PI);
        }
      }
      ctx.fill();
    }
    this.el.dataset.greyed = String(greyed);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = BEST_COLOR;
    ctx.lineWidth = 2;
    ctx.beginPath();
    data.best_so_far.forEach((best, i) => {
      const x = px(xs[i] ?? 0);
      if (i === 0) ctx.moveTo(x, py(best));
      else {
        ctx.lineTo(x, py(data.best_so_far[i - 1] ?? best));
        ctx.lineTo(x, py(best));
      }
    });
    ctx.lineTo(px(xMax), py(data.best_so_far[data.best_so_far.length - 1] ?? 0));
    ctx.stroke();
    // The legend of what was drawn: the dots (kept, greyed: only those there are), the line.
    const marks: LegendMark[] = [];
    if (xs.length - greyed > 0)
      marks.push({ mark: "dot", color: seriesColor(0), label: "a trial's best value, when it ended" });
    if (greyed > 0) marks.push({ mark: "dot", color: MUTED_COLOR, label: "outside the brushed ranges" });
    marks.push({ mark: "line", color: BEST_COLOR, label: "best so far" });
    this.legendHost.replaceChildren(markLegend(marks));
  }
}

const STATE_COLORS: Partial<Record<TrialState, string>> = {
  COMPLETED: seriesColor(0),
  RUNNING: seriesColor(2),
  ERROR: BEST_COLOR,
  CANCELED: MUTED_COLOR,
};

export class TimelineChart {
  readonly el: HTMLElement;
  private readonly canvas = h("canvas");
  private readonly legendHost = h("div");
  private readonly caption = h("p", { class: "muted small" });
  private readonly table = h("div");
  private data: Timeline | null = null;
  private endedAt: number | null = null;

  constructor(private readonly laneHeight = 16) {
    this.el = h(
      "div",
      { class: "chart timeline", "data-testid": "timeline", "data-attempt-count": 0, "data-slots": 0 },
      this.canvas,
      this.legendHost,
      this.caption,
      this.table,
    );
  }

  /** Draw `data`; `endedAt`: when the experiment ended (an ISO time; null while it runs), the
   * end of the time axis (else the answer's `now`). */
  setData(data: Timeline, endedAt: string | null = null): void {
    this.data = data;
    this.endedAt = endedAt === null ? null : (Date.parse(endedAt) - Date.parse(data.started_at)) / 1000;
    const n = data.trial_ids.length;
    this.el.dataset.attemptCount = String(n);
    this.el.dataset.slots = String(data.slots);
    const states = [...new Set(data.states)];
    this.legendHost.replaceChildren(
      markLegend(states.map((s) => ({ mark: "bar", color: STATE_COLORS[s] ?? seriesColor(4), label: formatState(s) }))),
    );
    this.caption.textContent = n
      ? `${formatInteger(n)} attempts of ${formatInteger(new Set(data.trial_ids).size)} trials on ${data.slots} slot${data.slots === 1 ? "" : "s"} (numbered in start order), coloured by the trial's state now.`
      : "No trial has started yet.";
    const rows = data.trial_ids
      .slice(0, MAX_ROWS)
      .map((id, i) => [
        id,
        data.slot[i] ?? 0,
        timeLabel(data.starts[i] ?? 0),
        data.ends[i] == null ? "running" : timeLabel(data.ends[i] as number),
      ]);
    whenIdle(() =>
      this.table.replaceChildren(hiddenTable("Timeline of trials", ["Trial", "Slot", "Started", "Ended"], rows, n)),
    );
    this.draw();
  }

  draw(): void {
    const data = this.data;
    if (!data) return;
    const width = Math.max(320, Math.floor(this.el.clientWidth || 640));
    const lanes = Math.max(1, data.slots);
    const height = PAD.top + PAD.bottom + lanes * this.laneHeight;
    const ctx = sizedCanvas(this.canvas, width, height);
    if (!ctx) return;
    // From the experiment's start to its end, or to now while it runs; or to the last end if
    // later (an experiment's clock and its trials' may differ).
    let xMax = Math.max(1e-9, this.endedAt !== null && Number.isFinite(this.endedAt) ? this.endedAt : data.now);
    for (const end of data.ends) if (end != null && end > xMax) xMax = end;
    this.el.dataset.xMax = String(xMax);
    this.el.dataset.xTicks = durationTicks(xMax)
      .map(([, label]) => label)
      .join("|");
    const plotW = width - PAD.left - PAD.right;
    const px = (x: number) => PAD.left + (x / xMax) * plotW;
    const lane = (slot: number) => PAD.top + slot * this.laneHeight;
    drawFrame(
      ctx,
      width,
      height,
      durationTicks(xMax).map(([t, label]) => [px(t), label]),
      Array.from({ length: lanes }, (_x, s): [number, string] => [lane(s) + this.laneHeight / 2, `slot ${s}`]).filter(
        (_t, s) => lanes <= 16 || s % Math.ceil(lanes / 16) === 0,
      ),
      "Time since the experiment started",
    );
    const theme = chartTheme();
    const barHeight = this.laneHeight * data.slots_per_trial - 2;
    for (const [colour, bars] of timelineRuns(data, px)) {
      ctx.fillStyle = colour;
      for (const [x0, x1, slot] of bars) ctx.fillRect(x0, lane(slot) + 1, x1 - x0, barHeight);
    }
    if (data.trial_ids.length > 500) return;
    ctx.fillStyle = theme.halo;
    ctx.font = FONT;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (let i = 0; i < data.trial_ids.length; i++) {
      const x0 = px(data.starts[i] ?? 0);
      const x1 = px(data.ends[i] ?? data.now);
      if (x1 - x0 > 40) ctx.fillText(String(data.trial_ids[i]), x0 + 3, lane(data.slot[i] ?? 0) + this.laneHeight / 2);
    }
  }
}

/** The timeline's bars by colour, in whole pixels: [x0, x1, slot], where the attempts of one
 * slot and colour that touch or overlap (at 10,000 attempts most are under a pixel wide)
 * are merged into one bar. */
export function timelineRuns(data: Timeline, px: (seconds: number) => number): Map<string, [number, number, number][]> {
  // By colour, then by slot.
  const grouped = new Map<string, Map<number, [number, number, number][]>>();
  for (let i = 0; i < data.trial_ids.length; i++) {
    const colour = STATE_COLORS[data.states[i] as TrialState] ?? seriesColor(4);
    const slot = data.slot[i] ?? 0;
    const x0 = Math.floor(px(data.starts[i] ?? 0));
    const x1 = Math.max(x0 + 1, Math.ceil(px(data.ends[i] ?? data.now)));
    let slots = grouped.get(colour);
    if (!slots) grouped.set(colour, (slots = new Map()));
    let bars = slots.get(slot);
    if (!bars) slots.set(slot, (bars = []));
    bars.push([x0, x1, slot]);
  }
  const out = new Map<string, [number, number, number][]>();
  for (const [colour, slots] of grouped) {
    const merged: [number, number, number][] = [];
    for (const bars of slots.values()) {
      bars.sort((a, b) => a[0] - b[0]);
      let last: [number, number, number] | null = null;
      for (const bar of bars) {
        if (last && bar[0] <= last[1]) last[1] = Math.max(last[1], bar[1]);
        else merged.push((last = [...bar]));
      }
    }
    out.set(colour, merged);
  }
  return out;
}
