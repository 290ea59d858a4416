// Visualization: learning curves of the trials for a chosen metric (training or validation,
// x in batches or epochs), parallel coordinates of the hyperparameters coloured by the
// searcher metric, and one scatter plot per hyperparameter against it, the best trials
// highlighted in all three. The downsampled series and the trials summary are fetched in
// parallel; "pedl:charts-painted" is marked once all have drawn.

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
import { errorMessage, notice } from "../components/notice";
import { ParallelCoordinates } from "../components/parallel-coordinates";
import { HpScatter } from "../components/scatter";
import { HistoryChart, TimelineChart, importanceChart } from "../components/search-charts";
import { SummaryTable } from "../components/summary-table";
import { h } from "../dom";
import { formatInteger } from "../format";
import { declaredTypes } from "../hparams";
import { markChartsPainted } from "../perf";
import { Poller } from "../poll";
import { navigate, setQuery } from "../router";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";
import { LiveCurves } from "./live-curves";

// index.html asks for the default curves with these before the app has loaded.
const MAX_TRIALS = 100;
const MAX_POINTS = 200;
const BEST_COUNT = 5;
const SUMMARY_POLL_MS = 15000;
const MAX_SCATTERS = 12;

const CURVE_CHOICES: [SeriesSelect, string][] = [
  ["default", "The best 5 and others spread evenly"],
  ["best", "The best N"],
  ["worst", "The worst N"],
  ["ids", "The selected trials"],
  ["all", "All (downsampled)"],
];
const IMPORTANCE_RETRY_MS = 1000;

interface VisState {
  metric: string | null;
  kind: MetricKind;
  x: XAxis;
  curves: SeriesSelect;
  count: number;
  selected: number[];
}

function readState(query: URLSearchParams): VisState {
  const curves = query.get("curves") ?? "default";
  return {
    metric: query.get("metric"),
    kind: query.get("kind") === "training" ? "training" : "validation",
    x: query.get("x") === "epochs" ? "epochs" : "batches",
    curves: CURVE_CHOICES.some(([c]) => c === curves) ? (curves as SeriesSelect) : "default",
    count: Math.max(1, Math.min(1000, Number.parseInt(query.get("n") ?? "", 10) || 10)),
    selected: (query.get("selected") ?? "")
      .split(",")
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0)
      .slice(0, 100),
  };
}

/** The ids of the `count` best trials by the searcher metric. */
export function bestTrialIds(summary: TrialsSummary, smallerIsBetter: boolean, count = BEST_COUNT): Set<number> {
  const ranked: [number, number][] = [];
  summary.trial_ids.forEach((id, i) => {
    const v = summary.best_validation[i];
    if (v != null && Number.isFinite(v)) ranked.push([id, v]);
  });
  ranked.sort((a, b) => (smallerIsBetter ? a[1] - b[1] : b[1] - a[1]));
  return new Set(ranked.slice(0, count).map(([id]) => id));
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
  private readonly scatterHost = h("div", { class: "scatter-grid", "data-testid": "hp-scatter" });
  private readonly message = h("div");
  private curves: LiveCurves | null = null;
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
    const pick = (id: number) => navigate(`/trials/${id}`);
    this.pc = new ParallelCoordinates(340, pick, () => this.table.setFilter(this.pc.brushFilter()));
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
      h(
        "div",
        { class: "chart-grid" },
        h("section", { class: "card" }, h("h2", {}, "Hyperparameter importance"), this.importanceHost),
        h("section", { class: "card" }, h("h2", {}, "Optimization history"), this.history.el),
      ),
      h("section", { class: "card" }, h("h2", {}, "Trials over slots"), this.timeline.el),
      h("section", { class: "card" }, h("h2", {}, "Learning curves"), this.curvesNote, this.curvesHost),
      h("section", { class: "card" }, this.pcTitle, this.pcHost),
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
      h("section", { class: "card" }, h("h2", {}, "Hyperparameter against the searcher metric"), this.scatterHost),
    );
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
    this.state = next;
    this.table.update(query);
    if (changed) void this.context.ready.then((e) => this.startCurves(e));
  }

  dispose(): void {
    this.controller.abort();
    this.poller.stop();
    this.curves?.dispose();
    this.pc.dispose();
    for (const s of this.scatters) s.dispose();
  }

  private async start(): Promise<void> {
    const signal = this.controller.signal;
    // Everything at once: the experiment (the page's), the series, the summary, the names.
    const summary = api.trialsSummary(this.context.id, signal);
    const searchCharts = this.loadSearchCharts();
    const experiment = await this.context.ready;
    const curvesPainted = this.startCurves(experiment);
    let summaryDrawn: Promise<void> = Promise.resolve();
    try {
      this.showSummary(await summary, experiment);
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
    const history = api.history(id, signal).then((data) => this.history.setData(data));
    const timeline = api.timeline(id, signal).then((data) => this.timeline.setData(data));
    try {
      await Promise.all([importance, history, timeline]);
    } catch (err) {
      if (!signal.aborted) this.message.append(notice(`Could not load a chart: ${errorMessage(err)}`));
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
    const ids = curves === "ids" ? selected : undefined;
    const what: Record<SeriesSelect, string> = {
      default: `up to ${MAX_TRIALS} trials, the ${BEST_COUNT} best always among them and the others spread evenly`,
      best: `the ${count} best trials`,
      worst: `the ${count} worst trials`,
      ids: selected.length
        ? `the ${selected.length} selected trials`
        : "the selected trials (none selected: tick some in the table below)",
      all: "every trial, each line downsampled to its share of 200,000 points",
    };
    this.curves = new LiveCurves(
      this.context,
      {
        kind: this.state.kind,
        metric,
        x: this.state.x,
        maxTrials: curves === "best" || curves === "worst" ? count : MAX_TRIALS,
        maxPoints: MAX_POINTS,
        select: curves === "default" ? undefined : curves,
        trialIds: ids,
      },
      {
        height: 340,
        onPick: (id) => navigate(`/trials/${id}`),
        onFetched: (series) => {
          const total = series.total_trials ?? series.trials.length;
          this.curvesNote.dataset.drawn = String(series.trials.length);
          this.curvesNote.dataset.total = String(total);
          this.curvesNote.textContent = `${metric} (${this.state.kind}): ${formatInteger(series.trials.length)} of ${formatInteger(total)} trials drawn, ${what[curves]}; the best one thicker; at most ${MAX_POINTS} points per trial. Click a line to open its trial; drag to zoom, double-click to zoom out.`;
        },
      },
    );
    this.curvesNote.textContent = `${metric} (${this.state.kind}) of ${what[curves]}.`;
    this.curvesHost.replaceChildren(this.curves.chart.el);
    const painted = this.curves.chart.whenPainted();
    void this.curves.start();
    this.syncControls();
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
    this.showSummary(await api.trialsSummary(this.context.id, this.controller.signal), experiment);
    return live;
  }

  private showSummary(summary: TrialsSummary, experiment: Experiment): void {
    const metricName = experiment.searcher_metric ?? "metric";
    const best = bestTrialIds(summary, experiment.smaller_is_better, 1);
    const declared = declaredTypes(experiment.config.hyperparameters);
    const axes = Object.entries(summary.hparams)
      .map(([name, values]) => buildAxis(name, values, declared.get(name)))
      .filter((a): a is Axis => a !== null);
    const metric = metricAxis(metricName, summary.best_validation);
    const n = summary.trial_ids.length;
    this.pcTitle.textContent = `Hyperparameters of ${formatInteger(n)} trial${n === 1 ? "" : "s"}, coloured by ${metricName}`;
    if (n === 0) {
      this.pcHost.replaceChildren(h("p", { class: "muted" }, "No trials yet."));
    } else {
      if (!this.pc.el.isConnected) this.pcHost.replaceChildren(this.pc.el);
      this.pc.setData({
        trialIds: summary.trial_ids,
        axes,
        metric,
        smallerIsBetter: experiment.smaller_is_better,
        best,
      });
    }
    this.table.setData(summary, axes, metric, experiment.smaller_is_better);
    this.renderScatters(summary, axes, best, metricName);
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
      const scatter = new HpScatter(220, (id) => navigate(`/trials/${id}`));
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
