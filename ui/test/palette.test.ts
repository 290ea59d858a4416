import { describe, expect, it } from "vitest";
import { oklchToHex, seriesColor } from "../src/palette";

/** sRGB hex to OKLab (the space the palette is spaced in). */
function oklab(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  const lin = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((c) => {
    const v = c / 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const [r, g, b] = lin;
  const l = Math.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const m = Math.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const s = Math.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return [
    0.2104542553 * l + 0.793617785 * m - 0.0040720468 * s,
    1.9779984951 * l - 2.428592205 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.808675766 * s,
  ];
}

describe("seriesColor", () => {
  it("is stable and a hex colour", () => {
    expect(seriesColor(17)).toBe(seriesColor(17));
    expect(seriesColor(17)).toMatch(/^#[0-9a-f]{6}$/);
  });

  it("keeps neighbouring series apart beyond ten", () => {
    // Neighbours in a chart's order are the ones most often drawn next to each other.
    for (let i = 0; i < 40; i++) {
      const [a, b] = [oklab(seriesColor(i)), oklab(seriesColor(i + 1))];
      expect(Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2])).toBeGreaterThan(0.08);
    }
  });

  it("converts OKLCH to sRGB", () => {
    expect(oklchToHex(1, 0, 0)).toBe("#ffffff");
    expect(oklchToHex(0, 0, 0)).toBe("#000000");
  });
});
