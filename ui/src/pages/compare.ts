// Trials side by side, from the URL (`#/compare?trials=3,7,12`): state, experiment,
// hyperparameters, the final and best value of every validation metric, checkpoints, and
// the curves of any metric overlaid (one line per trial, its own colour, with a legend).

import { type Checkpoint, type MetricRow, type Trial, api, metricNumber } from "../api";
import { LineChart, type Point } from "../components/line-chart";
import { errorMessage, notice } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { h } from "../dom";
import { EM_DASH, formatInteger, formatNumber, formatValue } from "../format";
import { flattenHparams } from "../hparams";
import { seriesColor } from "../palette";
import { type Page, type Route, href, navigate, setQuery } from "../router";

const MAX_TRIALS = 20;
const MAX_ROWS = 10_000;

interface Compared {
  trial: Trial;
  rows: MetricRow[];
  checkpoints: Checkpoint[];
}

export function comparedIds(query: URLSearchParams): number[] {
  const ids = query
    .getAll("trials")
    .flatMap((v) => v.split(","))
    .map((v) => Number(v.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  return [...new Set(ids)].slice(0, MAX_TRIALS);
}

export class ComparePage implements Page {
  readonly el: HTMLElement;
  private readonly message = h("div");
  private readonly tableHost = h("div", { class: "table-wrap" });
  private readonly chartHost = h("div");
  private readonly metricSelect: HTMLSelectElement;
  private compared: Compared[] = [];
  private chart: LineChart | null = null;
  private readonly controller = new AbortController();
  private metric = "";

  constructor(route: Route) {
    this.metricSelect = h("select", {
      id: "compare-metric",
      onchange: () => setQuery({ metric: this.metricSelect.value }, { replace: true }),
    });
    this.metric = route.query.get("metric") ?? "";
    this.el = h(
      "div",
      { class: "page compare", "data-testid": "compare-page" },
      h("h1", {}, "Compare trials"),
      this.message,
      h("section", { class: "card" }, this.tableHost),
      h(
        "section",
        { class: "card" },
        h("h2", {}, "Curves"),
        h(
          "form",
          { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
          h("div", { class: "field" }, h("label", { for: "compare-metric" }, "Metric"), this.metricSelect),
        ),
        this.chartHost,
      ),
    );
    void this.load(comparedIds(route.query));
  }

  update(route: Route): void {
    const ids = comparedIds(route.query);
    this.metric = route.query.get("metric") ?? this.metric;
    if (ids.join() !== this.compared.map((c) => c.trial.id).join()) void this.load(ids);
    else this.drawCurves();
  }

  dispose(): void {
    this.controller.abort();
    this.chart?.dispose();
  }

  private async load(ids: number[]): Promise<void> {
    const signal = this.controller.signal;
    if (ids.length === 0) {
      this.message.replaceChildren(notice("No trials to compare: the address names none (#/compare?trials=3,7)."));
      return;
    }
    try {
      this.compared = await Promise.all(
        ids.map(async (id) => {
          const [trial, rows, checkpoints] = await Promise.all([
            api.trial(id, signal),
            api.trialMetrics(id, { limit: MAX_ROWS }, signal),
            api.trialCheckpoints(id, { limit: 5, offset: 0 }, signal),
          ]);
          return { trial, rows, checkpoints: checkpoints.items };
        }),
      );
    } catch (err) {
      if (!signal.aborted) this.message.replaceChildren(notice(`Could not load the trials: ${errorMessage(err)}`));
      return;
    }
    this.renderTable();
    const names = new Set<string>();
    for (const c of this.compared)
      for (const row of c.rows) for (const name of Object.keys(row.metrics)) names.add(`${row.kind}:${name}`);
    const sorted = [...names].sort();
    if (!this.metric || !names.has(this.metric))
      this.metric = sorted.find((n) => n.startsWith("validation:")) ?? sorted[0] ?? "";
    this.metricSelect.replaceChildren(...sorted.map((n) => h("option", { value: n }, n.replace(":", ": "))));
    this.metricSelect.value = this.metric;
    this.drawCurves();
  }

  private renderTable(): void {
    const compared = this.compared;
    const hparams = compared.map((c) => flattenHparams(c.trial.hparams));
    const hpNames = [...new Set(hparams.flatMap((p) => Object.keys(p)))].sort();
    const validation = compared.map((c) => c.rows.filter((r) => r.kind === "validation"));
    const metricNames = [...new Set(validation.flatMap((rows) => rows.flatMap((r) => Object.keys(r.metrics))))].sort();
    const row = (label: string, cells: (Node | string)[], attrs: Record<string, string> = {}) =>
      h(
        "tr",
        attrs,
        h("th", { scope: "row" }, label),
        cells.map((c) => h("td", {}, c)),
      );
    const final = (i: number, name: string) => {
      const rows = validation[i] ?? [];
      for (let k = rows.length - 1; k >= 0; k--) {
        const v = metricNumber(rows[k]?.metrics[name]);
        if (v != null) return v;
      }
      return null;
    };
    const best = (i: number, name: string) => {
      const values = (validation[i] ?? [])
        .map((r) => metricNumber(r.metrics[name]))
        .filter((v): v is number => v != null && Number.isFinite(v));
      return values.length ? values : null;
    };
    const table = h(
      "table",
      { class: "data compare-table", "data-testid": "compare-table" },
      h("caption", { class: "visually-hidden" }, "Trials side by side"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, ""),
          compared.map((c, i) =>
            h(
              "th",
              { scope: "col", "data-testid": "compare-trial", "data-trial-id": c.trial.id },
              // The curves' colour (a swatch is a line: its top border, as the chart's legend).
              h("span", {
                class: "swatch",
                "data-testid": "compare-swatch",
                style: `border-color: ${seriesColor(i)}`,
              }),
              h("a", { href: href(`/trials/${c.trial.id}`) }, `Trial ${c.trial.id}`),
            ),
          ),
        ),
      ),
      h(
        "tbody",
        {},
        row(
          "State",
          compared.map((c) =>
            stateBadge(c.trial.state, undefined, {
              kind: "trial",
              outcome: c.trial.outcome,
              batches: c.trial.total_batches,
            }),
          ),
        ),
        row(
          "Experiment",
          compared.map((c) =>
            h("a", { href: href(`/experiments/${c.trial.experiment_id}`) }, String(c.trial.experiment_id)),
          ),
        ),
        row(
          "Batches",
          compared.map((c) => formatInteger(c.trial.total_batches)),
        ),
        row(
          "Best searcher metric",
          compared.map((c) => formatNumber(c.trial.best_validation)),
          {
            "data-testid": "compare-best",
          },
        ),
        hpNames.map((name) =>
          row(
            name,
            hparams.map((p) => (name in p ? formatValue(p[name]) : EM_DASH)),
            { "data-testid": "compare-hparam", "data-name": name },
          ),
        ),
        metricNames.flatMap((name) => {
          const lows = compared.map((_c, i) => best(i, name));
          return [
            row(
              `${name} (final)`,
              compared.map((_c, i) => formatNumber(final(i, name))),
              {
                "data-testid": "compare-final",
                "data-name": name,
              },
            ),
            row(
              `${name} (min / max)`,
              lows.map((v) => (v ? `${formatNumber(Math.min(...v))} / ${formatNumber(Math.max(...v))}` : EM_DASH)),
            ),
          ];
        }),
        row(
          "Checkpoints",
          compared.map((c) =>
            c.checkpoints.length
              ? h(
                  "ul",
                  { class: "plain" },
                  c.checkpoints.map((k) =>
                    h(
                      "li",
                      {
                        class: k.state === "DELETED" ? "deleted" : null,
                        "data-testid": "compare-checkpoint",
                        "data-state": k.state,
                        title: k.state === "DELETED" ? `Checkpoint ${k.uuid}: its files were deleted` : k.uuid,
                      },
                      `batch ${formatInteger(k.total_batches)}: `,
                      h("code", {}, k.uuid.slice(0, 8)),
                      k.state === "COMPLETED" ? null : [" ", stateBadge(k.state, undefined, { kind: "checkpoint" })],
                    ),
                  ),
                )
              : EM_DASH,
          ),
        ),
      ),
    );
    this.tableHost.replaceChildren(table);
  }

  private drawCurves(): void {
    const [kind, name] = this.metric.split(":", 2) as [string, string | undefined];
    if (!name) return;
    this.chart?.dispose();
    this.chart = new LineChart({
      testId: "compare-curves",
      height: 300,
      xLabel: "Batches",
      yLabel: name,
      emptyText: `No ${kind} points for ${name}.`,
      onPick: (id) => navigate(`/trials/${id}`),
      linkOf: (id) => href(`/trials/${id}`),
      legend: true,
    });
    this.chartHost.replaceChildren(this.chart.el);
    this.chart.setData(
      this.compared.map((c, i) => ({
        id: c.trial.id,
        label: `Trial ${c.trial.id}`,
        points: c.rows
          .filter((r) => r.kind === kind)
          .map((r): Point => [r.total_batches, metricNumber(r.metrics[name])])
          .filter((p) => p[1] != null),
        color: seriesColor(i),
        emphasis: false,
      })),
    );
  }
}
