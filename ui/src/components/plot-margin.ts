// Margins that never clip a mark: a plot's value range widened so that the marks at its
// extremes (a dot of some pixels' radius) sit wholly inside the plot area.

import { formatAxisNumbers } from "../format";

/** The fraction of a plot's span left empty on each side of its data. */
export const MARGIN_FRACTION = 0.06;

/** [min, max] widened by `fraction` of the span on each side (of the decades on a log scale);
 * a single value gets a span around it. */
export function paddedRange(
  min: number,
  max: number,
  options: { log?: boolean; fraction?: number } = {},
): [number, number] {
  const fraction = options.fraction ?? MARGIN_FRACTION;
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (options.log && min > 0 && max > 0) {
    const [lo, hi] = paddedRange(Math.log10(min), Math.log10(max), { fraction });
    return [10 ** lo, 10 ** hi];
  }
  if (min === max) {
    const half = min === 0 ? 1 : Math.abs(min) * 0.1;
    return [min - half, max + half];
  }
  const pad = (max - min) * fraction;
  return [min - pad, max + pad];
}

/** The least distance, in pixels, from any of the points to the edges of the box: a plot
 * whose marks have radius r clips none when this is at least r. */
export function leastInset(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  box: { left: number; top: number; width: number; height: number },
): number {
  let least = Infinity;
  for (let k = 0; k < xs.length; k++) {
    const x = xs[k] as number;
    const y = ys[k] as number;
    least = Math.min(least, x - box.left, box.left + box.width - x, y - box.top, box.top + box.height - y);
  }
  return least;
}

/** Up to ~6 "nice" tick values (1, 2, 5 × 10^k steps) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Nice ticks over [lo, hi] (`niceTicks`) with their labels in one number format. */
export function labelledTicks(lo: number, hi: number, count = 5): [number, string][] {
  const values = niceTicks(lo, hi, count);
  const labels = formatAxisNumbers(values);
  return values.map((v, i) => [v, labels[i] ?? ""]);
}
