import { describe, expect, it } from "vitest";
import type { Timeline } from "../src/api";
import { withinBrushes } from "../src/components/parallel-coordinates";
import { timelineRuns } from "../src/components/search-charts";
import { PointGrid, isAdditive, nextSelection } from "../src/components/selection";

/** The nearest point within `radius` by scanning all of them (what the grid must agree with). */
function scanNearest(xs: number[], ys: number[], x: number, y: number, radius: number): number {
  let found = -1;
  let foundD = radius;
  xs.forEach((px, k) => {
    const d = Math.hypot(px - x, (ys[k] as number) - y);
    if (d < foundD) {
      foundD = d;
      found = k;
    }
  });
  return found;
}

describe("PointGrid", () => {
  // A fixed pseudo-random cloud (no Math.random: the test must not change between runs).
  const xs: number[] = [];
  const ys: number[] = [];
  for (let k = 0; k < 2000; k++) {
    xs.push(((k * 7919) % 1000) / 2.5);
    ys.push(((k * 104729) % 997) / 5);
  }
  const grid = new PointGrid(xs, ys, 14);

  it("finds the same nearest point as a full scan, or none beyond the radius", () => {
    for (const [x, y] of [
      [0, 0],
      [123.4, 56.7],
      [399, 199],
      [250.5, 100.25],
      [-30, -30],
    ] as const) {
      expect(grid.nearest(x, y, 14)).toBe(scanNearest(xs, ys, x, y, 14));
    }
    expect(grid.nearest(-100, -100, 14)).toBe(-1);
  });

  it("lets a bonus win a near tie", () => {
    const two = new PointGrid([10, 14], [10, 10], 14);
    expect(two.nearest(11.5, 10, 14)).toBe(0);
    expect(two.nearest(11.5, 10, 14, (k) => (k === 1 ? 3 : 0))).toBe(1);
  });

  it("returns exactly the points inside a box, from any two corners", () => {
    const inside = xs.flatMap((x, k) =>
      x >= 50 && x <= 120 && (ys[k] as number) >= 20 && (ys[k] as number) <= 90 ? [k] : [],
    );
    expect(inside.length).toBeGreaterThan(10);
    expect(grid.inBox(50, 20, 120, 90)).toEqual(inside);
    expect(grid.inBox(120, 90, 50, 20)).toEqual(inside);
    expect(grid.inBox(1000, 1000, 1100, 1100)).toEqual([]);
  });

  it("leaves out points without a position", () => {
    const holes = new PointGrid([Number.NaN, 5, 6], [1, Number.NaN, 6], 10);
    expect(holes.inBox(-100, -100, 100, 100)).toEqual([2]);
    expect(new PointGrid([], [], 10).nearest(0, 0, 10)).toBe(-1);
  });
});

describe("nextSelection", () => {
  it("replaces the selection on a plain click or box", () => {
    expect(nextSelection([1, 2], [7], false)).toEqual([7]);
    expect(nextSelection([1, 2], [9, 3, 9], false)).toEqual([3, 9]);
    expect(nextSelection([1, 2], [], false)).toEqual([]);
  });

  it("toggles one trial or adds a box's when additive", () => {
    expect(nextSelection([1, 2], [7], true)).toEqual([1, 2, 7]);
    expect(nextSelection([1, 2, 7], [2], true)).toEqual([1, 7]);
    expect(nextSelection([1, 2], [2, 5], true)).toEqual([1, 2, 5]);
  });

  it("reads shift, ctrl and cmd as additive", () => {
    const none = { shiftKey: false, ctrlKey: false, metaKey: false };
    expect(isAdditive(none)).toBe(false);
    expect(isAdditive({ ...none, shiftKey: true })).toBe(true);
    expect(isAdditive({ ...none, ctrlKey: true })).toBe(true);
    expect(isAdditive({ ...none, metaKey: true })).toBe(true);
  });
});

describe("withinBrushes", () => {
  const positions = [0, 0.2, 0.5, 0.8, null];
  const other = [1, 0.9, 0.1, 0.6, 0.5];
  const at = (values: (number | null)[]) => (i: number) => values[i] ?? null;

  it("keeps rows inside every brushed range, ends included, and none without a value", () => {
    const one = withinBrushes([[at(positions), [0.2, 0.8]]]);
    expect([0, 1, 2, 3, 4].filter(one)).toEqual([1, 2, 3]);
    const two = withinBrushes([
      [at(positions), [0.2, 0.8]],
      [at(other), [0.5, 1]],
    ]);
    expect([0, 1, 2, 3, 4].filter(two)).toEqual([1, 3]);
  });

  it("keeps every row when nothing is brushed", () => {
    expect([0, 1, 2, 3, 4].filter(withinBrushes([]))).toEqual([0, 1, 2, 3, 4]);
  });
});

describe("timelineRuns", () => {
  const timeline = (starts: number[], ends: (number | null)[], slot: number[], states: string[]): Timeline =>
    ({
      trial_ids: starts.map((_s, i) => i + 1),
      starts,
      ends,
      slot,
      states,
      slots: Math.max(...slot) + 1,
      slots_per_trial: 1,
      now: 100,
    }) as unknown as Timeline;

  it("merges touching attempts of one slot and state into whole-pixel bars", () => {
    const data = timeline(
      [0, 0.2, 0.4, 50],
      [0.2, 0.4, 0.6, 60],
      [0, 0, 0, 0],
      ["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"],
    );
    const runs = timelineRuns(data, (t) => t * 10);
    expect([...runs.values()]).toEqual([
      [
        [0, 6, 0],
        [500, 600, 0],
      ],
    ]);
  });

  it("keeps slots and states apart, a running attempt reaching now", () => {
    const data = timeline([0, 0, 10], [5, 5, null], [0, 1, 0], ["COMPLETED", "COMPLETED", "RUNNING"]);
    const runs = [...timelineRuns(data, (t) => t).values()];
    expect(runs).toHaveLength(2);
    expect(runs[0]).toEqual([
      [0, 5, 0],
      [0, 5, 1],
    ]);
    expect(runs[1]).toEqual([[10, 100, 0]]);
  });
});
