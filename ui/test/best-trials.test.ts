import { describe, expect, it } from "vitest";
import type { TrialsSummary } from "../src/api";
import { bestTrialIds } from "../src/pages/experiment-visualization";

const summary = (best: (number | null)[]): TrialsSummary =>
  ({ trial_ids: best.map((_v, i) => i + 1), best_validation: best }) as unknown as TrialsSummary;

describe("bestTrialIds", () => {
  const values = [0.5, null, 0.1, 0.9, Number.NaN, 0.1, 0.3];

  it("keeps the best ones by the searcher metric, either way, the earlier on a tie", () => {
    expect([...bestTrialIds(summary(values), true, 3)]).toEqual([3, 6, 7]);
    expect([...bestTrialIds(summary(values), true, 1)]).toEqual([3]);
    expect([...bestTrialIds(summary(values), false, 2)]).toEqual([4, 1]);
  });

  it("takes what there is when fewer trials have a value", () => {
    expect([...bestTrialIds(summary(values), true, 10)]).toEqual([3, 6, 7, 1, 4]);
    expect(bestTrialIds(summary([null, null]), true).size).toBe(0);
    expect(bestTrialIds(summary(values), true, 0).size).toBe(0);
  });
});
