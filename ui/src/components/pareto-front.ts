// The Pareto front of a multi-objective search (`searcher.metrics`), from
// GET /experiments/{id}/pareto: with two objectives a scatter of every trial (x: the first
// objective, y: the second), the front's trials in the accent colour and joined by a staircase
// line in the order of the first objective; with more, parallel coordinates (one axis per
// objective, one line per trial, the front's lines on top). A click on a trial's dot or line
// picks it. Plain SVG: a search has hundreds of trials, not millions.

import type { components } from "../api-types";
import { h } from "../dom";
import { formatNumber } from "../format";
import { BEST_COLOR, MUTED_COLOR } from "../palette";

export type ParetoFront = components["schemas"]["ParetoFrontPublic"];
type Point = components["schemas"]["ParetoPointPublic"];

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 320;
const PAD = { left: 64, right: 20, top: 16, bottom: 44 };

/** A trial drawn: its id, where it is (chart coordinates, 0..1 per objective) and whether it
 * is on the front. */
export interface PlacedPoint {
  trialId: number;
  values: number[];
  position: number[];
  front: boolean;
}

/** The range of each objective over the points that have every value (one value: +-1). */
export function objectiveRanges(points: readonly Point[], count: number): [number, number][] {
  const ranges: [number, number][] = [];
  for (let k = 0; k < count; k++) {
    const values = complete(points, count).map((p) => p.values[k] as number);
    let low = Math.min(...values);
    let high = Math.max(...values);
    if (!Number.isFinite(low) || !Number.isFinite(high)) [low, high] = [0, 1];
    if (high === low) [low, high] = [low - 1, high + 1];
    ranges.push([low, high]);
  }
  return ranges;
}

function complete(points: readonly Point[], count: number): (Point & { values: number[] })[] {
  return points.filter(
    (p): p is Point & { values: number[] } =>
      p.values.length === count && p.values.every((v) => typeof v === "number" && Number.isFinite(v)),
  );
}

/** Every point with all the objectives, placed on 0..1 per objective (0: the range's low end). */
export function placePoints(front: ParetoFront): PlacedPoint[] {
  const count = front.objectives.length;
  const ranges = objectiveRanges(front.points, count);
  return complete(front.points, count).map((p) => ({
    trialId: p.trial_id,
    values: p.values,
    position: p.values.map((v: number, k) => {
      const [low, high] = ranges[k] as [number, number];
      return (v - low) / (high - low);
    }),
    front: p.rank === 0,
  }));
}

/** The staircase through the front of a two-objective search: the boundary of what the front
 * dominates. Its points ordered from the best in the first objective, each corner the worse of
 * its two neighbours in both objectives (`smallerIsBetter`: each objective's direction).
 * Coordinates on 0..1. */
export function frontStaircase(
  placed: readonly PlacedPoint[],
  smallerIsBetter: readonly boolean[],
): [number, number][] {
  // in "smaller is better" coordinates, where the corner of p and q is (max x, max y)
  const flip = (t: number, k: number) => (smallerIsBetter[k] ? t : 1 - t);
  const front = placed
    .filter((p) => p.front)
    .map((p) => [flip(p.position[0] as number, 0), flip(p.position[1] as number, 1)] as [number, number])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const path: [number, number][] = [];
  for (const [x, y] of front) {
    const last = path[path.length - 1];
    if (last) path.push([Math.max(x, last[0]), Math.max(y, last[1])]);
    path.push([x, y]);
  }
  return path.map(([x, y]) => [flip(x, 0), flip(y, 1)]);
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  if (tag === "svg") {
    // Through the CSSOM (the Content-Security-Policy blocks style attributes): the chart's
    // own size at most, its text as large as the page's.
    (el as SVGSVGElement).style.cssText = `width: 100%; max-width: ${WIDTH}px; height: auto; display: block;`;
  }
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

function objectiveLabel(o: ParetoFront["objectives"][number]): string {
  return `${o.name} (${o.smaller_is_better ? "smaller" : "larger"} is better)`;
}

function describe(point: PlacedPoint, front: ParetoFront): string {
  const values = front.objectives.map((o, k) => `${o.name} ${formatNumber(point.values[k] as number)}`);
  return `trial ${point.trialId}${point.front ? " (on the front)" : ""}: ${values.join(", ")}`;
}

/** Two objectives: the scatter with the front joined. */
function scatter(
  front: ParetoFront,
  placed: PlacedPoint[],
  onPick: (id: number, additive: boolean) => void,
): SVGElement {
  const ranges = objectiveRanges(front.points, 2);
  const x = (t: number) => PAD.left + t * (WIDTH - PAD.left - PAD.right);
  const y = (t: number) => PAD.top + (1 - t) * (HEIGHT - PAD.top - PAD.bottom);
  const root = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "pareto-front",
    role: "img",
    "data-testid": "pareto-scatter",
    "aria-label": `Every trial by ${front.objectives[0]?.name} and ${front.objectives[1]?.name}, the Pareto front joined`,
  });
  const [[x0, x1], [y0, y1]] = ranges as [[number, number], [number, number]];
  for (const [t, value] of [
    [0, x0],
    [1, x1],
  ] as const)
    root.append(
      svg("text", { x: x(t), y: HEIGHT - 24, "text-anchor": "middle", "font-size": 11 }, formatNumber(value)),
    );
  for (const [t, value] of [
    [0, y0],
    [1, y1],
  ] as const)
    root.append(
      svg("text", { x: PAD.left - 6, y: y(t) + 4, "text-anchor": "end", "font-size": 11 }, formatNumber(value)),
    );
  const [first, second] = front.objectives as [ParetoFront["objectives"][number], ParetoFront["objectives"][number]];
  root.append(
    svg(
      "text",
      { x: (x(0) + x(1)) / 2, y: HEIGHT - 6, "text-anchor": "middle", "font-size": 12 },
      objectiveLabel(first),
    ),
  );
  root.append(
    svg(
      "text",
      {
        x: 14,
        y: (y(0) + y(1)) / 2,
        "text-anchor": "middle",
        "font-size": 12,
        transform: `rotate(-90 14 ${(y(0) + y(1)) / 2})`,
      },
      objectiveLabel(second),
    ),
  );
  const stairs = frontStaircase(
    placed,
    front.objectives.map((o) => o.smaller_is_better),
  );
  if (stairs.length > 1) {
    root.append(
      svg("polyline", {
        points: stairs.map(([a, b]) => `${x(a)},${y(b)}`).join(" "),
        fill: "none",
        stroke: BEST_COLOR,
        "stroke-width": 1.5,
        "data-testid": "pareto-line",
      }),
    );
  }
  for (const point of [...placed].sort((a, b) => Number(a.front) - Number(b.front))) {
    const dot = svg("circle", {
      cx: x(point.position[0] as number),
      cy: y(point.position[1] as number),
      r: point.front ? 5 : 3.5,
      fill: point.front ? BEST_COLOR : MUTED_COLOR,
      "data-trial": point.trialId,
      "data-front": point.front ? "true" : "false",
      class: "pareto-point",
    });
    dot.append(svg("title", {}, describe(point, front)));
    dot.addEventListener("click", (e) => onPick(point.trialId, e.shiftKey || e.ctrlKey || e.metaKey));
    root.append(dot);
  }
  return root;
}

/** More objectives: parallel coordinates, one vertical axis per objective (better up). */
function parallel(
  front: ParetoFront,
  placed: PlacedPoint[],
  onPick: (id: number, additive: boolean) => void,
): SVGElement {
  const count = front.objectives.length;
  const ranges = objectiveRanges(front.points, count);
  const x = (k: number) => PAD.left + (k / Math.max(count - 1, 1)) * (WIDTH - PAD.left - PAD.right);
  // better up: a smaller-is-better objective has its low end at the top
  const y = (k: number, t: number) => {
    const up = front.objectives[k]?.smaller_is_better ? 1 - t : t;
    return PAD.top + (1 - up) * (HEIGHT - PAD.top - PAD.bottom);
  };
  const root = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "pareto-front",
    role: "img",
    "data-testid": "pareto-parallel",
    "aria-label": `Every trial across the ${count} objectives (better up), the Pareto front highlighted`,
  });
  front.objectives.forEach((o, k) => {
    const [low, high] = ranges[k] as [number, number];
    root.append(svg("line", { x1: x(k), x2: x(k), y1: y(k, 0), y2: y(k, 1), stroke: MUTED_COLOR }));
    root.append(svg("text", { x: x(k), y: HEIGHT - 24, "text-anchor": "middle", "font-size": 12 }, o.name));
    root.append(svg("text", { x: x(k) + 4, y: y(k, 1) + 4, "font-size": 10 }, formatNumber(high)));
    root.append(svg("text", { x: x(k) + 4, y: y(k, 0) + 4, "font-size": 10 }, formatNumber(low)));
  });
  for (const point of [...placed].sort((a, b) => Number(a.front) - Number(b.front))) {
    const line = svg("polyline", {
      points: point.position.map((t, k) => `${x(k)},${y(k, t)}`).join(" "),
      fill: "none",
      stroke: point.front ? BEST_COLOR : MUTED_COLOR,
      "stroke-width": point.front ? 2 : 1,
      "stroke-opacity": point.front ? 1 : 0.5,
      "data-trial": point.trialId,
      "data-front": point.front ? "true" : "false",
      class: "pareto-point",
    });
    line.append(svg("title", {}, describe(point, front)));
    line.addEventListener("click", (e) => onPick(point.trialId, e.shiftKey || e.ctrlKey || e.metaKey));
    root.append(line);
  }
  return root;
}

/** The front's chart and a line naming its trials; `onPick` hears a clicked trial. */
export function paretoFrontChart(front: ParetoFront, onPick: (id: number, additive: boolean) => void): HTMLElement {
  const placed = placePoints(front);
  const ids = front.front;
  const caption = h(
    "p",
    { class: "muted small", "data-testid": "pareto-caption" },
    ids.length === 0
      ? "No trial has validated with every objective yet."
      : `The front: ${ids.length} trial${ids.length === 1 ? "" : "s"} no other trial beats in every objective (${ids
          .map((id) => String(id))
          .join(", ")}). Click a trial to select it.`,
  );
  if (placed.length === 0) return h("div", {}, caption);
  const chart = front.objectives.length === 2 ? scatter(front, placed, onPick) : parallel(front, placed, onPick);
  return h("div", {}, chart, caption);
}
