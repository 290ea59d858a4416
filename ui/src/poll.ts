// Polling for live pages: one call at a time, every `intervalMs` after the previous one
// finished, skipped while the tab is hidden; the task returns false to stop.

export class Poller {
  private timer: number | undefined;
  private running = false;
  private stopped = true;

  constructor(
    private readonly task: () => Promise<boolean | void>,
    private readonly intervalMs: number,
  ) {}

  /** Start polling (the first call after one interval); no-op if already started. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
  }

  get active(): boolean {
    return !this.stopped;
  }

  private schedule(): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.tick(), this.intervalMs);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.running) return;
    if (document.hidden) {
      this.schedule();
      return;
    }
    this.running = true;
    let again = true;
    try {
      again = (await this.task()) !== false;
    } catch (err) {
      // A failed poll (master restarting, network) is tried again at the next interval.
      if (err instanceof DOMException && err.name === "AbortError") again = false;
    } finally {
      this.running = false;
    }
    if (!again) this.stopped = true;
    if (!this.stopped) this.schedule();
  }
}
