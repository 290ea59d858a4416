import { describe, expect, it } from "vitest";
import { formatBytes, formatDuration, formatNumber, formatPercent, formatState } from "../src/format";

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
  it("sizes in SI units with 3 significant digits", () => {
    expect(formatBytes(12)).toBe("12 B");
    expect(formatBytes(867_234)).toBe("867 kB");
    expect(formatBytes(1_500_000_000)).toBe("1.5 GB");
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
