// What the experiment page's tabs share: the experiment (kept fresh by the page's polling)
// and whether it is still live.

import { type Experiment, isTerminal } from "../api";

export class ExperimentContext {
  private current: Experiment | null = null;
  private readonly listeners = new Set<(experiment: Experiment) => void>();
  readonly ready: Promise<Experiment>;
  private resolveReady: (experiment: Experiment) => void = () => undefined;

  constructor(readonly id: number) {
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
  }

  get experiment(): Experiment | null {
    return this.current;
  }

  /** True until the experiment has ended (then nothing more changes: polling stops). */
  get live(): boolean {
    return this.current === null || !isTerminal(this.current.state);
  }

  set(experiment: Experiment): void {
    this.current = experiment;
    this.resolveReady(experiment);
    for (const listener of this.listeners) listener(experiment);
  }

  /** Call `listener` on every update; returns the function that stops it. */
  subscribe(listener: (experiment: Experiment) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** One tab of the experiment page. */
export interface ExperimentTab {
  readonly el: HTMLElement;
  /** The URL's query changed (metric, filter, sort, page...). */
  update(query: URLSearchParams): void;
  dispose(): void;
}
