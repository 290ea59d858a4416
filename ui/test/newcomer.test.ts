import { describe, expect, it } from "vitest";
import { resolveScheme } from "../src/color-scheme";
import { withoutNulls } from "../src/pages/experiment-config";
import { levelName, shownText } from "../src/pages/trial-logs";
import { DARK_FLOOR, metricShade } from "../src/palette";

describe("the config without its unset fields", () => {
  it("drops null values at any depth and counts them", () => {
    const config = { a: 1, b: null, c: { d: null, e: [1, { f: null, g: 2 }] }, h: false };
    expect(withoutNulls(config)).toEqual({ value: { a: 1, c: { e: [1, { g: 2 }] }, h: false }, count: 3 });
    expect(withoutNulls({ x: 0, y: "" })).toEqual({ value: { x: 0, y: "" }, count: 0 });
  });
});

describe("a log line as shown", () => {
  const line = (message: string, level: string | null, timestamp: string | null = "2026-11-29T08:00:00Z") => ({
    seq: 1,
    message,
    level,
    stream: "stderr",
    timestamp,
    rank: null,
  });

  it("one timestamp: the line's own leading one goes, the level word its badge shows too", () => {
    expect(shownText(line("2026-11-29 08:00:00,123 INFO pedl.exec: started", "INFO"))).toBe("pedl.exec: started");
    expect(shownText(line("WARNING:tensorflow:slow", "WARNING"))).toBe("tensorflow:slow");
    expect(shownText(line("2026-11-29 08:00:00.123456: W tf/op.cc:1] w", "WARNING"))).toBe("W tf/op.cc:1] w");
    expect(shownText(line("Epoch 1/3", null))).toBe("Epoch 1/3");
    // Without a timestamp of its own the line keeps its text's.
    expect(shownText(line("2026-11-29 08:00:00 hello", null, null))).toBe("2026-11-29 08:00:00 hello");
  });

  it("levels as Determined names them", () => {
    expect(levelName(line("x", "warn"))).toBe("WARNING");
    expect(levelName(line("x", "FATAL"))).toBe("CRITICAL");
    expect(levelName(line("x", null))).toBeNull();
  });
});

describe("colours on a dark page", () => {
  it("the worst trials' shade is lifted above the darkest purples", () => {
    expect(metricShade(0, false)).toBe(0);
    expect(metricShade(0, true)).toBe(DARK_FLOOR);
    expect(metricShade(1, true)).toBe(1);
    expect(metricShade(0.5, true)).toBeCloseTo(DARK_FLOOR + (1 - DARK_FLOOR) / 2);
  });

  it("auto follows the browser, a choice wins", () => {
    expect(resolveScheme("auto", true)).toBe("dark");
    expect(resolveScheme("auto", false)).toBe("light");
    expect(resolveScheme("light", true)).toBe("light");
    expect(resolveScheme("dark", false)).toBe("dark");
  });
});
