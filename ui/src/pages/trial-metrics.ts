// A trial's metric charts: pick the metrics (in the URL: `metric=loss&metric=val_loss`), one
// chart per metric with its training and validation series. While the trial runs, only the
// rows after the last batch seen are fetched (`after_batches`).

import { type MetricKind, type MetricRow, api, metricNumber } from "../api";
import { LineChart, type LineSeries, type Point } from "../components/line-chart";
import { errorMessage, notice } from "../components/notice";
import { h } from "../dom";
import { seriesColor } from "../palette";
import { setQuery } from "../router";

const KINDS: readonly MetricKind[] = ["training", "validation"];
const PAGE_ROWS = 10_000;

export class TrialMetrics {
  readonly el: HTMLElement;
  private readonly chooser = h("fieldset", { class: "metric-chooser" });
  private readonly charts = h("div", { class: "chart-grid" });
  private readonly message = h("div");
  private readonly rows: Record<MetricKind, MetricRow[]> = { training: [], validation: [] };
  private readonly after: Record<MetricKind, number> = { training: -1, validation: -1 };
  private readonly chartsByName = new Map<string, LineChart>();
  private chosen: string[] | null;
  private searcherMetric: string | null = null;

  constructor(
    private readonly trialId: number,
    chosen: string[],
    private readonly signal: AbortSignal,
  ) {
    this.chosen = chosen.length > 0 ? chosen : null;
    this.el = h(
      "section",
      { class: "card", "data-testid": "trial-metrics" },
      h("h2", {}, "Metrics"),
      this.message,
      this.chooser,
      this.charts,
    );
  }

  /** The metrics to draw changed (URL). */
  choose(chosen: string[]): void {
    this.chosen = chosen.length > 0 ? chosen : null;
    this.render();
  }

  /** First load: every row. */
  async load(searcherMetric: string | null): Promise<void> {
    try {
      this.searcherMetric = searcherMetric;
      await this.fetchNew();
      this.render();
    } catch (err) {
      if (!this.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the metrics: ${errorMessage(err)}`));
    }
  }

  /** New rows since the last fetch; redraws when there are any. */
  async poll(): Promise<void> {
    if ((await this.fetchNew()) > 0) this.render();
  }

  dispose(): void {
    for (const chart of this.chartsByName.values()) chart.dispose();
  }

  private async fetchNew(): Promise<number> {
    let added = 0;
    await Promise.all(
      KINDS.map(async (kind) => {
        for (;;) {
          const rows = await api.trialMetrics(
            this.trialId,
            { kind, afterBatches: this.after[kind] < 0 ? undefined : this.after[kind], limit: PAGE_ROWS },
            this.signal,
          );
          for (const row of rows) {
            if (row.total_batches <= this.after[kind]) continue;
            this.rows[kind].push(row);
            this.after[kind] = row.total_batches;
            added += 1;
          }
          if (rows.length < PAGE_ROWS) break;
        }
      }),
    );
    return added;
  }

  /** Every metric name with the kinds that report it. */
  private names(): Map<string, Set<MetricKind>> {
    const names = new Map<string, Set<MetricKind>>();
    for (const kind of KINDS) {
      const seen = new Set<string>();
      for (const row of this.rows[kind]) {
        for (const name of Object.keys(row.metrics)) {
          if (seen.has(name)) continue;
          seen.add(name);
          if (!names.has(name)) names.set(name, new Set());
          names.get(name)?.add(kind);
        }
      }
    }
    return names;
  }

  private render(): void {
    const names = this.names();
    // The defaults follow the metrics reported so far: a page opened before the first rows
    // draws its charts when they come.
    const chosen = (this.chosen ?? defaultMetrics([...names.keys()], this.searcherMetric)).filter((n) => names.has(n));
    if (names.size === 0) {
      this.chooser.replaceChildren(h("p", { class: "muted" }, "No metrics reported yet."));
      return;
    }
    const sorted = [...names.keys()].sort();
    const focused = this.chooser.contains(document.activeElement) ? (document.activeElement as HTMLElement).id : null;
    this.chooser.replaceChildren(
      h("legend", {}, "Show"),
      ...sorted.map((name) => {
        const id = `metric-${name}`;
        const box = h("input", {
          type: "checkbox",
          id,
          checked: chosen.includes(name),
          onchange: () => {
            const next = sorted.filter((n) => (n === name ? box.checked : chosen.includes(n)));
            setQuery({ metric: next.length > 0 ? next : null }, { replace: true });
          },
        });
        const kinds = [...(names.get(name) ?? [])].join(", ");
        return h("label", { class: "check", for: id }, box, ` ${name} `, h("span", { class: "muted small" }, kinds));
      }),
    );
    if (focused) document.getElementById(focused)?.focus();
    for (const [name, chart] of this.chartsByName) {
      if (!chosen.includes(name)) {
        chart.dispose();
        chart.el.parentElement?.remove();
        this.chartsByName.delete(name);
      }
    }
    for (const name of chosen) {
      let chart = this.chartsByName.get(name);
      if (!chart) {
        chart = new LineChart({
          height: 240,
          xLabel: "Batches",
          yLabel: name,
          emptyText: `No points for ${name}.`,
          legend: true,
        });
        this.chartsByName.set(name, chart);
        this.charts.append(h("figure", { class: "chart-cell" }, h("figcaption", {}, name), chart.el));
      }
      chart.setData(this.series(name));
    }
    // Keep the charts in the order of the chooser.
    for (const name of sorted) {
      const cell = this.chartsByName.get(name)?.el.parentElement;
      if (cell) this.charts.append(cell);
    }
  }

  private series(name: string): LineSeries[] {
    return KINDS.filter((kind) => this.rows[kind].some((r) => name in r.metrics)).map((kind, i) => ({
      id: i,
      label: kind,
      color: seriesColor(kind === "training" ? 0 : 1),
      emphasis: kind === "validation",
      points: this.rows[kind]
        .filter((r) => name in r.metrics)
        .map((r): Point => [r.total_batches, finite(metricNumber(r.metrics[name]))]),
    }));
  }
}

/** The metrics drawn when the URL names none: the searcher's metric and `loss` where reported,
 * else the first two reported. */
export function defaultMetrics(names: readonly string[], searcherMetric: string | null): string[] {
  const picked = [searcherMetric, "loss"].filter((n): n is string => n !== null && names.includes(n));
  return picked.length > 0 ? [...new Set(picked)] : names.slice(0, 2);
}

function finite(value: number | null): number | null {
  return value != null && Number.isFinite(value) ? value : null;
}
