import { describe, expect, it } from "vitest";
import { outcomeNote, stateMeaning } from "../src/components/state-badge";

// The same rule as pedl.engine.outcome_note (tests/test_outcome_note.py): the CLI, the SDK and
// the web UI say a trial's outcome in the same words.
describe("outcomeNote", () => {
  it.each([
    ["COMPLETED", "INVALID_HP", "invalid hyperparameters"],
    ["COMPLETED", "STOPPED_BY_SEARCHER", "stopped by the searcher"],
    ["COMPLETED", "STOPPED_EARLY", "stopped early"],
    ["CANCELED", "KILLED", "killed"],
    ["CANCELED", "ERRORED", "errored"],
    ["ACTIVE", "ERRORED", "errored, to be restarted"],
  ])("%s with %s reads %s", (state, outcome, note) => {
    expect(outcomeNote(state, outcome)).toBe(note);
  });

  it.each([
    ["COMPLETED", "COMPLETED"],
    ["ERROR", "ERRORED"],
    ["ACTIVE", "PREEMPTED"],
    ["PAUSED", "PREEMPTED"],
    ["RUNNING", null],
  ])("%s with %s needs no note", (state, outcome) => {
    expect(outcomeNote(state, outcome)).toBeNull();
  });

  it("says an ACTIVE trial that has trained waits for the searcher", () => {
    expect(outcomeNote("ACTIVE", null, 40)).toBe("waiting for the searcher");
    expect(outcomeNote("ACTIVE", "PREEMPTED", 40)).toBe("waiting for the searcher");
    expect(outcomeNote("ACTIVE", "ERRORED", 40)).toBe("errored, to be restarted");
    expect(outcomeNote("ACTIVE", null, 0)).toBeNull(); // not yet scheduled
    expect(outcomeNote("RUNNING", null, 40)).toBeNull();
    expect(outcomeNote("QUEUED", null, 40)).toBeNull();
    expect(outcomeNote("PAUSED", null, 40)).toBeNull();
  });
});

describe("stateMeaning", () => {
  it("says a trial's ACTIVE runs no process and a RUNNING one does", () => {
    expect(stateMeaning("ACTIVE", "trial")).toContain("no process");
    expect(stateMeaning("RUNNING", "trial")).toContain("process is training");
    expect(stateMeaning("ACTIVE", "experiment")).toContain("Searching");
  });

  it("explains every state of every kind", () => {
    const trial = [
      "ACTIVE",
      "QUEUED",
      "RUNNING",
      "PAUSED",
      "STOPPING_CANCELED",
      "STOPPING_KILLED",
      "CANCELED",
      "COMPLETED",
      "ERROR",
    ];
    const experiment = ["ACTIVE", "PAUSED", "STOPPING_CANCELED", "STOPPING_KILLED", "CANCELED", "COMPLETED", "ERROR"];
    for (const s of trial) expect(stateMeaning(s, "trial")).toMatch(/\.$/);
    for (const s of experiment) expect(stateMeaning(s, "experiment")).toMatch(/\.$/);
    for (const s of ["ACTIVE", "COMPLETED", "ERROR", "DELETED"]) expect(stateMeaning(s, "checkpoint")).toMatch(/\.$/);
  });
});
