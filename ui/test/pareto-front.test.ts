import { describe, expect, it } from "vitest";
import { type ParetoFront, frontStaircase, objectiveRanges, placePoints } from "../src/components/pareto-front";

function front(points: [number, (number | null)[], number | null][]): ParetoFront {
  return {
    experiment_id: 1,
    objectives: [
      { name: "val_accuracy", smaller_is_better: false },
      { name: "val_params", smaller_is_better: true },
    ],
    front: points.filter(([, , rank]) => rank === 0).map(([id]) => id),
    points: points.map(([id, values, rank]) => ({
      trial_id: id,
      state: "COMPLETED",
      hparams: {},
      values,
      rank,
      checkpoint_uuid: null,
    })),
  };
}

describe("the Pareto front chart's layout", () => {
  const data = front([
    [1, [0.9, 900], 0],
    [2, [0.8, 100], 0],
    [3, [0.7, 500], 1],
    [4, [0.99, null], null],
  ]);

  it("places every trial with all the objectives on 0..1 of their ranges", () => {
    const placed = placePoints(data);
    expect(placed.map((p) => p.trialId)).toEqual([1, 2, 3]);
    expect(placed[0]?.position[0]).toBeCloseTo(1);
    expect(placed[0]?.position[1]).toBeCloseTo(1);
    expect(placed[1]?.position[1]).toBeCloseTo(0);
    expect(placed.map((p) => p.front)).toEqual([true, true, false]);
  });

  it("pads a range of one value", () => {
    expect(objectiveRanges(front([[1, [2, 3], 0]]).points, 2)).toEqual([
      [1, 3],
      [2, 4],
    ]);
  });

  it("joins the front by the boundary of what it dominates", () => {
    // accuracy larger-is-better, params smaller: from the most accurate, left then down
    const stairs = frontStaircase(placePoints(data), [false, true]);
    expect(stairs.length).toBe(3);
    const [a, corner, b] = stairs as [[number, number], [number, number], [number, number]];
    expect(a[0]).toBeCloseTo(1); // trial 1 (0.9, 900) first
    expect(corner[0]).toBeCloseTo(0.5); // along x to trial 2's accuracy ...
    expect(corner[1]).toBeCloseTo(a[1]); // ... at trial 1's params
    expect(b).toEqual([expect.closeTo(0.5), expect.closeTo(0)]);
  });

  it("steps along x first when both are smaller-is-better", () => {
    const placed = [
      { trialId: 1, values: [0, 1], position: [0, 1], front: true },
      { trialId: 2, values: [1, 0], position: [1, 0], front: true },
    ];
    expect(frontStaircase(placed, [true, true])).toEqual([
      [0, 1],
      [1, 1],
      [1, 0],
    ]);
  });
});
