// Colours. Series colours are spaced in a perceptual colour space (OKLCH): hues step by the
// golden angle and lightness cycles through three levels, so neighbours differ in hue and
// brightness and even 30+ trials stay distinguishable. The first ten are a hand-checked
// categorical set (Tableau 10, colour-blind safer), the best trials take from it first.

const CATEGORICAL = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#59a14f",
  "#b07aa1",
  "#76b7b2",
  "#edc948",
  "#ff9da7",
  "#9c755f",
  "#3b6e8f",
];

const cache = new Map<number, string>();

/** The colour of the i-th series (0-based), stable for a given index. */
export function seriesColor(index: number): string {
  const known = CATEGORICAL[index];
  if (known) return known;
  const cached = cache.get(index);
  if (cached) return cached;
  const k = index - CATEGORICAL.length;
  const hue = (k * 137.508 + 20) % 360;
  const lightness = [0.62, 0.5, 0.74][k % 3] ?? 0.6;
  const color = oklchToHex(lightness, 0.13, hue);
  cache.set(index, color);
  return color;
}

/** `#rrggbb` plus an alpha as `rgba(...)`. */
export function withAlpha(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** OKLCH (L 0..1, C, hue in degrees) to an sRGB hex string, clipped to the gamut. */
export function oklchToHex(l: number, c: number, hueDeg: number): string {
  const h = (hueDeg * Math.PI) / 180;
  const a = c * Math.cos(h);
  const b = c * Math.sin(h);
  const l_ = l + 0.3963377774 * a + 0.2158037573 * b;
  const m_ = l - 0.1055613458 * a - 0.0638541728 * b;
  const s_ = l - 0.0894841775 * a - 1.291485548 * b;
  const L = l_ ** 3;
  const M = m_ ** 3;
  const S = s_ ** 3;
  const linear = [
    4.0767416621 * L - 3.3077115913 * M + 0.2309699292 * S,
    -1.2684380046 * L + 2.6097574011 * M - 0.3413193965 * S,
    -0.0041960863 * L - 0.7034186147 * M + 1.707614701 * S,
  ];
  return `#${linear
    .map((v) => {
      const x = Math.max(0, Math.min(1, v));
      const srgb = x <= 0.0031308 ? 12.92 * x : 1.055 * x ** (1 / 2.4) - 0.055;
      return Math.round(srgb * 255)
        .toString(16)
        .padStart(2, "0");
    })
    .join("")}`;
}

// Viridis at 9 stops: a sequential map that stays ordered in lightness and for colour-blind
// readers; used to colour trials by their searcher metric.
const VIRIDIS = [
  [68, 1, 84],
  [71, 44, 122],
  [59, 81, 139],
  [44, 113, 142],
  [33, 144, 141],
  [39, 173, 129],
  [92, 200, 99],
  [170, 220, 50],
  [253, 231, 37],
] as const;

/** The sequential colour of t in 0..1 (0 dark purple, 1 yellow) as [r, g, b] 0..255. */
export function sequentialRgb(t: number): [number, number, number] {
  const x = Math.max(0, Math.min(1, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const from = VIRIDIS[i] ?? VIRIDIS[0];
  const to = VIRIDIS[i + 1] ?? VIRIDIS[0];
  const mix = (k: 0 | 1 | 2) => Math.round(from[k] + (to[k] - from[k]) * f);
  return [mix(0), mix(1), mix(2)];
}

/** The sequential colour of t in 0..1 as a CSS colour. */
export function sequentialColor(t: number, alpha = 1): string {
  const [r, g, b] = sequentialRgb(t);
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** Where the sequential map starts on a dark page: viridis' darkest purples vanish against
 * it, so the worst trials start at this shade (3:1 contrast with a dark card at least). */
export const DARK_FLOOR = 0.45;

/** Whether the page is dark now (src/color-scheme.ts sets <html data-theme>). */
export function isDarkPage(): boolean {
  return typeof document !== "undefined" && document.documentElement.dataset.theme === "dark";
}

/** A metric's shade 0..1 (worse..better) as drawn: on a dark page lifted above DARK_FLOOR. */
export function metricShade(t: number, dark = isDarkPage()): number {
  const clamped = Math.max(0, Math.min(1, Number.isFinite(t) ? t : 0));
  return dark ? DARK_FLOOR + (1 - DARK_FLOOR) * clamped : clamped;
}

/** Highlight colour of the best trials where the others are coloured by a metric. */
export const BEST_COLOR = "#e4572e";
export const MUTED_COLOR = "#8a94a6";
