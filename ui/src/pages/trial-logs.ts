// A trial's logs: every line so far, then only the new ones (`after=<seq>`) while the trial
// runs, following the end unless the reader scrolls up. A search keeps only the matching
// lines (case-insensitive), marks the matches, and lives in the URL (`q=`); a level keeps the
// lines of that level and above (lines without a level count as INFO), as `pedl trial logs
// --level` does; a rank (offered once a multi-worker trial's lines name their workers) keeps
// one worker's lines, as `--rank-id` does. Download saves the lines shown as a text file.

import { type LogLine, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { debounce, h } from "../dom";
import { formatClock, formatInteger } from "../format";
import { setQuery } from "../router";

const PAGE_LINES = 5000;
const MAX_LINES = 100_000;
const MAX_MARKED = 5000;

const ERROR_WORDS = /\b(ERROR|CRITICAL|FATAL|Traceback \(most recent call last\))\b|^\w*(Error|Exception): /;
const WARNING_WORDS = /\bWARN(ING)?\b/;

/** How a line reads: its level when it has one, else the words of Python's logging. */
function severity(line: LogLine): string {
  const level = (line.level ?? "").toUpperCase();
  if (["ERROR", "CRITICAL", "FATAL"].includes(level) || (!level && ERROR_WORDS.test(line.message))) return "err";
  if (level.startsWith("WARN") || (!level && WARNING_WORDS.test(line.message))) return "warn";
  return "";
}

const LEVELS = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const;

/** The rank of a line's level in LEVELS (WARN is WARNING, FATAL CRITICAL, none INFO). */
function levelRank(line: LogLine): number {
  const raw = (line.level ?? "INFO").toUpperCase();
  const name = raw === "WARN" ? "WARNING" : raw === "FATAL" ? "CRITICAL" : raw;
  const rank = (LEVELS as readonly string[]).indexOf(name);
  return rank < 0 ? 2 : rank;
}

/** A timestamp the line's own text starts with (Python logging's asctime, ISO 8601, TensorFlow's
 * `2026-11-29 08:00:00.123456:`): the page shows the master's, once. */
const LEADING_TIME = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:?\s+/;

/** The line's level as its badge names it (WARN is WARNING, FATAL CRITICAL); none when the
 * line has none (a print, a progress bar). */
export function levelName(line: LogLine): string | null {
  const raw = (line.level ?? "").toUpperCase();
  if (!raw) return null;
  return raw === "WARN" ? "WARNING" : raw === "FATAL" ? "CRITICAL" : raw;
}

/** The line's text without what the page shows beside it: a leading timestamp when the line
 * has its own, then the level word its badge shows. */
export function shownText(line: LogLine): string {
  let text = line.message;
  const prefix = /^\[rank=\d+\] /.exec(text)?.[0] ?? "";
  text = text.slice(prefix.length);
  if (line.timestamp) text = text.replace(LEADING_TIME, "");
  const level = levelName(line);
  if (level) {
    const word = new RegExp(
      `^\\[?(?:${level}|${level === "WARNING" ? "WARN" : level === "CRITICAL" ? "FATAL" : level})\\]?(?::(?=\\S)|\\s+)`,
    );
    text = text.replace(word, "");
  }
  return text;
}

export class TrialLogs {
  readonly el: HTMLElement;
  private readonly box: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly follow: HTMLInputElement;
  private readonly levelSelect: HTMLSelectElement;
  private minLevel = 0;
  private readonly rankSelect: HTMLSelectElement;
  private readonly rankLabel: HTMLElement;
  private rank: number | null = null;
  private readonly ranks = new Set<number>();
  private readonly status = h("span", { class: "muted small", "aria-live": "polite" });
  private readonly message = h("div");
  private lines: LogLine[] = [];
  private lastSeq = -1;
  private dropped = 0;
  private query: string;
  private live = true;

  constructor(
    private readonly trialId: number,
    query: string,
    private readonly signal: AbortSignal,
  ) {
    this.query = query;
    const searched = debounce(() => setQuery({ q: this.search.value || null }, { replace: this.query !== "" }), 150);
    this.search = h("input", {
      id: "log-search",
      type: "search",
      placeholder: "Search the logs",
      autocomplete: "off",
      "data-testid": "log-search",
      oninput: () => searched(),
    });
    this.search.value = query;
    this.follow = h("input", { id: "log-follow", type: "checkbox", checked: true, onchange: () => this.followed() });
    this.levelSelect = h(
      "select",
      {
        id: "log-level",
        "data-testid": "log-level",
        onchange: () => {
          this.minLevel = Number(this.levelSelect.value);
          this.renderAll();
        },
      },
      h("option", { value: "0" }, "All levels"),
      LEVELS.slice(1).map((name, i) => h("option", { value: String(i + 1) }, `${name} and above`)),
    );
    this.rankSelect = h(
      "select",
      {
        id: "log-rank",
        "data-testid": "log-rank-filter",
        hidden: true,
        onchange: () => {
          this.rank = this.rankSelect.value === "" ? null : Number(this.rankSelect.value);
          this.renderAll();
        },
      },
      h("option", { value: "" }, "All workers"),
    );
    this.rankLabel = h("label", { for: "log-rank", class: "visually-hidden" }, "Worker shown");
    const download = h(
      "button",
      { type: "button", class: "button small", "data-testid": "log-download", onclick: () => this.download() },
      "Download",
    );
    this.box = h("div", {
      class: "log-box",
      "data-testid": "trial-log",
      role: "log",
      "aria-label": `Logs of trial ${trialId}`,
      "aria-live": "off",
      tabindex: 0,
    });
    this.box.addEventListener("scroll", () => {
      const atEnd = this.box.scrollHeight - this.box.scrollTop - this.box.clientHeight < 24;
      if (this.live && this.follow.checked !== atEnd) this.follow.checked = atEnd;
    });
    this.el = h(
      "section",
      { class: "card logs" },
      h(
        "div",
        { class: "log-tools" },
        h("label", { for: "log-search", class: "visually-hidden" }, "Search the logs"),
        this.search,
        h("label", { for: "log-level", class: "visually-hidden" }, "Lowest level shown"),
        this.levelSelect,
        this.rankLabel,
        this.rankSelect,
        h("label", { class: "check", for: "log-follow" }, this.follow, " Follow"),
        download,
        this.status,
      ),
      this.message,
      this.box,
    );
  }

  /** The search changed (URL). */
  setQuery(query: string): void {
    if (query === this.query) return;
    this.query = query;
    if (document.activeElement !== this.search) this.search.value = query;
    this.renderAll();
  }

  /** Fetch the lines after the last one (all of them the first time). */
  async fetchNew(): Promise<void> {
    try {
      const fresh: LogLine[] = [];
      for (;;) {
        const page = await api.trialLogs(
          this.trialId,
          { after: this.lastSeq < 0 ? undefined : this.lastSeq, limit: PAGE_LINES },
          this.signal,
        );
        for (const line of page) {
          if (line.seq <= this.lastSeq) continue;
          fresh.push(line);
          this.lastSeq = line.seq;
        }
        if (page.length < PAGE_LINES) break;
      }
      this.message.replaceChildren();
      if (fresh.length > 0) this.add(fresh);
      else this.updateStatus();
    } catch (err) {
      if (!this.signal.aborted) this.message.replaceChildren(notice(`Could not load the logs: ${errorMessage(err)}`));
    }
  }

  private add(fresh: LogLine[]): void {
    this.lines.push(...fresh);
    this.noteRanks(fresh);
    if (this.lines.length > MAX_LINES) {
      const drop = this.lines.length - MAX_LINES;
      this.lines.splice(0, drop);
      this.dropped += drop;
      this.renderAll();
      return;
    }
    this.box.querySelector(".log-empty")?.remove();
    const fragment = document.createDocumentFragment();
    const needle = this.query.toLowerCase();
    let marked = this.box.childElementCount;
    for (const line of fresh) {
      if (!this.passes(line, needle)) continue;
      fragment.append(this.lineEl(line, needle && marked++ < MAX_MARKED ? needle : ""));
    }
    this.box.append(fragment);
    this.updateStatus();
    if (this.follow.checked) this.box.scrollTop = this.box.scrollHeight;
  }

  private renderAll(): void {
    const needle = this.query.toLowerCase();
    const fragment = document.createDocumentFragment();
    let shown = 0;
    for (const line of this.lines) {
      if (!this.passes(line, needle)) continue;
      fragment.append(this.lineEl(line, needle && shown < MAX_MARKED ? needle : ""));
      shown += 1;
    }
    this.box.replaceChildren(fragment);
    this.updateStatus();
    if (this.follow.checked) this.box.scrollTop = this.box.scrollHeight;
  }

  /** Whether the line is shown: it contains the search, is at the chosen level or above and
   * (with a rank chosen) that worker wrote it. */
  private passes(line: LogLine, needle: string): boolean {
    if (needle && !line.message.toLowerCase().includes(needle)) return false;
    if (this.rank !== null && line.rank !== this.rank) return false;
    return this.minLevel === 0 || levelRank(line) >= this.minLevel;
  }

  /** Offer each worker rank the lines name (the choice appears with the first one). */
  private noteRanks(fresh: LogLine[]): void {
    const before = this.ranks.size;
    for (const line of fresh) if (line.rank !== null && line.rank !== undefined) this.ranks.add(line.rank);
    if (this.ranks.size === before) return;
    const chosen = this.rankSelect.value;
    this.rankSelect.replaceChildren(
      h("option", { value: "" }, "All workers"),
      ...[...this.ranks].sort((a, b) => a - b).map((rank) => h("option", { value: String(rank) }, `Rank ${rank}`)),
    );
    this.rankSelect.value = chosen;
    this.rankSelect.hidden = false;
  }

  /** Save the lines shown now (search, level and rank applied) as a text file, one per line. */
  private download(): void {
    const needle = this.query.toLowerCase();
    const text = this.lines
      .filter((line) => this.passes(line, needle))
      .map((line) => `${line.message}\n`)
      .join("");
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
    const link = h("a", { href: url, download: `trial-${this.trialId}-logs.txt`, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }

  private lineEl(line: LogLine, needle: string): HTMLElement {
    const el = h("div", {
      class: `log-line ${severity(line)}`,
      "data-testid": "log-line",
      "data-seq": line.seq,
    });
    if (line.timestamp)
      el.append(
        h("span", { class: "log-time", "data-testid": "log-time" }, formatClock(new Date(line.timestamp), true)),
      );
    const level = levelName(line);
    el.append(
      h(
        "span",
        {
          class: `log-level${level ? ` level-${level.toLowerCase()}` : ""}`,
          "data-testid": "log-level-badge",
          title: level ? `Level ${level}` : "No level (counts as INFO)",
        },
        level ?? "",
      ),
    );
    if (line.rank !== null && line.rank !== undefined)
      el.append(
        h("span", { class: "log-rank", "data-testid": "log-rank", title: "worker rank" }, `[rank ${line.rank}]`),
      );
    const message = shownText(line);
    const text = h("span", { class: "log-text" });
    if (needle) {
      const lower = message.toLowerCase();
      let at = 0;
      for (let hit = lower.indexOf(needle); hit >= 0; hit = lower.indexOf(needle, at)) {
        text.append(message.slice(at, hit), h("mark", {}, message.slice(hit, hit + needle.length)));
        at = hit + needle.length;
      }
      text.append(message.slice(at));
    } else {
      text.textContent = message;
    }
    el.append(text);
    return el;
  }

  private updateStatus(): void {
    if (this.lines.length === 0) {
      this.box.replaceChildren(h("p", { class: "muted log-empty" }, this.live ? "No output yet." : "No output."));
      this.status.textContent = "0 lines";
      return;
    }
    this.box.querySelector(".log-empty")?.remove();
    const total = formatInteger(this.lines.length);
    const count = this.box.querySelectorAll(".log-line").length;
    const shown = formatInteger(count);
    const cut = this.dropped > 0 ? ` (the first ${formatInteger(this.dropped)} dropped)` : "";
    const filtered = this.query || this.minLevel > 0 || this.rank !== null;
    this.status.textContent = filtered ? `${shown} of ${total} lines match${cut}` : `${total} lines${cut}`;
    if (filtered && count === 0)
      this.box.append(
        h(
          "p",
          { class: "muted log-empty", "data-testid": "log-no-match" },
          `No lines match: none of the ${total} lines ${this.filterWords()}.`,
        ),
      );
  }

  /** What the chosen filters ask, in words: "contains “x”, is WARNING or above". */
  private filterWords(): string {
    const words: string[] = [];
    if (this.query) words.push(`contains “${this.query}”`);
    if (this.minLevel > 0) words.push(`is ${LEVELS[this.minLevel]} or above`);
    if (this.rank !== null) words.push(`comes from rank ${this.rank}`);
    return words.join(" and ");
  }

  /** Whether the trial still runs: Follow is ticked while it does, unticked once it ended
   * (nothing more will come). */
  setLive(live: boolean): void {
    if (live === this.live) return;
    this.live = live;
    if (!live) this.follow.checked = false;
  }

  private followed(): void {
    if (this.follow.checked) this.box.scrollTop = this.box.scrollHeight;
  }
}
