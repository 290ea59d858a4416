import { describe, expect, it } from "vitest";
import { niceTicks } from "../src/components/plot-margin";
import { passes } from "../src/components/summary-table";

describe("niceTicks", () => {
  it("steps of 1, 2 or 5 times a power of ten inside the range", () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(16, 512)).toEqual([100, 200, 300, 400, 500]);
    expect(niceTicks(0.0013, 0.0981)).toEqual([0.02, 0.04, 0.06, 0.08]);
    expect(niceTicks(3, 3)).toEqual([3]);
  });
  it("never leaves the range", () => {
    for (const [lo, hi] of [
      [-7.3, 12.9],
      [1e-5, 3e-4],
      [100, 100.5],
    ] as const) {
      const ticks = niceTicks(lo, hi);
      expect(ticks.length).toBeGreaterThan(1);
      for (const t of ticks) expect(t >= lo - 1e-12 && t <= hi + 1e-12).toBe(true);
    }
  });
});

describe("passes", () => {
  it("ranges, comparisons, equality and text", () => {
    expect(passes(25, "20..39")).toBe(true);
    expect(passes(40, "20..39")).toBe(false);
    expect(passes(0.5, ">0.4")).toBe(true);
    expect(passes(0.4, ">0.4")).toBe(false);
    expect(passes(0.4, ">=0.4")).toBe(true);
    expect(passes(3, "<=3")).toBe(true);
    expect(passes(3, "3")).toBe(true);
    expect(passes("rmsprop", "RMS")).toBe(true);
    expect(passes("adam", "sgd")).toBe(false);
    expect(passes(null, ">1")).toBe(false);
    expect(passes(null, "")).toBe(true);
  });
});
