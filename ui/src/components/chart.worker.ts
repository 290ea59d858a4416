// The worker that draws the visualization tab's custom canvases (chart-surface.ts hands it
// each canvas with `transferControlToOffscreen`, then scenes to draw on it; chart-paint.ts
// draws them). The page's main thread neither runs that drawing nor rasterizes its pixels:
// the worker's frames go to the compositor directly. Each scene drawn is answered with its
// canvas' id and sequence number, so the page knows when its charts are up.

import { type Scene, paintScene } from "./chart-paint";

export type ToWorker =
  | { op: "attach"; id: number; canvas: OffscreenCanvas }
  | { op: "paint"; id: number; seq: number; scene: Scene }
  | { op: "detach"; id: number };

export interface FromWorker {
  id: number;
  seq: number;
  error?: string;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
}

const scope = self as unknown as WorkerScope;
const canvases = new Map<number, OffscreenCanvas>();

scope.onmessage = ({ data }) => {
  if (data.op === "attach") canvases.set(data.id, data.canvas);
  else if (data.op === "detach") canvases.delete(data.id);
  else {
    const canvas = canvases.get(data.id);
    let error: string | undefined;
    try {
      if (canvas) paintScene(canvas, data.scene);
    } catch (err) {
      error = String(err);
    }
    scope.postMessage(error === undefined ? { id: data.id, seq: data.seq } : { id: data.id, seq: data.seq, error });
  }
};
