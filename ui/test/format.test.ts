import { describe, expect, it } from "vitest";
import {
  durationTicks,
  formatAxisNumbers,
  formatBytes,
  formatClock,
  formatDuration,
  formatInteger,
  formatNumber,
  formatPercent,
  formatState,
  formatTime,
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

describe("formatInteger", () => {
  it("reads as Intl.NumberFormat's en-US integers do, for any number", () => {
    const intl = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
    // A fixed-seed generator over every magnitude and sign, halves (rounding) included.
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const values = [0, -0, 0.5, 1.5, -0.5, -1.5, 999.5, 1e21, -1e21, 2 ** 53, 1e300];
    for (let i = 0; i < 2000; i++) {
      const magnitude = 10 ** (next() * 24 - 2);
      const value = (next() < 0.5 ? -1 : 1) * magnitude;
      values.push(value, Math.round(value) + 0.5);
    }
    for (const value of values) {
      // Intl writes "-0" for -0.4; a count reads 0.
      const expected = Math.abs(value) < 0.5 ? "0" : intl.format(value);
      expect(formatInteger(value), String(value)).toBe(expected);
    }
    expect(formatInteger(-0.4)).toBe("0");
    expect(formatInteger(null)).toBe("—");
  });
});

describe("formatTime and formatClock", () => {
  it("read as Intl's en-GB formats do, in local time", () => {
    const withYear = new Intl.DateTimeFormat("en-GB", {
      year: "numeric",
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    });
    const thisYear = new Intl.DateTimeFormat("en-GB", {
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    });
    const clock = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" });
    const now = new Date();
    let seed = 777;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      // Any instant of 1970-2100, and of this year (which leaves the year out).
      const date =
        i % 2
          ? new Date(Date.UTC(1970, 0, 1) + next() * 130 * 365.25 * 86_400_000)
          : new Date(
              now.getFullYear(),
              Math.floor(next() * 12),
              1 + Math.floor(next() * 28),
              Math.floor(next() * 24),
              Math.floor(next() * 60),
              Math.floor(next() * 60),
            );
      const expected = (date.getFullYear() === now.getFullYear() ? thisYear : withYear).format(date);
      expect(formatTime(date.toISOString())).toBe(expected);
      expect(formatClock(date, true)).toBe(clock.format(date));
    }
    expect(formatTime(null)).toBe("—");
    expect(formatTime("not a time")).toBe("not a time");
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
