// A trial's system metrics: CPU, memory, disk, network and GPU use as its processes sampled
// them (every rank of a multi-worker trial), one chart per kind, by seconds since the first
// sample. The master downsamples a long trial to MAX_POINTS samples per worker.

import { type SystemSample, api } from "../api";
import { LineChart, type LineSeries, type Point } from "../components/line-chart";
import { errorMessage, notice } from "../components/notice";
import { h } from "../dom";
import { formatInteger } from "../format";
import { seriesColor } from "../palette";
import { naturalCompare } from "../natural-order";

const MAX_POINTS = 1000;
/** Samples arrive 6 at a time (every 30 s at the default interval): no need to read them at
 * every poll of the page. */
const REFRESH_MS = 10_000;
const MIB = 1024 * 1024;

interface ChartSpec {
  id: string;
  title: string;
  unit: string;
  /** The metrics drawn, by name (or a pattern of names: the GPUs). */
  match: (name: string) => boolean;
  scale: number;
}

const CHARTS: readonly ChartSpec[] = [
  {
    id: "cpu",
    title: "CPU",
    unit: "%",
    match: (n) => n === "cpu_percent" || n === "process_cpu_percent",
    scale: 1,
  },
  { id: "memory", title: "Memory in use", unit: "%", match: (n) => n === "memory_percent", scale: 1 },
  { id: "rss", title: "Process memory", unit: "MiB", match: (n) => n === "process_rss_bytes", scale: MIB },
  { id: "disk", title: "Disk", unit: "MiB/s", match: (n) => n.startsWith("disk_"), scale: MIB },
  { id: "network", title: "Network", unit: "MiB/s", match: (n) => n.startsWith("net_"), scale: MIB },
  { id: "gpu", title: "GPU utilization", unit: "%", match: (n) => /^gpu\d+_util_percent$/.test(n), scale: 1 },
  {
    id: "gpu-memory",
    title: "GPU memory",
    unit: "MiB",
    match: (n) => /^gpu\d+_memory_used_bytes$/.test(n),
    scale: MIB,
  },
];

/** A metric's name for the legend: `process_cpu_percent` reads "process cpu". */
function label(name: string): string {
  return name
    .replace(/_(percent|bytes_per_s|bytes)$/, "")
    .replace(/_util$/, "")
    .replace(/_/g, " ");
}

export class TrialSystemMetrics {
  readonly el: HTMLElement;
  private readonly message = h("div");
  private readonly summary = h("p", { class: "muted small", "data-testid": "system-metrics-summary" });
  private readonly charts = h("div", { class: "chart-grid" });
  private readonly chartsById = new Map<string, LineChart>();

  constructor(
    private readonly trialId: number,
    private readonly signal: AbortSignal,
  ) {
    this.el = h(
      "section",
      { class: "card system-metrics", "data-testid": "system-metrics" },
      h("h2", {}, "System metrics"),
      this.message,
      this.summary,
      this.charts,
    );
  }

  private loadedAt = 0;
  /** The x axis' end: seconds from the first sample to the trial's end (or now). */
  private spanEnd = 0;
  /** The trial's end, once it ended (the axis runs to it; to now while it runs). */
  private endedAt: number | null = null;

  /** The trial's end (its `ended_at`), null while it runs. */
  setEnd(endedAt: string | null): void {
    this.endedAt = endedAt ? Date.parse(endedAt) : null;
  }

  /** At a poll of the page: fetch again when the last fetch is REFRESH_MS old, or `ended` (the
   * trial's last samples are in). */
  async poll(ended: boolean): Promise<void> {
    if (ended || Date.now() - this.loadedAt >= REFRESH_MS) await this.load();
  }

  /** Fetch the (downsampled) samples and redraw. */
  async load(): Promise<void> {
    this.loadedAt = Date.now();
    try {
      const body = await api.trialSystemMetrics(this.trialId, { maxPoints: MAX_POINTS }, this.signal);
      this.message.replaceChildren();
      this.render(body.samples, body.total, body.downsampled);
    } catch (err) {
      if (!this.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the system metrics: ${errorMessage(err)}`));
    }
  }

  dispose(): void {
    for (const chart of this.chartsById.values()) chart.dispose();
  }

  private render(samples: SystemSample[], total: number, downsampled: boolean): void {
    if (samples.length === 0) {
      this.summary.textContent =
        "No system metrics recorded yet (each process of the trial samples every few seconds).";
      return;
    }
    const ranks = new Set(samples.map((s) => s.rank));
    this.summary.textContent =
      `${formatInteger(total)} samples from ${ranks.size} ${ranks.size === 1 ? "process" : "processes"}` +
      (downsampled ? `, ${formatInteger(samples.length)} of them drawn (evenly spread).` : ".");
    const times = samples.map((s) => Date.parse(s.time));
    const start = Math.min(...times);
    // The axis spans the trial's time with samples: first sample to its end (or now), and at
    // least the last sample, so a short trial's few samples are not dots on a 0-100 s axis.
    const end = Math.max(...times, this.endedAt ?? Date.now());
    this.spanEnd = Math.max(1, (end - start) / 1000);
    for (const spec of CHARTS) {
      const series = this.series(spec, samples, start, ranks.size > 1);
      if (series.length === 0) continue;
      let chart = this.chartsById.get(spec.id);
      if (!chart) {
        chart = new LineChart({
          testId: `system-chart-${spec.id}`,
          height: 200,
          xLabel: "Seconds since the first sample",
          xRange: (_min, max) => [0, Math.max(max, this.spanEnd)],
          // The unit only: the caption above says what it is, and a long title turned on its
          // side overran a 200 px chart.
          yLabel: spec.unit,
          emptyText: `No ${spec.title.toLowerCase()} samples.`,
          legend: true,
        });
        this.chartsById.set(spec.id, chart);
        this.charts.append(
          h("figure", { class: "chart-cell" }, h("figcaption", {}, `${spec.title} (${spec.unit})`), chart.el),
        );
      }
      chart.setData(series);
    }
  }

  private series(spec: ChartSpec, samples: SystemSample[], start: number, byRank: boolean): LineSeries[] {
    const points = new Map<string, Point[]>();
    for (const sample of samples) {
      const x = (Date.parse(sample.time) - start) / 1000;
      for (const [name, value] of Object.entries(sample.metrics)) {
        if (!spec.match(name)) continue;
        const key = byRank ? `${label(name)} (rank ${sample.rank})` : label(name);
        let list = points.get(key);
        if (!list) points.set(key, (list = []));
        list.push([x, value / spec.scale]);
      }
    }
    return [...points.entries()]
      .sort(([a], [b]) => naturalCompare(a, b))
      .map(([key, list], i) => ({
        id: i,
        label: key,
        color: seriesColor(i),
        emphasis: false,
        points: list.sort((a, b) => a[0] - b[0]),
      }));
  }
}
