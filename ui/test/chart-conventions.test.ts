import { describe, expect, it } from "vitest";
import { xScaleRange } from "../src/components/line-chart";

describe("a line chart's x axis", () => {
  const trialSpan = (_min: number, max: number): [number, number] => [0, Math.max(max, 1.5)];

  it("is the data's extent, padded when it is one value", () => {
    expect(xScaleRange(2, 8, [2, 8])).toEqual([2, 8]);
    // uPlot asks for 0-100 around a single 0: the axis is about the point, not uPlot's guess.
    expect(xScaleRange(0, 100, [0, 0])).toEqual([-1, 1]);
  });

  it("is the chart's own range for the data's extent (a trial's duration)", () => {
    expect(xScaleRange(0, 100, [0, 0], trialSpan)).toEqual([0, 1.5]);
    expect(xScaleRange(0, 4, [0, 4], trialSpan)).toEqual([0, 4]);
  });

  it("keeps a zoom as asked", () => {
    expect(xScaleRange(1, 2, [0, 4], trialSpan)).toEqual([1, 2]);
  });

  it("has a range without data", () => {
    expect(xScaleRange(null, null, null, trialSpan)).toEqual([0, 1]);
  });
});
