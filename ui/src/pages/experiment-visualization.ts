// Visualization: learning curves of the trials for a chosen metric (training or validation,
// x in batches or epochs), parallel coordinates of the hyperparameters coloured by the
// searcher metric, and one scatter plot per hyperparameter against it, the best trials
// highlighted in all three. The downsampled series and the trials summary are fetched in
// parallel; "pedl:charts-painted" is marked once all have drawn.
//
// One selection of trials for every view, kept in the URL (`selected=`): ticked in the
// table, or clicked in a chart (a scatter dot, a parallel-coordinates line, a curve; shift,
// ctrl or cmd adds), or boxed on a scatter plot; "Compare" opens `#/compare?trials=...` and
// the curves' "selected" choice draws them. Brushing the parallel coordinates' axes filters
// every view: the table keeps only the trials inside, the scatter plots, the curves and the
// history grey the others, and the curves' "inside the brushed ranges" choice draws the best
// of those only.

import {
  type Experiment,
  type MetricKind,
  type MetricNames,
  type SeriesSelect,
  type TrialsSummary,
  type XAxis,
  api,
} from "../api";
import { type Axis, buildAxis, metricAxis } from "../components/hp-axis";
import { nextSelection } from "../components/selection";
import { errorMessage, notice } from "../components/notice";
import { ParallelCoordinates } from "../components/parallel-coordinates";
import { paretoFrontChart } from "../components/pareto-front";
import { HpScatter } from "../components/scatter";
import { HistoryChart, TimelineChart, importanceChart } from "../components/search-charts";
import { SummaryTable } from "../components/summary-table";
import { h } from "../dom";
import { formatInteger, formatValue } from "../format";
import { declaredTypes } from "../hparams";
import { markChartsPainted } from "../perf";
import { Poller } from "../poll";
import { href, navigate, setQuery } from "../router";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";
import { LiveCurves } from "./live-curves";

// index.html asks for the default curves with these before the app has loaded.
const MAX_TRIALS = 100;
const MAX_POINTS = 200;
const BEST_COUNT = 5;
const SUMMARY_POLL_MS = 15000;
const MAX_SCATTERS = 12;
/** The most trials selected at once (the series endpoint's `select=ids` limit). */
const MAX_SELECTED = 100;

/** Which curves: the master's choices, or "filtered" (the best N inside the brushed ranges,
 * asked for by id). */
type CurveChoice = SeriesSelect | "filtered";

const CURVE_CHOICES: [CurveChoice, string][] = [
  ["default", "The best 5 and others spread evenly"],
  ["best", "The best N"],
  ["worst", "The worst N"],
  ["ids", "The selected trials"],
  ["filtered", "The best N inside the brushed ranges"],
  ["all", "All (downsampled)"],
];
const IMPORTANCE_RETRY_MS = 1000;

interface VisState {
  metric: string | null;
  kind: MetricKind;
  x: XAxis;
  curves: CurveChoice;
  count: number;
  selected: number[];
}

function readState(query: URLSearchParams): VisState {
  const curves = query.get("curves") ?? "default";
  return {
    metric: query.get("metric"),
    kind: query.get("kind") === "training" ? "training" : "validation",
    x: query.get("x") === "epochs" ? "epochs" : "batches",
    curves: CURVE_CHOICES.some(([c]) => c === curves) ? (curves as CurveChoice) : "default",
    count: Math.max(1, Math.min(1000, Number.parseInt(query.get("n") ?? "", 10) || 10)),
    selected: (query.get("selected") ?? "")
      .split(",")
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0)
      .slice(0, MAX_SELECTED),
  };
}

/** The ids of the `count` best trials by the searcher metric. */
export function bestTrialIds(summary: TrialsSummary, smallerIsBetter: boolean, count = BEST_COUNT): Set<number> {
  // The few best kept in order while scanning once (no sort of 10,000 trials for one).
  const top: [number, number][] = [];
  const better = (a: number, b: number) => (smallerIsBetter ? a < b : a > b);
  if (count < 1) return new Set();
  summary.trial_ids.forEach((id, i) => {
    const v = summary.best_validation[i];
    if (v == null || !Number.isFinite(v)) return;
    if (top.length === count && !better(v, (top[count - 1] as [number, number])[1])) return;
    let at = top.length;
    while (at > 0 && better(v, (top[at - 1] as [number, number])[1])) at--;
    top.splice(at, 0, [id, v]);
    if (top.length > count) top.pop();
  });
  return new Set(top.map(([id]) => id));
}

export class VisualizationTab implements ExperimentTab {
  readonly el: HTMLElement;
  private state: VisState;
  private readonly metricSelect: HTMLSelectElement;
  private readonly kindSelect: HTMLSelectElement;
  private readonly xSelect: HTMLSelectElement;
  private readonly curveSelect: HTMLSelectElement;
  private readonly countInput: HTMLInputElement;
  private readonly importanceHost = h("div");
  private readonly history = new HistoryChart(260);
  private readonly timeline = new TimelineChart();
  private readonly table: SummaryTable;
  private readonly curvesHost = h("div");
  private readonly curvesNote = h("p", { class: "muted small" });
  private readonly pcHost = h("div");
  private readonly pcTitle = h("h2", {}, "Hyperparameters");
  private readonly constants = h("p", { class: "muted small", "data-testid": "hp-constants" });
  private readonly scatterHost = h("div", { class: "scatter-grid", "data-testid": "hp-scatter" });
  private readonly message = h("div");
  private readonly paretoHost = h("section", { class: "card", hidden: true, "data-testid": "pareto-card" });
  private readonly selectionBar = h("div", { class: "selection-bar", "data-testid": "vis-selection" });
  private readonly brushCount = h("p", { class: "muted small", "data-testid": "brush-count", "aria-live": "polite" });
  private curves: LiveCurves | null = null;
  private summary: TrialsSummary | null = null;
  private smallerIsBetter = true;
  /** The parallel coordinates' brushes: by summary index, and the trial ids kept. */
  private keptFilter: ((i: number) => boolean) | null = null;
  private keptIds: ReadonlySet<number> | null = null;
  /** The selection (the URL's), one set per change: the charts redraw when it is another. */
  private selected: ReadonlySet<number>;
  private readonly pc: ParallelCoordinates;
  private scatters: HpScatter[] = [];
  private names: MetricNames | null = null;
  private readonly controller = new AbortController();
  private readonly poller = new Poller(() => this.refreshSummary(), SUMMARY_POLL_MS);

  constructor(
    private readonly context: ExperimentContext,
    query: URLSearchParams,
  ) {
    this.state = readState(query);
    this.selected = new Set(this.state.selected);
    this.pc = new ParallelCoordinates(
      340,
      (id, additive) => this.pick([id], additive),
      () => this.brushed(),
    );
    this.table = new SummaryTable(query, (ids) =>
      setQuery({ selected: ids.length ? ids.join(",") : null }, { replace: true }),
    );
    this.curveSelect = h(
      "select",
      {
        id: "vis-curves",
        onchange: () => setQuery({ curves: this.curveSelect.value === "default" ? null : this.curveSelect.value }),
      },
      CURVE_CHOICES.map(([value, label]) => h("option", { value }, label)),
    );
    this.countInput = h("input", {
      id: "vis-n",
      type: "number",
      min: 1,
      max: 1000,
      value: this.state.count,
      onchange: () => setQuery({ n: this.countInput.value }),
    });
    this.metricSelect = h("select", {
      id: "vis-metric",
      onchange: () => setQuery({ metric: this.metricSelect.value }),
    });
    this.kindSelect = h(
      "select",
      { id: "vis-kind", onchange: () => this.changeKind(this.kindSelect.value as MetricKind) },
      h("option", { value: "validation" }, "Validation"),
      h("option", { value: "training" }, "Training"),
    );
    this.xSelect = h(
      "select",
      { id: "vis-x", onchange: () => setQuery({ x: this.xSelect.value === "batches" ? null : this.xSelect.value }) },
      h("option", { value: "batches" }, "Batches"),
      h("option", { value: "epochs" }, "Epochs"),
    );
    this.el = h(
      "div",
      { class: "visualization" },
      h(
        "form",
        { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
        h("div", { class: "field" }, h("label", { for: "vis-metric" }, "Metric"), this.metricSelect),
        h("div", { class: "field" }, h("label", { for: "vis-kind" }, "Series"), this.kindSelect),
        h("div", { class: "field" }, h("label", { for: "vis-x" }, "X axis"), this.xSelect),
        h("div", { class: "field" }, h("label", { for: "vis-curves" }, "Curves of"), this.curveSelect),
        h("div", { class: "field" }, h("label", { for: "vis-n" }, "N"), this.countInput),
      ),
      this.message,
      this.selectionBar,
      this.paretoHost,
      h(
        "div",
        { class: "chart-grid" },
        h("section", { class: "card" }, h("h2", {}, "Hyperparameter importance"), this.importanceHost),
        h("section", { class: "card" }, h("h2", {}, "Optimization history"), this.history.el),
      ),
      h("section", { class: "card" }, h("h2", {}, "Trials over slots"), this.timeline.el),
      h("section", { class: "card" }, h("h2", {}, "Learning curves"), this.curvesNote, this.curvesHost),
      h("section", { class: "card" }, this.pcTitle, this.constants, this.brushCount, this.pcHost),
      h("section", { class: "card" }, h("h2", {}, "Hyperparameter against the searcher metric"), this.scatterHost),
      // Last: built only near the viewport (summary-table.ts), it grows below every chart.
      h(
        "section",
        { class: "card" },
        h("h2", {}, "Trials"),
        h(
          "p",
          { class: "muted small" },
          "Drag along an axis of the parallel coordinates to keep only the trials in that range here; click a header to sort; type in a filter (a value, a..b, >x or <x).",
        ),
        this.table.el,
      ),
    );
    this.applyView();
    void this.start();
  }

  update(query: URLSearchParams): void {
    const next = readState(query);
    const changed =
      next.metric !== this.state.metric ||
      next.kind !== this.state.kind ||
      next.x !== this.state.x ||
      next.curves !== this.state.curves ||
      next.count !== this.state.count ||
      (next.curves === "ids" && next.selected.join() !== this.state.selected.join());
    if (next.selected.join() !== this.state.selected.join()) this.selected = new Set(next.selected);
    this.state = next;
    this.table.update(query);
    this.applyView();
    if (changed) void this.context.ready.then((e) => this.startCurves(e));
  }

  /** Trials picked in a chart: the selection, in the URL. */
  private pick(ids: readonly number[], additive: boolean): void {
    const next = nextSelection(this.state.selected, ids, additive).slice(0, MAX_SELECTED);
    setQuery({ selected: next.length ? next.join(",") : null }, { replace: true });
  }

  /** The brushes changed: every view follows. */
  private brushed(): void {
    this.updateKept();
    this.table.setFilter(this.keptFilter);
    this.applyView();
    if (this.state.curves === "filtered") void this.context.ready.then((e) => this.startCurves(e));
  }

  private updateKept(): void {
    const filter = this.pc.brushFilter();
    const summary = this.summary;
    this.keptFilter = filter;
    this.keptIds = filter && summary ? new Set(summary.trial_ids.filter((_id, i) => filter(i))) : null;
    const total = summary?.trial_ids.length ?? 0;
    const kept = this.keptIds?.size ?? total;
    this.brushCount.dataset.kept = String(kept);
    this.brushCount.dataset.total = String(total);
    this.brushCount.textContent = this.keptIds
      ? `${formatInteger(kept)} of ${formatInteger(total)} trials match the brushed ranges: the table keeps only them, the other charts grey the rest.`
      : "";
  }

  /** The selection and the brushes onto every chart, and the selection bar. */
  private applyView(): void {
    const selected = this.selected;
    this.pc.setSelected(selected);
    for (const s of this.scatters) s.setView(this.keptFilter, selected);
    this.curves?.setView(this.keptIds);
    this.history.setKept(this.keptIds);
    const ids = this.state.selected;
    this.selectionBar.dataset.count = String(ids.length);
    this.selectionBar.replaceChildren(
      ids.length === 0
        ? h(
            "p",
            { class: "muted small" },
            "Select trials in any chart (click; shift-click adds; drag a box on a scatter plot) or tick them in the table, then compare them.",
          )
        : h(
            "p",
            {},
            `${ids.length} trial${ids.length === 1 ? "" : "s"} selected: `,
            ids.flatMap((id, k) => [k > 0 ? ", " : "", h("a", { href: href(`/trials/${id}`) }, String(id))]),
            " ",
            h(
              "button",
              {
                type: "button",
                "data-testid": "vis-compare",
                disabled: ids.length < 2,
                onclick: () => navigate("/compare", { trials: ids.join(",") }),
              },
              "Compare",
            ),
            " ",
            h(
              "button",
              { type: "button", onclick: () => setQuery({ selected: null }, { replace: true }) },
              "Clear selection",
            ),
          ),
    );
  }

  /** The ids of the best `count` trials inside the brushed ranges. */
  private bestKept(count: number): number[] {
    const summary = this.summary;
    const kept = this.keptIds;
    if (!summary || !kept) return [];
    const ranked: [number, number][] = [];
    summary.trial_ids.forEach((id, i) => {
      const v = summary.best_validation[i];
      if (kept.has(id) && v != null && Number.isFinite(v)) ranked.push([id, v]);
    });
    ranked.sort((a, b) => (this.smallerIsBetter ? a[1] - b[1] : b[1] - a[1]));
    return ranked.slice(0, Math.min(count, MAX_SELECTED)).map(([id]) => id);
  }

  dispose(): void {
    this.controller.abort();
    this.poller.stop();
    this.curves?.dispose();
    this.pc.dispose();
    this.history.dispose();
    this.timeline.dispose();
    this.table.dispose();
    for (const s of this.scatters) s.dispose();
  }

  private async start(): Promise<void> {
    const signal = this.controller.signal;
    // Everything at once: the experiment (the page's), the series, the summary, the names.
    const summary = api.trialsSummary(this.context.id, signal);
    const searchCharts = this.loadSearchCharts();
    void this.context.ready.then((e) => this.loadParetoFront(e));
    const experiment = await this.context.ready;
    // index.html asks for the default curves once the same experiment answer has come; its
    // request is made in the task that delivered the answer: one task later the app takes it
    // instead of asking the master a second time.
    await new Promise((resolve) => window.setTimeout(resolve, 0));
    if (signal.aborted) return;
    const curvesPainted = this.startCurves(experiment);
    let summaryDrawn: Promise<void> = Promise.resolve();
    try {
      summaryDrawn = this.showSummary(await summary, experiment);
    } catch (err) {
      if (signal.aborted) return;
      this.message.replaceChildren(notice(`Could not load the trials summary: ${errorMessage(err)}`));
      summaryDrawn = new Promise(() => undefined);
    }
    if (this.context.live) this.poller.start();
    await Promise.all([curvesPainted, summaryDrawn, searchCharts]);
    if (signal.aborted) return;
    markChartsPainted();
    // The metric names only fill the menu: asked for once the charts are up, so they do not
    // compete with the charts' requests.
    try {
      this.names = await api.metricNames(this.context.id, signal);
      this.syncControls();
    } catch {
      // The menu keeps the current metric.
    }
  }

  /** The importance, history and timeline; resolves when drawn (the importance once the
   * master has computed it). */
  private async loadSearchCharts(): Promise<void> {
    const signal = this.controller.signal;
    const id = this.context.id;
    const importance = (async () => {
      for (;;) {
        const found = await api.importance(id, signal);
        this.importanceHost.replaceChildren(importanceChart(found));
        if (found.ready || signal.aborted) return;
        await new Promise((resolve) => window.setTimeout(resolve, IMPORTANCE_RETRY_MS));
      }
    })();
    // Each resolves once its chart is drawn (by the charts' worker, where it draws them).
    const history = api.history(id, signal).then((data) => this.history.setData(data));
    const timeline = Promise.all([api.timeline(id, signal), this.context.ready]).then(([data, first]) =>
      this.timeline.setData(data, (this.context.experiment ?? first).ended_at),
    );
    try {
      await Promise.all([importance, history, timeline]);
    } catch (err) {
      if (!signal.aborted) this.message.append(notice(`Could not load a chart: ${errorMessage(err)}`));
    }
  }

  /** A multi-objective search (`searcher.metrics` lists several): its Pareto front. */
  private async loadParetoFront(experiment: Experiment): Promise<void> {
    const searcher = (experiment.config.searcher ?? {}) as Record<string, unknown>;
    if (!Array.isArray(searcher.metrics) || searcher.metrics.length < 2) return;
    try {
      const front = await api.paretoFront(this.context.id, this.controller.signal);
      this.paretoHost.hidden = false;
      this.paretoHost.replaceChildren(
        h("h2", {}, "Pareto front"),
        paretoFrontChart(front, (id, additive) => this.pick([id], additive)),
      );
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.message.append(notice(`Could not load the Pareto front: ${errorMessage(err)}`));
    }
  }

  private metricOf(experiment: Experiment): string {
    if (this.state.metric) return this.state.metric;
    const names = this.names?.[this.state.kind] ?? [];
    if (this.state.kind === "validation" && experiment.searcher_metric) return experiment.searcher_metric;
    return names.includes("loss") ? "loss" : (names[0] ?? experiment.searcher_metric ?? "loss");
  }

  /** (Re)start the learning curves for the state's metric; resolves when they have drawn. */
  private startCurves(experiment: Experiment): Promise<void> {
    this.curves?.dispose();
    const metric = this.metricOf(experiment);
    const { curves, count, selected } = this.state;
    // Inside the brushes: the best of the kept trials by id; nothing brushed: the best N.
    const filteredIds = curves === "filtered" && this.keptIds ? this.bestKept(count) : null;
    const select: SeriesSelect = curves === "filtered" ? (filteredIds ? "ids" : "best") : curves;
    const ids = curves === "ids" ? selected : (filteredIds ?? undefined);
    const what: Record<CurveChoice, string> = {
      default: `up to ${MAX_TRIALS} trials, the ${BEST_COUNT} best always among them and the others spread evenly`,
      best: `the ${count} best trials`,
      worst: `the ${count} worst trials`,
      ids: selected.length
        ? `the ${selected.length} selected trials`
        : "the selected trials (none selected: tick some in the table below)",
      all: "every trial, each line downsampled to its share of 200,000 points",
      filtered: filteredIds
        ? `the ${count} best trials inside the brushed ranges`
        : `the ${count} best trials (nothing brushed: drag along an axis of the parallel coordinates)`,
    };
    this.curves = new LiveCurves(
      this.context,
      {
        kind: this.state.kind,
        metric,
        x: this.state.x,
        maxTrials: select === "best" || select === "worst" ? count : MAX_TRIALS,
        maxPoints: MAX_POINTS,
        select: select === "default" ? undefined : select,
        trialIds: ids,
      },
      {
        height: 340,
        onPick: (id, additive) => this.pick([id], additive),
        onFetched: (series) => {
          const total = series.total_trials ?? series.trials.length;
          this.curvesNote.dataset.drawn = String(series.trials.length);
          this.curvesNote.dataset.total = String(total);
          this.curvesNote.textContent = `${metric} (${this.state.kind}): ${formatInteger(series.trials.length)} of ${formatInteger(total)} trials drawn, ${what[curves]}; the best one thicker; at most ${MAX_POINTS} points per trial. Click a line to select its trial (shift-click adds); drag to zoom, double-click to zoom out.`;
        },
      },
    );
    this.curves.setView(this.keptIds);
    this.curvesNote.textContent = `${metric} (${this.state.kind}) of ${what[curves]}.`;
    this.curvesHost.replaceChildren(this.curves.chart.el);
    this.syncControls();
    if (select === "ids" && (ids ?? []).length === 0) {
      // Nothing to ask for: say so (the master refuses select=ids without a trial).
      this.curves.chart.setEmptyText(
        curves === "ids"
          ? "No trial selected: select some in a chart or tick them in the table."
          : "No trial inside the brushed ranges.",
      );
      this.curves.chart.setData([]);
      return Promise.resolve();
    }
    const painted = this.curves.chart.whenPainted();
    void this.curves.start();
    return painted;
  }

  private syncControls(): void {
    const experiment = this.context.experiment;
    const current = experiment ? this.metricOf(experiment) : (this.state.metric ?? "");
    const names = [...(this.names?.[this.state.kind] ?? [])];
    if (current && !names.includes(current)) names.unshift(current);
    this.metricSelect.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
    this.metricSelect.value = current;
    this.kindSelect.value = this.state.kind;
    this.xSelect.value = this.state.x;
    this.curveSelect.value = this.state.curves;
    this.countInput.value = String(this.state.count);
    this.countInput.disabled = this.state.curves !== "best" && this.state.curves !== "worst";
  }

  private changeKind(kind: MetricKind): void {
    const names = this.names?.[kind] ?? [];
    let metric = this.state.metric;
    if (metric && !names.includes(metric)) {
      const guess = kind === "training" ? metric.replace(/^val_/, "") : `val_${metric}`;
      metric = names.includes(guess) ? guess : null;
    }
    setQuery({ kind: kind === "validation" ? null : kind, metric });
  }

  private async refreshSummary(): Promise<boolean> {
    const live = this.context.live;
    const experiment = await this.context.ready;
    void this.showSummary(await api.trialsSummary(this.context.id, this.controller.signal), experiment);
    return live;
  }

  /** Show the trials summary; resolves once its charts are drawn. */
  private showSummary(summary: TrialsSummary, experiment: Experiment): Promise<void> {
    this.summary = summary;
    this.smallerIsBetter = experiment.smaller_is_better;
    const metricName = experiment.searcher_metric ?? "metric";
    const best = bestTrialIds(summary, experiment.smaller_is_better, 1);
    const declared = declaredTypes(experiment.config.hyperparameters);
    const axes: Axis[] = [];
    const constant: string[] = [];
    for (const [name, values] of Object.entries(summary.hparams)) {
      const axis = buildAxis(name, values, declared.get(name));
      if (axis) axes.push(axis);
      else {
        const value = values.find((v) => v != null);
        if (value !== undefined) constant.push(`${name}=${formatValue(value)}`);
      }
    }
    const metric = metricAxis(metricName, summary.best_validation);
    const n = summary.trial_ids.length;
    this.pcTitle.textContent = `Hyperparameters of ${formatInteger(n)} trial${n === 1 ? "" : "s"}, coloured by ${metricName}`;
    // The hyperparameters that do not vary have no axis: listed, not dropped without a word.
    this.constants.textContent =
      n > 0 && constant.length > 0
        ? `${n === 1 ? "Its values" : "The same in every trial"} (no axis): ${constant.sort().join(", ")}`
        : "";
    this.constants.hidden = this.constants.textContent === "";
    let pcDrawn: Promise<void> = Promise.resolve();
    if (n === 0) {
      this.pcHost.replaceChildren(h("p", { class: "muted" }, "No trials yet."));
    } else if (axes.length === 0) {
      // One axis (the metric's) would connect nothing: no chart.
      this.pcHost.replaceChildren(
        h(
          "p",
          { class: "muted", "data-testid": "pc-none" },
          n === 1
            ? "One trial: parallel coordinates compare trials, and there is nothing to compare it with yet."
            : "No hyperparameter varies between the trials: nothing to draw across.",
        ),
      );
    } else {
      if (!this.pc.el.isConnected) this.pcHost.replaceChildren(this.pc.el);
      pcDrawn = this.pc.setData({
        trialIds: summary.trial_ids,
        axes,
        metric,
        smallerIsBetter: experiment.smaller_is_better,
        best,
      });
    }
    this.updateKept();
    this.table.setData(summary, axes, metric, experiment.smaller_is_better, this.keptFilter);
    this.renderScatters(summary, axes, best, metricName);
    this.applyView();
    return Promise.all([pcDrawn, ...this.scatters.map((s) => s.whenPainted())]).then(() => undefined);
  }

  private renderScatters(summary: TrialsSummary, axes: Axis[], best: Set<number>, metricName: string): void {
    for (const s of this.scatters) s.dispose();
    this.scatters = [];
    const hasMetric = summary.best_validation.some((v) => v != null);
    if (axes.length === 0 || !hasMetric) {
      this.scatterHost.replaceChildren(
        h(
          "p",
          { class: "muted" },
          axes.length === 0 ? "No hyperparameter varies between the trials." : `No trial has a ${metricName} yet.`,
        ),
      );
      return;
    }
    const shown = axes.slice(0, MAX_SCATTERS);
    this.scatterHost.replaceChildren();
    for (const axis of shown) {
      const scatter = new HpScatter(220, (ids, additive) => this.pick(ids, additive));
      scatter.setView(this.keptFilter, this.selected);
      this.scatters.push(scatter);
      this.scatterHost.append(
        h(
          "figure",
          { class: "scatter-cell" },
          h("figcaption", {}, axis.name, axis.kind === "log" ? h("span", { class: "muted" }, " (log)") : null),
          scatter.el,
        ),
      );
    }
    // The cells are equally wide: one layout for all, not one per plot.
    const width = this.scatters[0]?.width();
    shown.forEach((axis, i) =>
      this.scatters[i]?.setData(
        { axis, trialIds: summary.trial_ids, metric: summary.best_validation, best, metricName },
        width,
      ),
    );
    if (axes.length > shown.length)
      this.scatterHost.append(
        h(
          "p",
          { class: "muted" },
          `${axes.length - shown.length} more hyperparameters are in the parallel coordinates.`,
        ),
      );
  }
}
