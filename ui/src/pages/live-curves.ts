// Learning curves of an experiment's trials that follow the experiment while it runs.
//
// The first fetch asks the master for downsampled series (at most `maxTrials` trials of at
// most `maxPoints` points). While the experiment is live, every POLL_MS it asks only for the
// points newer than the answer's `cursor` (`after=<cursor>`) and appends them to the trials
// drawn. The whole (downsampled) set is fetched again when the appended raw points have
// grown a series past twice the downsampled size, or, at most every REFETCH_MS, when it may
// hold other trials: the experiment got new trials, a trial not drawn has points, or fewer
// trials are drawn than there are.
//
// `setView` greys the curves of the trials outside the parallel coordinates' brushes (drawn
// first, under the others).

import { ApiError, type MetricKind, type Series, type SeriesSelect, type SeriesTrial, type XAxis, api } from "../api";
import { LineChart, type LineSeries, type Point } from "../components/line-chart";
import { errorMessage } from "../components/notice";
import { MUTED_COLOR, seriesColor } from "../palette";
import { Poller } from "../poll";
import { href } from "../router";
import type { ExperimentContext } from "./experiment-context";

export interface CurveQuery {
  kind: MetricKind;
  metric: string;
  x: XAxis;
  maxTrials: number;
  maxPoints: number;
  /** Which trials (default: the best 5 and the rest spread evenly). */
  select?: SeriesSelect;
  /** With `select: "ids"`: the trials. */
  trialIds?: readonly number[];
}

const POLL_MS = 3000;
const REFETCH_MS = 15000;

export class LiveCurves {
  readonly chart: LineChart;
  private trials: SeriesTrial[] = [];
  private cursor = 0;
  private trialTotal = -1;
  private lastFull = 0;
  private kept: ReadonlySet<number> | null = null;
  private controller = new AbortController();
  private readonly poller = new Poller(() => this.poll(), POLL_MS);

  constructor(
    private readonly context: ExperimentContext,
    private readonly query: CurveQuery,
    private readonly options: {
      height: number;
      onPick: (trialId: number, additive: boolean) => void;
      /** Told of every whole answer (how many trials it drew of how many). */
      onFetched?: (series: Series) => void;
    },
  ) {
    const xLabel = query.x === "epochs" ? "Epochs" : "Batches";
    this.chart = new LineChart({
      testId: "learning-curves",
      height: options.height,
      xLabel,
      yLabel: query.metric,
      emptyText: `No ${query.kind} points for ${query.metric} yet.`,
      onPick: options.onPick,
      linkOf: (id) => href(`/trials/${id}`),
    });
  }

  /** Fetch and draw; resolves when drawn (or failed, with the reason shown in the chart). */
  async start(): Promise<void> {
    await this.fetchAll();
    if (this.context.live) this.poller.start();
  }

  /** The trials kept by the brushes (null: all): the others' curves turn grey. */
  setView(kept: ReadonlySet<number> | null): void {
    if (kept === this.kept) return;
    this.kept = kept;
    if (this.lastFull > 0) this.render();
  }

  dispose(): void {
    this.poller.stop();
    this.controller.abort();
    this.chart.dispose();
  }

  private async fetchAll(): Promise<void> {
    const { kind, metric, x, maxTrials, maxPoints, select, trialIds } = this.query;
    try {
      // The trial count tells a live page when new trials came; an ended one needs none.
      const [series, trials] = await Promise.all([
        api.series(
          this.context.id,
          { kind, metric, x, maxTrials, maxPoints, select, trialIds },
          this.controller.signal,
        ),
        this.context.live ? api.trials(this.context.id, { limit: 1, offset: 0 }, this.controller.signal) : null,
      ]);
      this.trials = series.trials;
      this.cursor = series.cursor;
      this.trialTotal = trials?.total ?? -1;
      this.lastFull = Date.now();
      this.options.onFetched?.(series);
      this.render();
    } catch (err) {
      if (this.controller.signal.aborted) return;
      const reason =
        err instanceof ApiError && err.field === "x"
          ? "This experiment's config does not say how many batches make an epoch."
          : errorMessage(err);
      this.chart.setEmptyText(`Could not load the learning curves: ${reason}`);
      this.chart.setData([]);
    }
  }

  private async poll(): Promise<boolean> {
    const live = this.context.live;
    const { kind, metric, x, maxTrials, select, trialIds } = this.query;
    const [update, trials] = await Promise.all([
      api.series(
        this.context.id,
        { kind, metric, x, after: this.cursor, maxTrials, select, trialIds },
        this.controller.signal,
      ),
      api.trials(this.context.id, { limit: 1, offset: 0 }, this.controller.signal),
    ]);
    const incomplete = this.trials.length < Math.min(trials.total, this.query.maxTrials);
    const { unknown, oversized } = this.append(update.trials);
    this.cursor = Math.max(this.cursor, update.cursor);
    const stale = trials.total !== this.trialTotal || unknown || incomplete;
    if (oversized || (stale && Date.now() - this.lastFull > REFETCH_MS)) {
      await this.fetchAll();
    } else if (update.trials.some((t) => t.points.length > 0)) {
      this.render();
    }
    // One last poll after the experiment ended picks up its final points; then stop.
    return live;
  }

  /** Append the new raw points of the trials drawn. `unknown`: a trial not drawn has points
   * (the answer holds only its newest); `oversized`: a series grew past twice the
   * downsampled size. Either way the series should be fetched whole again. */
  private append(updates: SeriesTrial[]): { unknown: boolean; oversized: boolean } {
    const byId = new Map(this.trials.map((t) => [t.trial_id, t]));
    let unknown = false;
    let oversized = false;
    for (const update of updates) {
      const known = byId.get(update.trial_id);
      if (!known) {
        if (update.points.length > 0) unknown = true;
        continue;
      }
      for (const point of update.points) {
        const last = known.points[known.points.length - 1];
        if (last && point[0] === last[0]) known.points[known.points.length - 1] = point;
        else if (!last || point[0] > last[0]) known.points.push(point);
      }
      if (known.points.length > 2 * this.query.maxPoints) oversized = true;
    }
    return { unknown, oversized };
  }

  private render(): void {
    const kept = this.kept;
    const ordered = [...this.trials].sort((a, b) => Number(b.best) - Number(a.best) || a.trial_id - b.trial_id);
    const greyed: LineSeries[] = [];
    const coloured: LineSeries[] = [];
    ordered.forEach((t, i) => {
      const outside = kept !== null && !kept.has(t.trial_id);
      (outside ? greyed : coloured).push({
        id: t.trial_id,
        label: `Trial ${t.trial_id}${t.best ? " (best)" : ""}${outside ? " (outside the brushed ranges)" : ""}`,
        points: t.points as Point[],
        color: outside ? MUTED_COLOR : seriesColor(i),
        emphasis: t.best && !outside,
      });
    });
    this.chart.el.dataset.greyed = String(greyed.length);
    this.chart.setData([...greyed, ...coloured]);
  }
}
