// Overview: state and progress, the searcher, the trials by state, the best trials, why it
// failed (the experiment's error and its failed trials), and the learning curves of the
// searcher metric.

import { type Experiment, type Trial, type TrialState, TRIAL_STATES, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { pbtBatchesPerRound, pbtLineageCard } from "../components/pbt-lineage";
import { stateBadge, stateMeaning } from "../components/state-badge";
import { dataTable, swapTable } from "../components/table";
import { h } from "../dom";
import {
  EM_DASH,
  elapsed,
  formatDuration,
  formatInteger,
  formatNumber,
  formatPercent,
  formatState,
  formatTime,
} from "../format";
import { hparamsInline } from "../hparams";
import { markChartsPainted } from "../perf";
import { Poller } from "../poll";
import { href, navigate } from "../router";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";
import { LiveCurves } from "./live-curves";

// The same interval as the experiment page's own poll, whose answer brings the trials' counts
// by state: the best and failed trials below are at most one poll behind them.
const POLL_MS = 3000;
const BEST_COUNT = 5;

/** "6 epochs", "1,000 batches" from a Determined length `{epochs: 6}`. */
export function formatLength(length: unknown): string {
  if (typeof length === "number") return `${formatInteger(length)} batches`;
  if (length && typeof length === "object") {
    return Object.entries(length as Record<string, unknown>)
      .map(([unit, n]) => `${typeof n === "number" ? formatInteger(n) : String(n)} ${unit}`)
      .join(", ");
  }
  return EM_DASH;
}

function fact(label: string, value: Node | string): HTMLElement[] {
  return [h("dt", {}, label), h("dd", {}, value)];
}

export class OverviewTab implements ExperimentTab {
  readonly el: HTMLElement;
  private readonly summary = h("dl", { class: "facts" });
  private readonly searcher = h("dl", { class: "facts" });
  private readonly counts = h("div", { class: "state-counts" });
  private readonly failure = h("div");
  private readonly best = h("div", { class: "table-wrap" });
  private readonly curvesHost = h("div");
  private readonly curvesTitle = h("h2", {}, "Learning curves");
  private curves: LiveCurves | null = null;
  private readonly controller = new AbortController();
  private readonly unsubscribe: () => void;
  private readonly poller = new Poller(() => this.refreshTrials(), POLL_MS);
  private shownState: string | null = null;

  constructor(
    private readonly context: ExperimentContext,
    _query: URLSearchParams,
  ) {
    this.el = h(
      "div",
      { class: "overview" },
      h(
        "div",
        { class: "cards two" },
        h("section", { class: "card" }, h("h2", {}, "Summary"), this.summary),
        h("section", { class: "card" }, h("h2", {}, "Searcher"), this.searcher, h("h3", {}, "Trials"), this.counts),
      ),
      this.failure,
      h("section", { class: "card" }, h("h2", {}, "Best trials"), this.best),
      h("section", { class: "card" }, this.curvesTitle, this.curvesHost),
    );
    this.unsubscribe = context.subscribe((experiment) => this.renderFacts(experiment));
    if (context.experiment) this.renderFacts(context.experiment);
    void context.ready.then((experiment) => this.start(experiment));
  }

  update(): void {}

  dispose(): void {
    this.unsubscribe();
    this.poller.stop();
    this.controller.abort();
    this.curves?.dispose();
  }

  private async start(experiment: Experiment): Promise<void> {
    // index.html asks for the default curves in the task that delivers the same experiment
    // answer: one task later the app takes that request instead of asking the master again.
    await new Promise((resolve) => window.setTimeout(resolve, 0));
    if (this.controller.signal.aborted) return;
    const metric = experiment.searcher_metric;
    if (metric) {
      this.curvesTitle.textContent = `Learning curves: ${metric} (validation)`;
      // index.html asks for these curves before the app has loaded: keep the two alike.
      this.curves = new LiveCurves(
        this.context,
        { kind: "validation", metric, x: "batches", maxTrials: 50, maxPoints: 200 },
        { height: 300, onPick: (id) => navigate(`/trials/${id}`) },
      );
      this.curvesHost.replaceChildren(this.curves.chart.el);
      void this.curves.chart.whenPainted().then(markChartsPainted);
      void this.curves.start();
    } else {
      this.curvesHost.replaceChildren(h("p", { class: "muted" }, "This experiment has no searcher metric."));
    }
    await this.refreshTrials();
    if (this.context.live) this.poller.start();
    const perRound = pbtBatchesPerRound(experiment.config);
    if (metric && perRound) {
      pbtLineageCard(experiment.id, metric, perRound, this.controller.signal).then(
        (card) => this.el.append(card),
        () => undefined, // the lineage is extra: the page stands without it
      );
    }
  }

  private renderFacts(e: Experiment): void {
    this.summary.replaceChildren(
      ...fact("State", stateBadge(e.state)),
      ...fact("Progress", formatPercent(e.progress)),
      ...fact(`Best ${e.searcher_metric ?? "metric"}`, h("span", { class: "metric" }, formatNumber(e.best_validation))),
      ...fact("Owner", e.owner),
      ...fact("Started", formatTime(e.created_at)),
      ...fact("Ended", formatTime(e.ended_at)),
      ...fact("Duration", formatDuration(elapsed(e.created_at, e.ended_at))),
    );
    const searcher = (e.config.searcher ?? {}) as Record<string, unknown>;
    const resources = (e.config.resources ?? {}) as Record<string, unknown>;
    // The counts come with the experiment (one read, so they agree with its state); an
    // action's answer has none: the counts shown stay until the next poll brings them.
    if (e.trial_counts) this.renderCounts(e.trial_counts);
    // A state change (pause, activate, kill, the end) changes the trials: read them now, not
    // at this tab's next poll.
    if (this.shownState !== null && this.shownState !== e.state) void this.refreshTrials();
    this.shownState = e.state;
    this.searcher.replaceChildren(
      ...fact("Method", String(searcher.name ?? EM_DASH)),
      ...fact("Metric", `${e.searcher_metric ?? EM_DASH} (${e.smaller_is_better ? "smaller" : "larger"} is better)`),
      ...fact("Max trials", searcher.max_trials == null ? EM_DASH : formatInteger(Number(searcher.max_trials))),
      ...fact("Length", formatLength(searcher.max_length)),
      ...fact(
        "Concurrent",
        searcher.max_concurrent_trials ? formatInteger(Number(searcher.max_concurrent_trials)) : "no limit",
      ),
      ...fact("Slots per trial", String(resources.slots_per_trial ?? 1)),
    );
  }

  private async refreshTrials(): Promise<boolean> {
    const live = this.context.live;
    const experiment = await this.context.ready;
    const signal = this.controller.signal;
    try {
      // The best and failed trials are one page each; the counts by state come with the
      // experiment (renderFacts).
      const [best, failed] = await Promise.all([
        api.trials(
          this.context.id,
          { sort: experiment.smaller_is_better ? "best_validation" : "-best_validation", limit: BEST_COUNT, offset: 0 },
          signal,
        ),
        api.trials(this.context.id, { state: ["ERROR"], sort: "-id", limit: 5, offset: 0 }, signal),
      ]);
      this.renderBest(
        best.items.filter((t) => t.best_validation != null),
        experiment,
      );
      this.renderFailure(this.context.experiment ?? experiment, failed.items, failed.total);
    } catch (err) {
      if (signal.aborted) return false;
      this.best.replaceChildren(notice(`Could not load the trials: ${errorMessage(err)}`));
    }
    return live;
  }

  private renderCounts(byState: Partial<Record<TrialState, number>>): void {
    const counts = new Map<TrialState, number>();
    let total = 0;
    for (const state of TRIAL_STATES) {
      const n = byState[state] ?? 0;
      if (n > 0) counts.set(state, n);
      total += n;
    }
    this.counts.replaceChildren(
      total === 0
        ? h("span", { class: "muted" }, "No trials yet.")
        : h(
            "ul",
            { class: "inline-list" },
            TRIAL_STATES.filter((s) => counts.has(s)).map((s) =>
              h(
                "li",
                { "data-testid": "state-count", "data-state": s, "data-count": String(counts.get(s)) },
                h(
                  "a",
                  {
                    href: href(`/experiments/${this.context.id}/trials`, { state: s }),
                    title: stateMeaning(s, "trial"),
                  },
                  h("strong", {}, formatInteger(counts.get(s))),
                  ` ${formatState(s)}`,
                ),
              ),
            ),
            h("li", { class: "muted" }, `${formatInteger(total)} in all`),
          ),
    );
  }

  private renderBest(trials: Trial[], experiment: Experiment): void {
    swapTable(
      this.best,
      dataTable(trials, {
        caption: "Best trials",
        columns: [
          { label: "Trial", numeric: true, cell: (t) => h("a", { href: href(`/trials/${t.id}`) }, String(t.id)) },
          {
            label: `Best ${experiment.searcher_metric ?? "metric"}`,
            numeric: true,
            cell: (t) => h("span", { class: "metric" }, formatNumber(t.best_validation)),
          },
          {
            label: "State",
            cell: (t) =>
              stateBadge(t.state, undefined, { kind: "trial", outcome: t.outcome, batches: t.total_batches }),
          },
          { label: "Batches", numeric: true, cell: (t) => formatInteger(t.total_batches) },
          { label: "Hyperparameters", className: "hparams", cell: (t) => hparamsInline(t.hparams) },
        ],
        rowKey: (t) => String(t.id),
        rowHref: (t) => href(`/trials/${t.id}`),
        empty: "No trial has validated yet.",
      }),
    );
  }

  private renderFailure(experiment: Experiment, failed: Trial[], total: number): void {
    if (experiment.state !== "ERROR" && failed.length === 0) {
      this.failure.replaceChildren();
      return;
    }
    this.failure.replaceChildren(
      h(
        "section",
        { class: "card failure" },
        h("h2", {}, experiment.state === "ERROR" ? "Why it failed" : "Failed trials"),
        experiment.error ? h("p", { class: "error-text" }, experiment.error) : null,
        failed.length > 0
          ? h(
              "ul",
              { class: "failed-trials" },
              failed.map((t) =>
                h(
                  "li",
                  {},
                  h("a", { href: href(`/trials/${t.id}`) }, `Trial ${t.id}`),
                  t.error
                    ? [
                        ": ",
                        h("strong", {}, t.error.type),
                        ` ${t.error.message}`,
                        t.error.location ? h("span", { class: "muted" }, ` at ${t.error.location}`) : null,
                      ]
                    : ": errored",
                ),
              ),
            )
          : null,
        total > failed.length
          ? h(
              "a",
              { href: href(`/experiments/${experiment.id}/trials`, { state: "ERROR" }) },
              `All ${formatInteger(total)} failed trials`,
            )
          : null,
      ),
    );
  }
}
