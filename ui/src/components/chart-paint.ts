// The drawing of the visualization tab's custom canvases, from plain data ("scenes": numbers,
// strings and typed arrays, which a worker can be sent): the parallel coordinates' lines and
// axes, the scatter plots' dots, the optimization history and the timeline. One module, two
// callers: chart.worker.ts draws a scene on a canvas the page handed over to it
// (`transferControlToOffscreen`, chart-surface.ts), and where a browser cannot do that (or the
// worker failed) the page draws the same scene on its own canvas. Nothing here touches the
// DOM: the callers work out the layout, the theme's colours and the labels, and keep the
// hit-testing, the overlays and the tables. The line charts (line-chart.ts: learning curves, a
// trial's metrics) are drawn here too.

import { blendSquares } from "./blend";
import type { Layer } from "./blend";
import { SELECTED_COLOR } from "./selection";

/** The 2D context of a canvas element or of an OffscreenCanvas: what both have. */
export type Ctx2D = CanvasState &
  CanvasTransform &
  CanvasCompositing &
  CanvasImageData &
  CanvasDrawImage &
  CanvasPathDrawingStyles &
  CanvasTextDrawingStyles &
  CanvasText &
  CanvasPath &
  CanvasRect &
  CanvasFillStrokeStyles &
  CanvasDrawPath;

/** A canvas element or an OffscreenCanvas (in a worker). */
export interface Paintable {
  width: number;
  height: number;
}

export const FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const BEST_COLOR = "#e4572e";
const OTHER_COLOR = "#4e79a7";
const GREY_COLOR = "#a3abb8";

/** The theme's colours a canvas draws with (theme.ts, read by the page). */
export interface SceneTheme {
  text: string;
  line: string;
  halo: string;
  grid: string;
}

/** The parallel coordinates' lines and axes (parallel-coordinates.ts). */
export interface ParallelScene {
  kind: "parallel";
  /** CSS pixels, and device pixels per CSS pixel. */
  width: number;
  height: number;
  ratio: number;
  /** Each axis' x (CSS pixels). */
  xs: number[];
  top: number;
  plotH: number;
  /** The y of row i at axis k is ys[i * axisCount + k] (NaN where it has no value). */
  ys: Float32Array;
  axisCount: number;
  /** Each row's colour bucket (an index into `strokes`); NOT_DRAWN for the best rows. */
  bucket: Uint8Array;
  strokes: string[];
  /** Many lines: one path per bucket, one device pixel wide; few: one stroke per line. */
  many: boolean;
  /** The best rows (drawn last, thick), each with its colour. */
  best: [row: number, colour: string][];
  axes: { title: string; sub: string; ticks: [at: number, label: string][] }[];
  theme: SceneTheme;
}

/** The bucket of a row that `ParallelScene.bucket` does not draw (the best: drawn apart). */
export const NOT_DRAWN = 255;

/** A scatter plot (scatter.ts): its dots in device pixels; its axes, grid and labels (`frame`,
 * CSS pixels; none: the dots alone), drawn under the dots. */
export interface ScatterScene {
  kind: "scatter";
  /** The canvas' size (device pixels). */
  canvasWidth: number;
  canvasHeight: number;
  ratio: number;
  /** The plot area (device pixels): the dots are clipped to it. */
  bbox: { left: number; top: number; width: number; height: number };
  cx: Float64Array;
  cy: Float64Array;
  /** Per dot: BEST, GREYED (outside the brushes) and SELECTED bits. */
  flags: Uint8Array;
  frame?: Frame;
}

export const BEST = 1;
export const GREYED = 2;
export const SELECTED = 4;

/** Ticks along an axis: [position in CSS pixels, label]. */
export type Ticks = [at: number, label: string][];

/** A plot's axes (CSS pixels): the y ticks' grid lines and labels, the x ticks' labels (and
 * grid lines with `xGrid`), the axes' names, and the axis lines left and below. */
export interface Frame {
  width: number;
  height: number;
  ratio: number;
  theme: SceneTheme;
  xTicks: Ticks;
  yTicks: Ticks;
  xLabel: string;
  /** Written upwards along the left edge. */
  yLabel?: string;
  xGrid?: boolean;
  pad: { left: number; right: number; top: number; bottom: number };
}

/** The optimization history (search-charts.ts): CSS pixels. */
export interface HistoryScene extends Frame {
  kind: "history";
  /** Each point's position, and 1 where it is outside the brushes (drawn grey, under). */
  px: Float32Array;
  py: Float32Array;
  outside: Uint8Array;
  many: boolean;
  keptColor: string;
  outsideColor: string;
  /** The best-so-far step line's corners (x0, y0, x1, y1, ...). */
  line: Float32Array;
  lineColor: string;
}

/** The timeline of attempts over slots (search-charts.ts): CSS pixels. */
export interface TimelineScene extends Frame {
  kind: "timeline";
  laneHeight: number;
  barHeight: number;
  /** Each attempt's start and end (seconds; NaN: still running, to `now`), slot, and colour
   * (an index into `colours`, in the order the colours first appear). */
  attempts: TimelineAttempts;
  colours: string[];
  now: number;
  /** The time at the plot's right edge (seconds). */
  xMax: number;
  /** The trial ids written on the wide bars (few attempts only). */
  labels: [text: string, x: number, y: number][];
}

export interface TimelineAttempts {
  starts: Float64Array;
  ends: Float64Array;
  slot: Int32Array;
  colour: Uint8Array;
}

/** A line chart (line-chart.ts): CSS pixels. Series k's points are `xy[2 * starts[k]]` up to
 * `xy[2 * starts[k + 1]]` (x, y, x, y, ...), drawn in order (the last on top), clipped to the
 * plot area. */
export interface LinesScene extends Frame {
  kind: "lines";
  xy: Float32Array;
  starts: Uint32Array;
  styles: LineStyle[];
}

export interface LineStyle {
  color: string;
  width: number;
  dash?: number[];
  /** A dot of this radius at each point as well (0: the line only). */
  dot: number;
}

export type Scene = ParallelScene | ScatterScene | HistoryScene | TimelineScene | LinesScene;

/** The buffers of a scene's typed arrays (handed to the worker, not copied). */
export function sceneBuffers(scene: Scene): ArrayBuffer[] {
  const arrays: ArrayBufferView[] =
    scene.kind === "parallel"
      ? [scene.ys, scene.bucket]
      : scene.kind === "scatter"
        ? [scene.cx, scene.cy, scene.flags]
        : scene.kind === "history"
          ? [scene.px, scene.py, scene.outside, scene.line]
          : scene.kind === "lines"
            ? [scene.xy, scene.starts]
            : [scene.attempts.starts, scene.attempts.ends, scene.attempts.slot, scene.attempts.colour];
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}

function context(canvas: Paintable): Ctx2D | null {
  return (canvas as unknown as { getContext(id: "2d"): Ctx2D | null }).getContext("2d");
}

/** Size `canvas` for the scene (device pixels; which clears it) and draw the scene on it. */
export function paintScene(canvas: Paintable, scene: Scene): void {
  const [width, height] =
    scene.kind === "scatter"
      ? [scene.canvasWidth, scene.canvasHeight]
      : [Math.round(scene.width * scene.ratio), Math.round(scene.height * scene.ratio)];
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
  }
  const ctx = context(canvas);
  if (!ctx) return;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, width, height);
  if (scene.kind === "scatter") {
    if (scene.frame) {
      ctx.setTransform(scene.ratio, 0, 0, scene.ratio, 0, 0);
      drawFrame(ctx, scene.frame);
      ctx.setTransform(1, 0, 0, 1, 0, 0);
    }
    return drawScatter(ctx, scene);
  }
  ctx.setTransform(scene.ratio, 0, 0, scene.ratio, 0, 0);
  if (scene.kind === "parallel") drawParallel(ctx, scene);
  else if (scene.kind === "history") drawHistory(ctx, scene);
  else if (scene.kind === "lines") drawLines(ctx, scene);
  else drawTimeline(ctx, scene);
}

// The parallel coordinates.

/** Add row i's polyline to the current path (broken where it has no value). */
export function traceRow(ctx: Ctx2D, xs: readonly number[], ys: Float32Array, m: number, i: number): void {
  let drawing = false;
  for (let k = 0; k < m; k++) {
    const y = ys[i * m + k] as number;
    if (Number.isNaN(y)) {
      drawing = false;
      continue;
    }
    const x = xs[k] as number;
    if (drawing) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    drawing = true;
  }
}

function drawParallel(ctx: Ctx2D, scene: ParallelScene): void {
  const { xs, ys, axisCount: m, bucket, strokes } = scene;
  const strokeRow = (i: number) => {
    ctx.beginPath();
    traceRow(ctx, xs, ys, m, i);
    ctx.stroke();
  };
  // The rows of each bucket, in order (a counting sort).
  const n = bucket.length;
  const starts = new Uint32Array(strokes.length + 1);
  for (let i = 0; i < n; i++) {
    const b = bucket[i] as number;
    if (b !== NOT_DRAWN) (starts[b + 1] as number)++;
  }
  for (let b = 0; b < strokes.length; b++) starts[b + 1] = (starts[b + 1] as number) + (starts[b] as number);
  const rows = new Uint32Array(starts[strokes.length] as number);
  const at = starts.slice(0, strokes.length);
  for (let i = 0; i < n; i++) {
    const b = bucket[i] as number;
    if (b !== NOT_DRAWN) rows[(at[b] as number)++] = i;
  }
  ctx.lineJoin = "round";
  ctx.lineWidth = scene.many ? 1 / scene.ratio : 1.4;
  // Within one bucket's path overlaps do not add up; across the buckets they do.
  strokes.forEach((stroke, b) => {
    const from = starts[b] as number;
    const to = starts[b + 1] as number;
    if (from === to) return;
    ctx.strokeStyle = stroke;
    if (scene.many) {
      ctx.beginPath();
      for (let r = from; r < to; r++) traceRow(ctx, xs, ys, m, rows[r] as number);
      ctx.stroke();
    } else {
      for (let r = from; r < to; r++) strokeRow(rows[r] as number);
    }
  });
  // The best: thick, in their metric colour, outlined in dark so they stand out.
  for (const [i, colour] of scene.best) {
    ctx.lineWidth = 5.5;
    ctx.strokeStyle = "rgba(29, 36, 48, 0.85)";
    strokeRow(i);
    ctx.lineWidth = 3;
    ctx.strokeStyle = colour;
    strokeRow(i);
  }
  drawParallelAxes(ctx, scene);
}

function drawParallelAxes(ctx: Ctx2D, scene: ParallelScene): void {
  const { xs, top, plotH, theme } = scene;
  ctx.font = FONT;
  const spacing = xs.length > 1 ? (xs[1] as number) - (xs[0] as number) : scene.width;
  scene.axes.forEach((axis, k) => {
    const x = xs[k] as number;
    ctx.strokeStyle = theme.line;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + plotH);
    ctx.stroke();
    // Title above the axis, cut to the room between axes.
    ctx.fillStyle = theme.text;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.font = `600 ${FONT}`;
    ctx.fillText(fit(ctx, axis.title, Math.max(60, spacing - 8)), x, top - 20);
    ctx.font = FONT;
    ctx.fillStyle = theme.line;
    ctx.fillText(axis.sub, x, top - 6);
    // Ticks.
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (const [t, label] of axis.ticks) {
      const y = top + (1 - t) * plotH;
      ctx.beginPath();
      ctx.moveTo(x - 3, y);
      ctx.lineTo(x + 3, y);
      ctx.stroke();
      ctx.lineWidth = 3;
      ctx.strokeStyle = theme.halo;
      const text = fit(ctx, label, Math.max(40, spacing - 16));
      ctx.strokeText(text, x + 6, y);
      ctx.fillStyle = theme.text;
      ctx.fillText(text, x + 6, y);
      ctx.lineWidth = 1;
      ctx.strokeStyle = theme.line;
    }
  });
}

/** `text` cut with an ellipsis to fit `width` pixels. */
function fit(ctx: Ctx2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let cut = text;
  while (cut.length > 1 && ctx.measureText(`${cut}…`).width > width) cut = cut.slice(0, -1);
  return `${cut}…`;
}

// The scatter plots' dots.

/** A canvas for pixels of their own: an OffscreenCanvas where there is one (a worker has no
 * document), else an element. */
function layerCanvas(width: number, height: number): (Paintable & CanvasImageSource) | null {
  if (typeof OffscreenCanvas !== "undefined") return new OffscreenCanvas(width, height);
  if (typeof document === "undefined") return null;
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  return canvas;
}

/** The dots of a scatter plot on `ctx`, clipped to the plot area: the many blended in layers
 * (grey under the others), the best as circles, the selected outlined. */
export function drawScatter(ctx: Ctx2D, scene: ScatterScene): void {
  const { cx, cy, flags, bbox, ratio } = scene;
  const count = cx.length;
  const many = count > 500;
  const half = (many ? 1.6 : 2.6) * ratio;
  const greyed = (k: number) => ((flags[k] as number) & GREYED) !== 0;
  const plain = (k: number) => ((flags[k] as number) & (BEST | GREYED)) === 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
  ctx.clip();
  if (many) {
    blendLayers(ctx, scene, Math.max(2, Math.round(2 * half)), [
      [GREY_COLOR, 0.25, greyed],
      [OTHER_COLOR, 0.35, plain],
    ]);
  } else {
    for (const [colour, alpha, include] of [
      [GREY_COLOR, 0.45, greyed],
      [OTHER_COLOR, 0.65, plain],
    ] as const) {
      ctx.fillStyle = withAlpha(colour, alpha);
      ctx.beginPath();
      for (let k = 0; k < count; k++) {
        if (include(k)) ctx.rect((cx[k] as number) - half, (cy[k] as number) - half, 2 * half, 2 * half);
      }
      ctx.fill();
    }
  }
  ctx.fillStyle = BEST_COLOR;
  ctx.strokeStyle = "#ffffff";
  ctx.lineWidth = 1.5 * ratio;
  for (let k = 0; k < count; k++) {
    if (((flags[k] as number) & (BEST | GREYED)) !== BEST) continue;
    ctx.beginPath();
    ctx.arc(cx[k] as number, cy[k] as number, 5 * ratio, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
  }
  if (flags.some((f) => (f & SELECTED) !== 0)) {
    ctx.strokeStyle = SELECTED_COLOR;
    ctx.lineWidth = 2 * ratio;
    ctx.beginPath();
    for (let k = 0; k < count; k++) {
      if (((flags[k] as number) & SELECTED) === 0) continue;
      ctx.moveTo((cx[k] as number) + 6 * ratio, cy[k] as number);
      ctx.arc(cx[k] as number, cy[k] as number, 6 * ratio, 0, 2 * Math.PI);
    }
    ctx.stroke();
  }
  ctx.restore();
}

/** The many dots as `size`-pixel squares blended into pixels of their own, in layers (a
 * colour, its alpha, which dots), then drawn over the plot area at once: instead of 10,000
 * fillRect calls (~8 ms each 10,000 without a GPU, per plot), and without reading the
 * plot's pixels back (blend.ts). */
function blendLayers(ctx: Ctx2D, scene: ScatterScene, size: number, layers: Layer[]): void {
  const left = Math.floor(scene.bbox.left);
  const top = Math.floor(scene.bbox.top);
  const width = Math.ceil(scene.bbox.width);
  const height = Math.ceil(scene.bbox.height);
  if (width <= 0 || height <= 0) return;
  const image = new ImageData(width, height);
  blendSquares(image.data, width, height, scene.cx, scene.cy, left, top, size, layers);
  const layer = layerCanvas(width, height);
  if (!layer) return;
  context(layer)?.putImageData(image, 0, 0);
  ctx.drawImage(layer, left, top);
}

/** `#rrggbb` at `alpha` as rgba() (palette.ts' withAlpha, here so a worker needs no more). */
function withAlpha(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

// The history and the timeline.

function drawFrame(ctx: Ctx2D, frame: Frame): void {
  const { width, height, theme, pad } = frame;
  ctx.font = FONT;
  ctx.strokeStyle = theme.grid;
  ctx.fillStyle = theme.text;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [y, label] of frame.yTicks) {
    ctx.beginPath();
    ctx.moveTo(pad.left, y);
    ctx.lineTo(width - pad.right, y);
    ctx.stroke();
    ctx.fillText(label, pad.left - 6, y);
  }
  if (frame.xGrid) {
    ctx.beginPath();
    for (const [x] of frame.xTicks) {
      ctx.moveTo(x, pad.top);
      ctx.lineTo(x, height - pad.bottom);
    }
    ctx.stroke();
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const [x, label] of frame.xTicks) ctx.fillText(label, x, height - pad.bottom + 4);
  ctx.fillText(frame.xLabel, pad.left + (width - pad.left - pad.right) / 2, height - 14);
  if (frame.yLabel) {
    ctx.save();
    ctx.translate(4, pad.top + (height - pad.top - pad.bottom) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(frame.yLabel, 0, 0);
    ctx.restore();
  }
  ctx.strokeStyle = theme.line;
  ctx.beginPath();
  ctx.moveTo(pad.left, pad.top);
  ctx.lineTo(pad.left, height - pad.bottom);
  ctx.lineTo(width - pad.right, height - pad.bottom);
  ctx.stroke();
}

function drawLines(ctx: Ctx2D, scene: LinesScene): void {
  drawFrame(ctx, scene);
  const { xy, starts, styles, pad, width, height } = scene;
  ctx.save();
  ctx.beginPath();
  ctx.rect(pad.left, pad.top, width - pad.left - pad.right, height - pad.top - pad.bottom);
  ctx.clip();
  ctx.lineJoin = "round";
  ctx.lineCap = "round";
  styles.forEach((style, k) => {
    const from = starts[k] as number;
    const to = starts[k + 1] as number;
    if (from === to) return;
    ctx.strokeStyle = style.color;
    ctx.lineWidth = style.width;
    ctx.setLineDash(style.dash ?? []);
    ctx.beginPath();
    for (let i = from; i < to; i++) {
      if (i === from) ctx.moveTo(xy[2 * i] as number, xy[2 * i + 1] as number);
      else ctx.lineTo(xy[2 * i] as number, xy[2 * i + 1] as number);
    }
    ctx.stroke();
    if (style.dot > 0) {
      ctx.fillStyle = style.color;
      ctx.beginPath();
      for (let i = from; i < to; i++) {
        const x = xy[2 * i] as number;
        const y = xy[2 * i + 1] as number;
        ctx.moveTo(x + style.dot, y);
        ctx.arc(x, y, style.dot, 0, 2 * Math.PI);
      }
      ctx.fill();
    }
  });
  ctx.restore();
}

function drawHistory(ctx: Ctx2D, scene: HistoryScene): void {
  if (scene.px.length === 0) return; // nothing to draw: not even the frame
  drawFrame(ctx, scene);
  const { px, py, outside: out, many } = scene;
  // One path per colour: the greyed points first, under the kept ones.
  for (const outside of [1, 0]) {
    ctx.fillStyle = outside ? scene.outsideColor : scene.keptColor;
    ctx.globalAlpha = many ? (outside ? 0.2 : 0.35) : outside ? 0.45 : 0.8;
    ctx.beginPath();
    for (let i = 0; i < px.length; i++) {
      if (out[i] !== outside) continue;
      const x = px[i] as number;
      const y = py[i] as number;
      if (many) ctx.rect(x - 1.5, y - 1.5, 3, 3);
      else {
        ctx.moveTo(x + 2.5, y);
        ctx.arc(x, y, 2.5, 0, 2 * Math.PI);
      }
    }
    ctx.fill();
  }
  ctx.globalAlpha = 1;
  ctx.strokeStyle = scene.lineColor;
  ctx.lineWidth = 2;
  ctx.beginPath();
  const line = scene.line;
  for (let j = 0; j + 1 < line.length; j += 2) {
    if (j === 0) ctx.moveTo(line[0] as number, line[1] as number);
    else ctx.lineTo(line[j] as number, line[j + 1] as number);
  }
  ctx.stroke();
}

/** The timeline's bars by colour (index), in whole pixels: x0, x1, slot, ..., where the
 * attempts of one slot and colour that touch or overlap (at 10,000 attempts most are under a
 * pixel wide) are merged into one bar. */
export function timelineBars(
  attempts: TimelineAttempts,
  colours: number,
  now: number,
  px: (seconds: number) => number,
): Int32Array[] {
  // By colour, then by slot (in the order they first appear).
  const grouped = Array.from({ length: colours }, () => new Map<number, [number, number][]>());
  const { starts, ends, slot, colour } = attempts;
  for (let i = 0; i < starts.length; i++) {
    const slots = grouped[colour[i] as number];
    if (!slots) continue;
    const end = ends[i] as number;
    const x0 = Math.floor(px(starts[i] as number));
    const x1 = Math.max(x0 + 1, Math.ceil(px(Number.isNaN(end) ? now : end)));
    let bars = slots.get(slot[i] as number);
    if (!bars) slots.set(slot[i] as number, (bars = []));
    bars.push([x0, x1]);
  }
  return grouped.map((slots) => {
    const merged: number[] = [];
    for (const [s, bars] of slots) {
      bars.sort((a, b) => a[0] - b[0]);
      let last = -1; // where the last bar's x1 is in `merged`
      for (const [x0, x1] of bars) {
        if (last >= 0 && x0 <= (merged[last] as number)) merged[last] = Math.max(merged[last] as number, x1);
        else {
          merged.push(x0, x1, s);
          last = merged.length - 2;
        }
      }
    }
    return Int32Array.from(merged);
  });
}

function drawTimeline(ctx: Ctx2D, scene: TimelineScene): void {
  drawFrame(ctx, scene);
  const { pad, width, xMax } = scene;
  const plotW = width - pad.left - pad.right;
  const px = (x: number) => pad.left + (x / xMax) * plotW;
  const lane = (slot: number) => pad.top + slot * scene.laneHeight;
  timelineBars(scene.attempts, scene.colours.length, scene.now, px).forEach((bars, c) => {
    if (bars.length === 0) return;
    ctx.fillStyle = scene.colours[c] as string;
    for (let j = 0; j + 2 < bars.length; j += 3) {
      const x0 = bars[j] as number;
      ctx.fillRect(x0, lane(bars[j + 2] as number) + 1, (bars[j + 1] as number) - x0, scene.barHeight);
    }
  });
  if (scene.labels.length === 0) return;
  ctx.fillStyle = scene.theme.halo;
  ctx.font = FONT;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const [text, x, y] of scene.labels) ctx.fillText(text, x, y);
}
