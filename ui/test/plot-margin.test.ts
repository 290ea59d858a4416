import { describe, expect, it } from "vitest";
import { leastInset, paddedRange } from "../src/components/plot-margin";

describe("paddedRange", () => {
  it("widens a linear range on both sides", () => {
    expect(paddedRange(0, 100, { fraction: 0.05 })).toEqual([-5, 105]);
  });
  it("widens a log range by decades", () => {
    const [lo, hi] = paddedRange(0.001, 0.1, { log: true, fraction: 0.05 });
    expect(Math.log10(lo)).toBeCloseTo(-3.1);
    expect(Math.log10(hi)).toBeCloseTo(-0.9);
  });
  it("gives a single value a span", () => {
    expect(paddedRange(2, 2)).toEqual([1.8, 2.2]);
    expect(paddedRange(0, 0)).toEqual([-1, 1]);
  });
});

describe("leastInset", () => {
  it("is the nearest edge of any point", () => {
    const box = { left: 10, top: 10, width: 100, height: 50 };
    expect(leastInset([20, 100], [30, 55], box)).toBe(5);
    expect(leastInset([], [], box)).toBe(Infinity);
  });
});
