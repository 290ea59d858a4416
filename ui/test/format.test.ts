import { describe, expect, it } from "vitest";
import {
  durationTicks,
  formatAxisNumbers,
  formatBytes,
  formatDuration,
  formatNumber,
  formatPercent,
  formatState,
} from "../src/format";

describe("formatNumber", () => {
  it.each([
    [0.98328, "0.9833"],
    [12.3456, "12.35"],
    [1234.56, "1,235"],
    [999.99, "1,000"],
    [1234567, "1.235e+6"],
    [0.000032, "3.2e-5"],
    [0.001, "0.001"],
    [-0.0126, "-0.0126"],
    [100, "100"],
    [0, "0"],
    [Number.NaN, "NaN"],
    [Number.POSITIVE_INFINITY, "∞"],
  ])("%s reads %s", (value, text) => {
    expect(formatNumber(value)).toBe(text);
  });

  it("shows a dash for no value", () => {
    expect(formatNumber(null)).toBe("—");
  });
});

describe("formatDuration", () => {
  it.each([
    [850, "850ms"],
    [42_000, "42s"],
    [192_000, "3m 12s"],
    [7_500_000, "2h 05m"],
    [3 * 86_400_000 + 4 * 3_600_000, "3d 4h"],
  ])("%s ms reads %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("other formats", () => {
  it("sizes in binary units with one decimal, as the CLI", () => {
    // The CLI's units (pedl.cli._display.format_size): binary, one decimal.
    expect(formatBytes(12)).toBe("12 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(3000)).toBe("2.9 KiB");
    expect(formatBytes(867_234)).toBe("846.9 KiB");
    expect(formatBytes(1_500_000_000)).toBe("1.4 GiB");
    expect(formatBytes(5 * 1024 ** 4)).toBe("5120.0 GiB");
  });

  it("percentages are clamped", () => {
    expect(formatPercent(0.424)).toBe("42%");
    expect(formatPercent(1.2)).toBe("100%");
  });

  it("states read as words", () => {
    expect(formatState("STOPPING_KILLED")).toBe("stopping (kill)");
    expect(formatState("COMPLETED")).toBe("completed");
  });
});

describe("axis labels", () => {
  it("one number format per axis: exponents for all when one needs it", () => {
    // A log axis over decades: 0.005178 beside 3.466e-4 was two formats on one axis.
    expect(formatAxisNumbers([3.466e-4, 0.001, 0.005178])).toEqual(["3.466e-4", "1e-3", "5.178e-3"]);
    expect(formatAxisNumbers([0, 0.25, 0.5, null])).toEqual(["0", "0.25", "0.5", ""]);
    expect(formatAxisNumbers([0, 1e6, 2e6])).toEqual(["0", "1e+6", "2e+6"]);
  });

  it("time axes in one unit, from 0 (no 0ms)", () => {
    expect(durationTicks(33)).toEqual([
      [0, "0"],
      [10, "10 s"],
      [20, "20 s"],
      [30, "30 s"],
    ]);
    expect(durationTicks(400).map(([, label]) => label)).toEqual(["0", "2 min", "4 min", "6 min"]);
    expect(durationTicks(5 * 3600).map(([, label]) => label)).toEqual(["0", "1 h", "2 h", "3 h", "4 h", "5 h"]);
    for (const max of [0.4, 7, 59, 61, 119, 121, 3599, 7201, 86400]) {
      const labels = durationTicks(max).map(([, label]) => label);
      expect(labels[0]).toBe("0");
      expect(new Set(labels.slice(1).map((l) => l.split(" ")[1])).size).toBeLessThanOrEqual(1);
      expect(labels.some((l) => l.endsWith("ms"))).toBe(false);
    }
  });
});
