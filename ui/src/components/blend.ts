// Many translucent squares blended into an image's pixels (non-premultiplied RGBA, as
// ImageData holds them), in layers: each layer one colour at one alpha over the dots it takes.
// Within a layer every square is the same colour and alpha, so n of them over a pixel are one
// source-over of that colour at alpha 1 - (1 - alpha)^n: a layer only counts its squares per
// pixel and then blends each covered pixel once, instead of once per square.

/** A layer: its colour (`#rrggbb`), its alpha, and which dots (by index) it draws. */
export type Layer = [colour: string, alpha: number, include: (k: number) => boolean];

/** Blend `size`-pixel squares centred on (`cx[k]` - `left`, `cy[k]` - `top`) into `pixels`
 * (`width` × `height`), one layer over the other in order. */
export function blendSquares(
  pixels: Uint8ClampedArray,
  width: number,
  height: number,
  cx: ArrayLike<number>,
  cy: ArrayLike<number>,
  left: number,
  top: number,
  size: number,
  layers: readonly Layer[],
): void {
  const counts = new Uint16Array(width * height);
  const offset = size / 2;
  for (const [colourHex, alpha, include] of layers) {
    counts.fill(0);
    let most = 0;
    for (let k = 0; k < cx.length; k++) {
      if (!include(k)) continue;
      const x0 = Math.round((cx[k] as number) - left - offset);
      const y0 = Math.round((cy[k] as number) - top - offset);
      const xStart = Math.max(0, x0);
      const xEnd = Math.min(width, x0 + size);
      for (let y = Math.max(0, y0); y < Math.min(height, y0 + size); y++) {
        for (let at = y * width + xStart, end = y * width + xEnd; at < end; at++) {
          const n = Math.min(65_535, (counts[at] as number) + 1);
          counts[at] = n;
          if (n > most) most = n;
        }
      }
    }
    if (most === 0) continue;
    const coverage = new Float64Array(most + 1);
    for (let n = 1; n <= most; n++) coverage[n] = 1 - (1 - alpha) ** n;
    const colour = Number.parseInt(colourHex.slice(1), 16);
    const rgb = [(colour >> 16) & 255, (colour >> 8) & 255, colour & 255] as const;
    for (let p = 0; p < counts.length; p++) {
      const n = counts[p] as number;
      if (n === 0) continue;
      // Source-over of the layer's colour at that alpha on the pixel so far (transparent or an
      // earlier layer's).
      const a = coverage[n] as number;
      const at = p * 4;
      const below = (pixels[at + 3] as number) / 255;
      const out = a + below * (1 - a);
      for (let c = 0; c < 3; c++) {
        pixels[at + c] = ((rgb[c] as number) * a + (pixels[at + c] as number) * below * (1 - a)) / out;
      }
      pixels[at + 3] = out * 255;
    }
  }
}
