// What a search found, at a glance: hyperparameter importance (bars), the optimization
// history (each trial's best value as it ended, and the best so far as a step line) and the
// timeline of trials' attempts over slots. The two plots are canvases with a legend, drawn by
// the charts' worker where the browser can (chart-surface.ts; chart-paint.ts draws them); each
// chart also lists what it drew as a table (the first MAX_ROWS rows) in a disclosure under it,
// built when opened: a page load does not lay out the cells nobody reads. The history greys
// the trials outside the parallel coordinates' brushes (`setKept`).

import type { History, Importance, Timeline, TrialState } from "../api";
import { h } from "../dom";
import { durationTicks, formatDuration, formatInteger, formatNumber, formatPercent, formatState } from "../format";
import { BEST_COLOR, MUTED_COLOR, seriesColor } from "../palette";
import { chartTheme } from "../theme";
import { type SceneTheme, type Ticks, type TimelineAttempts, timelineBars } from "./chart-paint";
import { ChartSurface } from "./chart-surface";
import { MARGIN_FRACTION, labelledTicks, paddedRange } from "./plot-margin";

const PAD = { left: 64, right: 16, top: 12, bottom: 34 };
const MAX_ROWS = 200;
/** Above this many points the history draws squares, one path per colour. */
const MANY_POINTS = 1000;

const idleTasks: (() => void)[] = [];

/** Run `task` when the browser is idle (within `timeout` ms at the latest). The tasks put off
 * until then run together, in one callback, in the order given: the DOM they build (the
 * trials table) is laid out and painted in one frame, not one each. */
export function whenIdle(task: () => void, timeout = 1000): void {
  idleTasks.push(task);
  if (idleTasks.length > 1) return; // a callback is already asked for
  const run = () => {
    for (const next of idleTasks.splice(0)) {
      try {
        next();
      } catch (err) {
        window.setTimeout(() => {
          throw err; // reported as uncaught, the tasks after it still run
        });
      }
    }
  };
  if (typeof window.requestIdleCallback === "function") window.requestIdleCallback(run, { timeout });
  else window.setTimeout(run, 0); // a browser without it
}

/** The table of a chart's data: a row per trial of `ids` (`row(i)`: the cells of the i-th),
 * the first MAX_ROWS of them. */
function dataTable(
  caption: string,
  head: string[],
  ids: readonly number[],
  row: (i: number) => (string | number)[],
): HTMLElement {
  const rows = ids.slice(0, MAX_ROWS).map((_id, i) => row(i));
  const total = ids.length;
  return h(
    "table",
    { class: "data" },
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

/** A chart's data as a table, in a disclosure under it ("Data as a table"): the table is
 * built when the disclosure opens (and again for new data while it is open), so a page of
 * charts does not build and lay out thousands of cells nobody reads. Screen readers reach it
 * as a button that opens a table. */
export class ChartData {
  readonly el: HTMLDetailsElement;
  private readonly summary = h("summary", {}, "Data as a table");
  private build: (() => HTMLElement) | null = null;

  constructor() {
    this.el = h("details", { class: "chart-data" }, this.summary);
    this.el.addEventListener("toggle", () => this.render());
  }

  /** The table of the chart's data now (built only when shown). */
  set(build: () => HTMLElement): void {
    this.build = build;
    this.render();
  }

  private render(): void {
    if (this.el.open && this.build) this.el.replaceChildren(this.summary, this.build());
  }
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

function sceneTheme(): SceneTheme {
  const { text, line, halo, grid } = chartTheme();
  return { text, line, halo, grid };
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
  private readonly canvas = new ChartSurface("history-plot", () => void this.draw());
  private readonly caption = h("p", { class: "muted small" });
  private readonly table = new ChartData();
  private readonly legendHost = h("div");
  private data: History | null = null;
  private kept: ReadonlySet<number> | null = null;

  constructor(private readonly height: number) {
    this.el = h(
      "div",
      { class: "chart history", "data-testid": "history", "data-trial-count": 0 },
      this.canvas.el,
      this.legendHost,
      this.caption,
      this.table.el,
    );
  }

  /** Draw `data`; resolves once drawn. */
  setData(data: History): Promise<void> {
    this.data = data;
    const n = data.trial_ids.length;
    this.el.dataset.trialCount = String(n);
    this.el.dataset.best = n ? String(data.best_so_far[n - 1]) : "";
    this.caption.textContent = n
      ? `${formatInteger(n)} trials with a ${data.metric ?? "metric"} value, in the order they ended (${data.smaller_is_better ? "lower" : "higher"} is better); best ${formatNumber(data.best_so_far[n - 1])}.`
      : `No trial has a ${data.metric ?? "metric"} value yet.`;
    this.table.set(() =>
      dataTable("Optimization history", ["Trial", "Ended after", "Value", "Best so far"], data.trial_ids, (i) => [
        data.trial_ids[i] ?? 0,
        timeLabel(data.times[i] ?? 0),
        formatNumber(data.values[i]),
        formatNumber(data.best_so_far[i]),
      ]),
    );
    return this.draw();
  }

  /** The trials kept by the brushes (null: all): the others' points turn grey. */
  setKept(kept: ReadonlySet<number> | null): void {
    if (kept === this.kept) return;
    this.kept = kept;
    void this.draw();
  }

  dispose(): void {
    this.canvas.dispose();
  }

  draw(): Promise<void> {
    const data = this.data;
    if (!data) return Promise.resolve();
    const width = Math.max(320, Math.floor(this.el.clientWidth || 640));
    const ratio = window.devicePixelRatio || 1;
    const n = data.trial_ids.length;
    const frame = {
      width,
      height: this.height,
      ratio,
      theme: sceneTheme(),
      pad: PAD,
      xLabel: "Time since the experiment started",
    };
    const empty = { px: new Float32Array(0), py: new Float32Array(0), outside: new Uint8Array(0) };
    if (n === 0) {
      this.legendHost.replaceChildren();
      return this.canvas.paint({
        kind: "history",
        ...frame,
        ...empty,
        xTicks: [],
        yTicks: [],
        many: false,
        keptColor: "",
        outsideColor: "",
        line: new Float32Array(0),
        lineColor: "",
      });
    }
    const xs = data.times;
    // A margin around the values (one value: a tenth of it either side), so no dot is cut.
    let yMin = Infinity;
    let yMax = -Infinity;
    let xTop = 1e-9;
    for (let i = 0; i < n; i++) {
      for (const v of [data.values[i] as number, data.best_so_far[i] as number]) {
        if (!Number.isFinite(v)) continue;
        if (v < yMin) yMin = v;
        if (v > yMax) yMax = v;
      }
      if ((xs[i] as number) > xTop) xTop = xs[i] as number;
    }
    const [lo, hi] = paddedRange(yMin, yMax);
    const xMax = xTop * (1 + MARGIN_FRACTION);
    const plotW = width - PAD.left - PAD.right;
    const plotH = this.height - PAD.top - PAD.bottom;
    const px = (x: number) => PAD.left + (x / xMax) * plotW;
    const py = (y: number) => PAD.top + (1 - (y - lo) / (hi - lo)) * plotH;
    const xTicks: Ticks = durationTicks(xMax).map(([t, label]) => [px(t), label]);
    this.el.dataset.yRange = `${lo},${hi}`;
    this.el.dataset.xTicks = durationTicks(xMax)
      .map(([, label]) => label)
      .join("|");
    // The points (the greyed ones drawn first, under the kept ones) and the step line.
    const kept = this.kept;
    const pointX = new Float32Array(n);
    const pointY = new Float32Array(n);
    const outside = new Uint8Array(n);
    let greyed = 0;
    for (let i = 0; i < n; i++) {
      pointX[i] = px(xs[i] ?? 0);
      pointY[i] = py(data.values[i] ?? 0);
      if (kept !== null && !kept.has(data.trial_ids[i] as number)) {
        outside[i] = 1;
        greyed += 1;
      }
    }
    const line = new Float32Array(4 * n);
    let at = 0;
    data.best_so_far.forEach((best, i) => {
      const x = px(xs[i] ?? 0);
      if (i > 0) {
        line[at++] = x;
        line[at++] = py(data.best_so_far[i - 1] ?? best);
      }
      line[at++] = x;
      line[at++] = py(best);
    });
    line[at++] = px(xMax);
    line[at++] = py(data.best_so_far[n - 1] ?? 0);
    this.el.dataset.greyed = String(greyed);
    const painted = this.canvas.paint({
      kind: "history",
      ...frame,
      xTicks,
      yTicks: labelledTicks(lo, hi).map(([t, label]) => [py(t), label]),
      px: pointX,
      py: pointY,
      outside,
      many: n > MANY_POINTS,
      keptColor: seriesColor(0),
      outsideColor: MUTED_COLOR,
      line: line.subarray(0, at),
      lineColor: BEST_COLOR,
    });
    // The legend of what was drawn: the dots (kept, greyed: only those there are), the line.
    const marks: LegendMark[] = [];
    if (n - greyed > 0)
      marks.push({ mark: "dot", color: seriesColor(0), label: "a trial's best value, when it ended" });
    if (greyed > 0) marks.push({ mark: "dot", color: MUTED_COLOR, label: "outside the brushed ranges" });
    marks.push({ mark: "line", color: BEST_COLOR, label: "best so far" });
    this.legendHost.replaceChildren(markLegend(marks));
    return painted;
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
  private readonly canvas = new ChartSurface("timeline-plot", () => void this.draw());
  private readonly legendHost = h("div");
  private readonly caption = h("p", { class: "muted small" });
  private readonly table = new ChartData();
  private data: Timeline | null = null;
  private endedAt: number | null = null;

  constructor(private readonly laneHeight = 16) {
    this.el = h(
      "div",
      { class: "chart timeline", "data-testid": "timeline", "data-attempt-count": 0, "data-slots": 0 },
      this.canvas.el,
      this.legendHost,
      this.caption,
      this.table.el,
    );
  }

  /** Draw `data`; `endedAt`: when the experiment ended (an ISO time; null while it runs), the
   * end of the time axis (else the answer's `now`). Resolves once drawn. */
  setData(data: Timeline, endedAt: string | null = null): Promise<void> {
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
    this.table.set(() =>
      dataTable("Timeline of trials", ["Trial", "Slot", "Started", "Ended"], data.trial_ids, (i) => [
        data.trial_ids[i] ?? 0,
        data.slot[i] ?? 0,
        timeLabel(data.starts[i] ?? 0),
        data.ends[i] == null ? "running" : timeLabel(data.ends[i] as number),
      ]),
    );
    return this.draw();
  }

  dispose(): void {
    this.canvas.dispose();
  }

  draw(): Promise<void> {
    const data = this.data;
    if (!data) return Promise.resolve();
    const width = Math.max(320, Math.floor(this.el.clientWidth || 640));
    const lanes = Math.max(1, data.slots);
    const height = PAD.top + PAD.bottom + lanes * this.laneHeight;
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
    const { attempts, colours } = timelineAttempts(data);
    const labels: [string, number, number][] = [];
    if (data.trial_ids.length <= 500) {
      for (let i = 0; i < data.trial_ids.length; i++) {
        const x0 = px(data.starts[i] ?? 0);
        const x1 = px(data.ends[i] ?? data.now);
        if (x1 - x0 > 40)
          labels.push([String(data.trial_ids[i]), x0 + 3, lane(data.slot[i] ?? 0) + this.laneHeight / 2]);
      }
    }
    return this.canvas.paint({
      kind: "timeline",
      width,
      height,
      ratio: window.devicePixelRatio || 1,
      theme: sceneTheme(),
      pad: PAD,
      xTicks: durationTicks(xMax).map(([t, label]) => [px(t), label]),
      yTicks: Array.from({ length: lanes }, (_x, s): [number, string] => [
        lane(s) + this.laneHeight / 2,
        `slot ${s}`,
      ]).filter((_t, s) => lanes <= 16 || s % Math.ceil(lanes / 16) === 0),
      xLabel: "Time since the experiment started",
      laneHeight: this.laneHeight,
      barHeight: this.laneHeight * data.slots_per_trial - 2,
      attempts,
      colours,
      now: data.now,
      xMax,
      labels,
    });
  }
}

/** A timeline's attempts as typed arrays, each with its colour by the trial's state (an index
 * into `colours`, in the order they first appear). */
function timelineAttempts(data: Timeline): { attempts: TimelineAttempts; colours: string[] } {
  const n = data.trial_ids.length;
  const attempts: TimelineAttempts = {
    starts: new Float64Array(n),
    ends: new Float64Array(n),
    slot: new Int32Array(n),
    colour: new Uint8Array(n),
  };
  const colours: string[] = [];
  const index = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const colour = STATE_COLORS[data.states[i] as TrialState] ?? seriesColor(4);
    let c = index.get(colour);
    if (c === undefined) {
      c = colours.push(colour) - 1;
      index.set(colour, c);
    }
    attempts.starts[i] = data.starts[i] ?? 0;
    attempts.ends[i] = data.ends[i] ?? Number.NaN;
    attempts.slot[i] = data.slot[i] ?? 0;
    attempts.colour[i] = c;
  }
  return { attempts, colours };
}

/** The timeline's bars by colour, in whole pixels: [x0, x1, slot], where the attempts of one
 * slot and colour that touch or overlap (at 10,000 attempts most are under a pixel wide)
 * are merged into one bar (chart-paint.ts' timelineBars, which draws them). */
export function timelineRuns(data: Timeline, px: (seconds: number) => number): Map<string, [number, number, number][]> {
  const { attempts, colours } = timelineAttempts(data);
  const bars = timelineBars(attempts, colours.length, data.now, px);
  return new Map(
    colours.map((colour, c) => {
      const flat = bars[c] ?? new Int32Array(0);
      return [
        colour,
        Array.from({ length: flat.length / 3 }, (_x, j) => [flat[3 * j], flat[3 * j + 1], flat[3 * j + 2]]),
      ];
    }),
  ) as Map<string, [number, number, number][]>;
}
