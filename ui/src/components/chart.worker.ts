// The worker that draws the charts' canvases (the visualization tab's and every line chart):
// chart-surface.ts hands it each canvas with `transferControlToOffscreen`, then scenes to draw
// on it (chart-paint.ts draws them). The page's main thread neither runs that drawing nor
// rasterizes its pixels: the worker's frames go to the compositor directly. A scatter plot
// comes as its columns, not as a scene: the worker lays it out too (scatter-layout.ts). Each
// scene drawn is answered with its canvas' id and sequence number (and a scatter plot's
// counts), so the page knows when its charts are up.

import { FONT, type Scene, paintScene } from "./chart-paint";
import { type ScatterInfo, type ScatterInput, layoutScatter } from "./scatter-layout";

export type ToWorker =
  | { op: "attach"; id: number; canvas: OffscreenCanvas }
  | { op: "paint"; id: number; seq: number; scene: Scene }
  | { op: "scatter"; id: number; seq: number; input: ScatterInput }
  | { op: "detach"; id: number };

export interface FromWorker {
  id: number;
  seq: number;
  error?: string;
  /** A scatter plot's counts, as laid out. */
  info?: ScatterInfo;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
}

const scope = self as unknown as WorkerScope;
const canvases = new Map<number, OffscreenCanvas>();

// The first text a worker draws loads its fonts: 40-80 ms on a 2-core machine. Done here, as
// the worker starts, it overlaps the page's wait for the charts' data instead of delaying the
// first chart drawn with it.
try {
  const warm = new OffscreenCanvas(1, 1).getContext("2d");
  if (warm) {
    warm.font = FONT;
    warm.fillText("0.1 slot", 0, 0);
  }
} catch {
  // No OffscreenCanvas here: nothing to warm (the page draws its charts itself then).
}

scope.onmessage = ({ data }) => {
  if (data.op === "attach") canvases.set(data.id, data.canvas);
  else if (data.op === "detach") canvases.delete(data.id);
  else {
    const canvas = canvases.get(data.id);
    const answer: FromWorker = { id: data.id, seq: data.seq };
    try {
      if (data.op === "scatter") {
        const layout = layoutScatter(data.input);
        if (canvas) paintScene(canvas, layout.scene);
        answer.info = layout.info;
      } else if (canvas) paintScene(canvas, data.scene);
    } catch (err) {
      answer.error = String(err);
    }
    scope.postMessage(answer);
  }
};
