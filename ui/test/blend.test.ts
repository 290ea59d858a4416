import { describe, expect, it } from "vitest";
import { type Layer, blendSquares } from "../src/components/blend";

/** The reference: every square blended on its own, source-over, in floating point. */
function oneByOne(
  width: number,
  height: number,
  cx: number[],
  cy: number[],
  size: number,
  layers: readonly Layer[],
): Float64Array {
  const px = new Float64Array(width * height * 4);
  for (const [hex, alpha, include] of layers) {
    const colour = Number.parseInt(hex.slice(1), 16);
    const rgb = [(colour >> 16) & 255, (colour >> 8) & 255, colour & 255];
    cx.forEach((x, k) => {
      if (!include(k)) return;
      const x0 = Math.round(x - size / 2);
      const y0 = Math.round((cy[k] as number) - size / 2);
      for (let y = Math.max(0, y0); y < Math.min(height, y0 + size); y++)
        for (let xx = Math.max(0, x0); xx < Math.min(width, x0 + size); xx++) {
          const at = (y * width + xx) * 4;
          const below = (px[at + 3] as number) / 255;
          const out = alpha + below * (1 - alpha);
          for (let c = 0; c < 3; c++)
            px[at + c] = ((rgb[c] as number) * alpha + (px[at + c] as number) * below * (1 - alpha)) / out;
          px[at + 3] = out * 255;
        }
    });
  }
  return px;
}

describe("blending many squares", () => {
  it("equals blending them one by one, layer over layer", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 20; round++) {
      const width = 5 + Math.floor(random() * 30);
      const height = 5 + Math.floor(random() * 30);
      const n = Math.floor(random() * 400);
      const cx = Array.from({ length: n }, () => random() * (width + 6) - 3);
      const cy = Array.from({ length: n }, () => random() * (height + 6) - 3);
      const size = 1 + Math.floor(random() * 4);
      const layers: Layer[] = [
        ["#a3abb8", 0.25, (k) => k % 3 === 0],
        ["#4e79a7", 0.35, (k) => k % 3 !== 0],
      ];
      const pixels = new Uint8ClampedArray(width * height * 4);
      blendSquares(pixels, width, height, cx, cy, 0, 0, size, layers);
      const expected = oneByOne(width, height, cx, cy, size, layers);
      // One assertion a round (thousands of expect() calls took most of the test's time).
      let worst = 0;
      for (let i = 0; i < pixels.length; i++)
        worst = Math.max(worst, Math.abs((pixels[i] as number) - (expected[i] as number)));
      expect(worst).toBeLessThanOrEqual(1);
    }
  });

  it("leaves pixels without a square transparent and offsets by the plot's corner", () => {
    const pixels = new Uint8ClampedArray(4 * 4 * 4);
    blendSquares(pixels, 4, 4, [11], [21], 10, 20, 2, [["#ff0000", 0.5, () => true]]);
    const alphaAt = (x: number, y: number) => pixels[(y * 4 + x) * 4 + 3];
    expect([alphaAt(0, 0), alphaAt(1, 1), alphaAt(3, 3)]).toEqual([128, 128, 0]);
    expect(pixels[0]).toBe(255);
  });
});
