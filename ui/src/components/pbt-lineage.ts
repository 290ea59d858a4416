// The lineage of a population-based training (pbt) search: one point per trial and round
// (x: the round, y: the searcher metric at the end of it), each trial's rounds joined by a
// line, and a dashed line from a parent's point to its copy's first point. Drawn as plain
// SVG: a pbt search has tens of trials, not thousands.

import { type Trial, api } from "../api";
import { h } from "../dom";
import { formatInteger, formatNumber, formatValue } from "../format";
import { href } from "../router";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 280;
const PAD = { left: 56, right: 16, top: 12, bottom: 36 };

/** What the lineage needs of a trial: its id, its parent and where it copied it. */
export interface LineageTrial {
  id: number;
  parent_trial_id?: number | null;
  parent_batches?: number | null;
}

/** One point of the graph: trial `trialId`'s metric at the end of round `round` (1-based). */
export interface LineagePoint {
  trialId: number;
  round: number;
  metric: number;
}

/** A line of the graph: a trial from one round to its next, or a parent to its copy. */
export interface LineageEdge {
  from: LineagePoint;
  to: LineagePoint;
  copy: boolean;
}

/**
 * The points and lines of the lineage. `validations` holds each trial's searcher metric by
 * its own batch count; a copy's counters start at 0 from its parent's checkpoint at
 * `parent_batches`, so its round r is its parent's round at that checkpoint plus r.
 * `batchesPerRound`: the searcher's length_per_round in batches.
 */
export function lineageLayout(
  trials: readonly LineageTrial[],
  validations: ReadonlyMap<number, ReadonlyMap<number, number>>,
  batchesPerRound: number,
): { points: LineagePoint[]; edges: LineageEdge[] } {
  const byId = new Map(trials.map((t) => [t.id, t]));
  const start = new Map<number, number>();
  const startOf = (trial: LineageTrial, depth = 0): number => {
    const known = start.get(trial.id);
    if (known !== undefined) return known;
    const parent = trial.parent_trial_id == null ? undefined : byId.get(trial.parent_trial_id);
    const offset =
      parent && depth < trials.length
        ? startOf(parent, depth + 1) + Math.round((trial.parent_batches ?? 0) / batchesPerRound)
        : 0;
    start.set(trial.id, offset);
    return offset;
  };
  const points: LineagePoint[] = [];
  const edges: LineageEdge[] = [];
  const pointAt = new Map<string, LineagePoint>();
  for (const trial of trials) {
    const rows = validations.get(trial.id) ?? new Map<number, number>();
    let previous: LineagePoint | null = null;
    for (const [batches, metric] of [...rows].sort((a, b) => a[0] - b[0])) {
      if (batches <= 0 || batches % batchesPerRound !== 0) continue;
      const point = { trialId: trial.id, round: startOf(trial) + batches / batchesPerRound, metric };
      points.push(point);
      pointAt.set(`${trial.id}:${point.round}`, point);
      if (previous) edges.push({ from: previous, to: point, copy: false });
      previous = point;
    }
  }
  for (const trial of trials) {
    if (trial.parent_trial_id == null) continue;
    const from = pointAt.get(`${trial.parent_trial_id}:${startOf(trial)}`);
    const to = points.find((p) => p.trialId === trial.id);
    if (from && to) edges.push({ from, to, copy: true });
  }
  return { points, edges };
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  return el;
}

/** The graph as an SVG element (empty text when there is nothing to draw yet). */
export function lineageChart(layout: { points: LineagePoint[]; edges: LineageEdge[] }, metricName: string): Element {
  const { points, edges } = layout;
  if (points.length === 0) return h("p", { class: "muted" }, "No round has ended yet.");
  const rounds = Math.max(...points.map((p) => p.round));
  const metrics = points.map((p) => p.metric);
  let low = Math.min(...metrics);
  let high = Math.max(...metrics);
  if (high === low) [low, high] = [low - 1, high + 1];
  const x = (round: number) => PAD.left + ((round - 0.5) / Math.max(rounds, 1)) * (WIDTH - PAD.left - PAD.right);
  const y = (metric: number) => PAD.top + (1 - (metric - low) / (high - low)) * (HEIGHT - PAD.top - PAD.bottom);
  const root = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "pbt-lineage",
    role: "img",
    "aria-label": `${metricName} of each trial by round, with lines from parents to copies`,
  });
  for (let r = 1; r <= rounds; r++) {
    const label = svg("text", { x: x(r), y: HEIGHT - 12, "text-anchor": "middle", "font-size": 11 });
    label.textContent = `round ${r}`;
    root.append(label);
  }
  for (const value of [low, high]) {
    const label = svg("text", { x: PAD.left - 6, y: y(value) + 4, "text-anchor": "end", "font-size": 11 });
    label.textContent = formatNumber(value);
    root.append(label);
  }
  for (const edge of edges) {
    root.append(
      svg("line", {
        x1: x(edge.from.round),
        y1: y(edge.from.metric),
        x2: x(edge.to.round),
        y2: y(edge.to.metric),
        stroke: edge.copy ? "#e15759" : "#4e79a7",
        "stroke-width": 1.5,
        ...(edge.copy ? { "stroke-dasharray": "4 3" } : {}),
      }),
    );
  }
  for (const point of points) {
    const dot = svg("circle", { cx: x(point.round), cy: y(point.metric), r: 4, fill: "#4e79a7" });
    const title = svg("title", {});
    title.textContent = `trial ${point.trialId}, round ${point.round}: ${metricName} ${formatNumber(point.metric)}`;
    dot.append(title);
    root.append(dot);
  }
  return root;
}

/** The lineage card of a pbt experiment: fetches its trials and their validations. */
export async function pbtLineageCard(
  experimentId: number,
  metricName: string,
  batchesPerRound: number,
  signal?: AbortSignal,
): Promise<HTMLElement> {
  const page = await api.trials(experimentId, { limit: 1000, offset: 0 }, signal);
  const trials: LineageTrial[] = page.items;
  const validations = new Map<number, Map<number, number>>();
  for (const trial of trials) {
    const rows = await api.trialMetrics(trial.id, { kind: "validation" }, signal);
    const byBatch = new Map<number, number>();
    for (const row of rows) {
      const value = row.metrics[metricName];
      if (typeof value === "number") byBatch.set(row.total_batches, value);
    }
    validations.set(trial.id, byBatch);
  }
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "Lineage"),
    lineageChart(lineageLayout(trials, validations, batchesPerRound), metricName),
  );
}

/**
 * A pbt config's length_per_round in batches (epochs and records through records_per_epoch
 * and a const global_batch_size), or null: not a pbt search, or a length that does not
 * convert.
 */
export function pbtBatchesPerRound(config: Record<string, unknown>): number | null {
  const searcher = (config.searcher ?? {}) as Record<string, unknown>;
  if (searcher.name !== "pbt") return null;
  const length = searcher.length_per_round;
  if (typeof length === "number") return length;
  if (!length || typeof length !== "object") return null;
  const { batches, records, epochs } = length as Record<string, unknown>;
  const hparams = (config.hyperparameters ?? {}) as Record<string, unknown>;
  const batchSize = typeof hparams.global_batch_size === "number" ? hparams.global_batch_size : null;
  const perEpoch = typeof config.records_per_epoch === "number" ? config.records_per_epoch : null;
  if (typeof batches === "number") return batches;
  if (typeof records === "number" && batchSize) return Math.ceil(records / batchSize);
  if (typeof epochs === "number" && batchSize && perEpoch) return Math.ceil((epochs * perEpoch) / batchSize);
  return null;
}

/**
 * A copy's lineage (population-based training): its parent (a link), the batch of the
 * parent's checkpoint it started from, and the hyperparameters it changed.
 */
export function lineageNote(trial: Trial): HTMLElement {
  const changed = Object.entries(trial.changed_hparams ?? {}).map(([name, change]) => {
    const { from, to } = (change ?? {}) as { from?: unknown; to?: unknown };
    return `${name} ${formatValue(from)} → ${formatValue(to)}`;
  });
  const checkpoint = trial.warm_start_checkpoint_uuid;
  return h(
    "span",
    { "data-testid": "trial-parent" },
    h("a", { href: href(`/trials/${trial.parent_trial_id}`) }, `trial ${trial.parent_trial_id}`),
    trial.parent_batches == null ? "" : ` at batch ${formatInteger(trial.parent_batches)}`,
    checkpoint ? h("span", { class: "mono", title: checkpoint }, ` (checkpoint ${checkpoint.slice(0, 8)})`) : "",
    changed.length > 0 ? `; changed: ${changed.join(", ")}` : "; no hyperparameter changed",
  );
}
