import { describe, expect, it } from "vitest";
import { durationText, experimentRangeText, parseDurationText, withExperimentRange } from "../src/experiment-filters";

describe("durations as typed", () => {
  it("reads seconds, units and several parts", () => {
    expect(parseDurationText("90")).toBe(90);
    expect(parseDurationText("90s")).toBe(90);
    expect(parseDurationText("10m")).toBe(600);
    expect(parseDurationText("1h 30m")).toBe(5400);
    expect(parseDurationText("2d4h")).toBe(2 * 86_400 + 4 * 3600);
    expect(parseDurationText("1.5h")).toBe(5400);
  });

  it("is null for what is not a duration", () => {
    for (const text of ["", "  ", "abc", "10 minutes", "1h x", "-5m"]) expect(parseDurationText(text)).toBeNull();
  });

  it("writes seconds back in the same units", () => {
    expect(durationText(5400)).toBe("1h 30m");
    expect(durationText(45)).toBe("45s");
    expect(durationText(0)).toBe("0s");
    expect(durationText(2 * 86_400 + 61)).toBe("2d 1m 1s");
    for (const seconds of [1, 59, 61, 3600, 86_399, 90_061])
      expect(parseDurationText(durationText(seconds))).toBe(seconds);
  });
});

describe("the experiment list's range filters", () => {
  it("turn a percentage into a fraction and a duration into seconds for the API", () => {
    expect(withExperimentRange([], "progress", "50%..100")).toEqual(["progress:0.5..1"]);
    expect(withExperimentRange([], "duration", "10m..2h")).toEqual(["duration:600..7200"]);
    expect(withExperimentRange(["id:3.."], "duration", "..1h")).toEqual(["id:3..", "duration:..3600"]);
    expect(withExperimentRange(["id:3.."], "id", "")).toEqual([]);
  });

  it("keep one value as exactly it and what cannot be read as typed (the API says why)", () => {
    expect(withExperimentRange([], "id", "7")).toEqual(["id:7..7"]);
    expect(withExperimentRange([], "duration", "soon..")).toEqual(["duration:soon.."]);
  });

  it("split at the first colon, so a datetime bound stays whole", () => {
    const ranges = withExperimentRange([], "created_at", "2026-11-26T10:00..2026-11-27");
    expect(ranges).toEqual(["created_at:2026-11-26T10:00..2026-11-27"]);
    expect(experimentRangeText(ranges, "created_at")).toBe("2026-11-26T10:00..2026-11-27");
  });

  it("show the API's bounds in the box's units", () => {
    const ranges = ["progress:0.25..", "duration:..5400", "best_validation:0.1..0.2"];
    expect(experimentRangeText(ranges, "progress")).toBe("25%..");
    expect(experimentRangeText(ranges, "duration")).toBe("..1h 30m");
    expect(experimentRangeText(ranges, "best_validation")).toBe("0.1..0.2");
    expect(experimentRangeText(ranges, "id")).toBe("");
  });
});
