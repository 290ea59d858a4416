import { describe, expect, it } from "vitest";
import { lineageLayout, pbtBatchesPerRound } from "../src/components/pbt-lineage";

describe("lineageLayout", () => {
  it("places a copy's rounds after its parent's and joins parent to copy", () => {
    // Trials 1 and 2 train rounds 1-2; 3 copies 1 at batch 10 and trains round 2.
    const trials = [
      { id: 1, parent_trial_id: null },
      { id: 2, parent_trial_id: null },
      { id: 3, parent_trial_id: 1, parent_batches: 10 },
    ];
    const validations = new Map([
      [
        1,
        new Map([
          [0, 0.1],
          [10, 0.5],
          [20, 0.7],
        ]),
      ],
      [2, new Map([[10, 0.3]])],
      [3, new Map([[10, 0.6]])],
    ]);
    const { points, edges } = lineageLayout(trials, validations, 10);
    expect(points.map((p) => [p.trialId, p.round, p.metric])).toEqual([
      [1, 1, 0.5],
      [1, 2, 0.7],
      [2, 1, 0.3],
      [3, 2, 0.6],
    ]);
    expect(edges.map((e) => [e.from.trialId, e.from.round, e.to.trialId, e.to.round, e.copy])).toEqual([
      [1, 1, 1, 2, false],
      [1, 1, 3, 2, true],
    ]);
  });
});

describe("pbtBatchesPerRound", () => {
  it("converts the round's length to batches", () => {
    const searcher = { name: "pbt", length_per_round: { epochs: 2 } };
    const config = { searcher, records_per_epoch: 1438, hyperparameters: { global_batch_size: 32 } };
    expect(pbtBatchesPerRound(config)).toBe(90);
    expect(pbtBatchesPerRound({ searcher: { name: "pbt", length_per_round: { batches: 10 } } })).toBe(10);
    expect(pbtBatchesPerRound({ searcher: { name: "random" } })).toBeNull();
  });
});
