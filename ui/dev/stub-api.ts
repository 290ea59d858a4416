// Dev server only (`npm run dev`): answers the endpoints and parameters of ui/API.md that the
// master in front of it does not serve yet, from the endpoints it does serve. For each
// request it reads the master's /openapi.json (cached for a few seconds): a route or query
// parameter the master declares goes to the master untouched (through Vite's proxy), so this
// stub steps aside by itself as the master gains the endpoints. Nothing here is built into
// the UI bundle.
//
// Approximations: `series` downsamples by stride (the master uses LTTB) and its cursor is a
// report time in ms (the master's is a row id); `cluster` counts the RUNNING and QUEUED
// trials of live experiments, with PEDL_STUB_SLOTS (default: the slots in use, at least 1) as
// the total; description and labels are kept in this process's memory.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Plugin } from "vite";

type Json = Record<string, unknown>;
type Experiment = Json & { id: number; config: Json; state: string; name: string | null; best_validation: number | null };
type Trial = Json & { id: number; hparams: Json; state: string; best_validation: number | null; total_batches: number };
type MetricRow = { total_batches: number; total_epochs: number | null; metrics: Json; reported_at: string };

const API = "/api/v1";
const OPENAPI_TTL_MS = 5000;
const LIVE_EXPERIMENT_STATES = ["ACTIVE", "PAUSED", "STOPPING_CANCELED", "STOPPING_KILLED"];

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

export function stubApi(master: string): Plugin {
  const stub = new Stub(master);
  return {
    name: "pedl-stub-api",
    apply: "serve",
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        stub.handle(req, res).then(
          (handled) => {
            if (!handled) next();
          },
          (err: unknown) => {
            const status = err instanceof HttpError ? err.status : 502;
            const field = err instanceof HttpError ? err.field : null;
            send(res, status, { error: { message: err instanceof Error ? err.message : String(err), field } });
          },
        );
      });
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json");
  res.setHeader("X-PEDL-Stub", "1");
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
}

function flatten(hparams: Json, prefix = "", out: Json = {}): Json {
  for (const [key, value] of Object.entries(hparams)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) flatten(value as Json, name, out);
    else out[name] = value;
  }
  return out;
}

function numberOf(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

class Stub {
  private openapi: { at: number; doc: Promise<Json> } | null = null;
  private readonly notes = new Map<number, { description?: string; labels?: string[] }>();

  constructor(private readonly master: string) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? "/", "http://stub");
    const path = url.pathname;
    if (!path.startsWith(`${API}/`)) return false;
    const method = (req.method ?? "GET").toLowerCase();
    const q = url.searchParams;
    let m: RegExpExecArray | null;

    if (method === "get" && path === `${API}/experiments`) {
      if (await this.declares("/experiments", "get", "sort")) return false;
      send(res, 200, await this.listExperiments(q));
      return true;
    }
    if ((m = /^\/api\/v1\/experiments\/(\d+)$/.exec(path))) {
      const id = Number(m[1]);
      if (await this.declares("/experiments/{experiment_id}", "patch")) return false;
      if (method === "patch") {
        const body = (await readBody(req)) as { description?: string; labels?: string[] };
        this.notes.set(id, { ...this.notes.get(id), ...body });
        send(res, 200, this.withNotes(await this.get<Experiment>(`/experiments/${id}`)));
        return true;
      }
      if (method === "get") {
        send(res, 200, this.withNotes(await this.get<Experiment>(`/experiments/${id}`)));
        return true;
      }
      return false;
    }
    if (method === "post" && (m = /^\/api\/v1\/experiments\/(\d+)\/(pause|activate|cancel|kill)$/.exec(path))) {
      if (await this.declares("/experiments/{experiment_id}", "patch")) return false;
      send(res, 200, this.withNotes(await this.post<Experiment>(`/experiments/${m[1]}/${m[2]}`)));
      return true;
    }
    if (method !== "get") return false;
    if ((m = /^\/api\/v1\/experiments\/(\d+)\/trials$/.exec(path))) {
      if (!q.has("sort") || (await this.declares("/experiments/{experiment_id}/trials", "get", "sort"))) return false;
      send(res, 200, await this.sortedTrials(Number(m[1]), q));
      return true;
    }
    if ((m = /^\/api\/v1\/experiments\/(\d+)\/trials\/summary$/.exec(path))) {
      if (await this.declares("/experiments/{experiment_id}/trials/summary", "get")) return false;
      send(res, 200, await this.summary(Number(m[1])));
      return true;
    }
    if ((m = /^\/api\/v1\/experiments\/(\d+)\/series$/.exec(path))) {
      if (await this.declares("/experiments/{experiment_id}/series", "get")) return false;
      send(res, 200, await this.series(Number(m[1]), q));
      return true;
    }
    if ((m = /^\/api\/v1\/experiments\/(\d+)\/metric-names$/.exec(path))) {
      if (await this.declares("/experiments/{experiment_id}/metric-names", "get")) return false;
      send(res, 200, await this.metricNames(Number(m[1])));
      return true;
    }
    if (path === `${API}/cluster`) {
      if (await this.declares("/cluster", "get")) return false;
      send(res, 200, await this.cluster());
      return true;
    }
    return false;
  }

  /** Whether the master's OpenAPI has this route (and query parameter). */
  private async declares(route: string, method: string, param?: string): Promise<boolean> {
    if (!this.openapi || Date.now() - this.openapi.at > OPENAPI_TTL_MS) {
      this.openapi = { at: Date.now(), doc: this.get<Json>("/openapi.json", "").catch(() => ({})) };
    }
    const doc = await this.openapi.doc;
    const paths = (doc.paths ?? {}) as Record<string, Record<string, { parameters?: { name: string }[] }>>;
    const operation = paths[`${API}${route}`]?.[method];
    if (!operation) return false;
    return param === undefined || (operation.parameters ?? []).some((p) => p.name === param);
  }

  private async get<T>(path: string, prefix = API): Promise<T> {
    const response = await fetch(`${this.master}${prefix}${path}`);
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { error?: { message?: string } };
      throw new HttpError(response.status, body.error?.message ?? response.statusText);
    }
    return (await response.json()) as T;
  }

  private async post<T>(path: string): Promise<T> {
    const response = await fetch(`${this.master}${API}${path}`, { method: "POST" });
    const body = (await response.json()) as T & { error?: { message?: string } };
    if (!response.ok) throw new HttpError(response.status, body.error?.message ?? response.statusText);
    return body;
  }

  private withNotes(experiment: Experiment): Experiment {
    const notes = this.notes.get(experiment.id) ?? {};
    const fromConfig = typeof experiment.config.description === "string" ? experiment.config.description : null;
    return { ...experiment, description: notes.description ?? experiment.description ?? fromConfig, labels: notes.labels ?? experiment.labels ?? [] };
  }

  private async pages<T>(path: string, query = ""): Promise<T[]> {
    const items: T[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await this.get<{ items: T[]; total: number }>(`${path}?limit=1000&offset=${offset}${query}`);
      items.push(...page.items);
      if (items.length >= page.total || page.items.length === 0) return items;
    }
  }

  private async listExperiments(q: URLSearchParams): Promise<Json> {
    const states = q.getAll("state").map((s) => `&state=${encodeURIComponent(s)}`).join("");
    let rows = (await this.pages<Experiment>("/experiments", states)).map((e) => this.withNotes(e));
    const name = (q.get("name") ?? "").toLowerCase();
    if (name) rows = rows.filter((e) => (e.name ?? "").toLowerCase().includes(name));
    const labels = q.getAll("label");
    if (labels.length) rows = rows.filter((e) => labels.every((l) => (e.labels as string[]).includes(l)));
    sortRows(rows, q.get("sort") ?? "-id");
    const limit = Number(q.get("limit") ?? 100);
    const offset = Number(q.get("offset") ?? 0);
    return { items: rows.slice(offset, offset + limit), total: rows.length, offset, limit };
  }

  private async sortedTrials(id: number, q: URLSearchParams): Promise<Json> {
    const states = q.getAll("state").map((s) => `&state=${encodeURIComponent(s)}`).join("");
    const rows = await this.pages<Trial>(`/experiments/${id}/trials`, states);
    sortRows(rows, q.get("sort") ?? "id");
    const limit = Number(q.get("limit") ?? 100);
    const offset = Number(q.get("offset") ?? 0);
    return { items: rows.slice(offset, offset + limit), total: rows.length, offset, limit };
  }

  private async summary(id: number): Promise<Json> {
    const trials = await this.pages<Trial>(`/experiments/${id}/trials`);
    const flat = trials.map((t) => flatten(t.hparams));
    const names = [...new Set(flat.flatMap((f) => Object.keys(f)))];
    return {
      trial_ids: trials.map((t) => t.id),
      states: trials.map((t) => t.state),
      best_validation: trials.map((t) => t.best_validation),
      hparams: Object.fromEntries(names.map((n) => [n, flat.map((f) => f[n] ?? null)])),
    };
  }

  private async series(id: number, q: URLSearchParams): Promise<Json> {
    const kind = q.get("kind") ?? "validation";
    const metric = q.get("metric") ?? "";
    const x = q.get("x") ?? "batches";
    const maxPoints = Number(q.get("max_points") ?? 200);
    const maxTrials = Number(q.get("max_trials") ?? 100);
    const after = q.has("after") ? Number(q.get("after")) : null;
    const [experiment, trials] = await Promise.all([this.get<Experiment>(`/experiments/${id}`), this.pages<Trial>(`/experiments/${id}/trials`)]);
    const hp = (experiment.config.hyperparameters ?? {}) as Json;
    const batchSize = numberOf(hp.global_batch_size) ?? numberOf((hp.global_batch_size as Json | undefined)?.val);
    const recordsPerEpoch = numberOf(experiment.config.records_per_epoch);
    if (x === "epochs" && !(batchSize && recordsPerEpoch)) {
      throw new HttpError(422, "x=epochs needs records_per_epoch and a constant global_batch_size in the config", "x");
    }
    const smaller = experiment.smaller_is_better === true;
    const ranked = trials.filter((t) => t.best_validation != null).sort((a, b) => ((a.best_validation as number) - (b.best_validation as number)) * (smaller ? 1 : -1));
    const best = new Set(ranked.slice(0, 5).map((t) => t.id));
    const rest = trials.filter((t) => !best.has(t.id)).sort((a, b) => a.id - b.id);
    const room = Math.max(0, maxTrials - best.size);
    const step = rest.length > room ? rest.length / room : 1;
    const chosen = [...trials.filter((t) => best.has(t.id))];
    for (let i = 0; i < Math.min(room, rest.length); i++) chosen.push(rest[Math.floor(i * step)] as Trial);
    let cursor = after ?? 0;
    const out = await Promise.all(
      chosen.map(async (t) => {
        const rows = await this.get<MetricRow[]>(`/trials/${t.id}/metrics?kind=${kind}&limit=100000`);
        let points: [number, number | null][] = [];
        for (const row of rows) {
          const at = Date.parse(row.reported_at);
          cursor = Math.max(cursor, at);
          if (after !== null && at <= after) continue;
          if (!(metric in row.metrics)) continue;
          const xv = x === "epochs" ? (row.total_epochs ?? (row.total_batches * (batchSize as number)) / (recordsPerEpoch as number)) : row.total_batches;
          points.push([xv, numberOf(row.metrics[metric])]);
        }
        if (after === null && points.length > maxPoints) {
          const stride = (points.length - 1) / (maxPoints - 1);
          points = Array.from({ length: maxPoints }, (_v, i) => points[Math.round(i * stride)] as [number, number | null]);
        }
        return { trial_id: t.id, best: best.has(t.id), points };
      }),
    );
    return { kind, metric, x, cursor, trials: out };
  }

  private async metricNames(id: number): Promise<Json> {
    const trials = (await this.pages<Trial>(`/experiments/${id}/trials`)).slice(0, 20);
    const names = { training: new Set<string>(), validation: new Set<string>() };
    await Promise.all(
      trials.flatMap((t) =>
        (["training", "validation"] as const).map(async (kind) => {
          const rows = await this.get<MetricRow[]>(`/trials/${t.id}/metrics?kind=${kind}&limit=1`);
          for (const row of rows) for (const name of Object.keys(row.metrics)) names[kind].add(name);
        }),
      ),
    );
    return { training: [...names.training].sort(), validation: [...names.validation].sort() };
  }

  private async cluster(): Promise<Json> {
    const states = LIVE_EXPERIMENT_STATES.map((s) => `&state=${s}`).join("");
    const experiments = await this.pages<Experiment>("/experiments", states);
    const running: Json[] = [];
    const queued: Json[] = [];
    for (const e of experiments) {
      const slots = numberOf(((e.config.resources ?? {}) as Json).slots_per_trial) ?? 1;
      for (const t of await this.pages<Trial>(`/experiments/${e.id}/trials`, "&state=RUNNING&state=QUEUED")) {
        if (t.state === "RUNNING") running.push({ trial_id: t.id, experiment_id: e.id, slots });
        else {
          const scheduling = await this.get<{ queue_reason: string | null }>(`/trials/${t.id}/scheduling`).catch(() => ({ queue_reason: null }));
          queued.push({ trial_id: t.id, experiment_id: e.id, reason: scheduling.queue_reason });
        }
      }
    }
    const used = running.reduce((sum, r) => sum + (r.slots as number), 0);
    return { slots_total: Number(process.env.PEDL_STUB_SLOTS) || Math.max(used, 1), slots_used: used, running, queued };
  }
}

/** Sort by `key` or `-key`; nulls last either way. */
function sortRows(rows: Json[], sort: string): void {
  const descending = sort.startsWith("-");
  const key = descending ? sort.slice(1) : sort;
  rows.sort((a, b) => {
    const x = a[key];
    const y = b[key];
    if (x == null || y == null) return x == null ? (y == null ? 0 : 1) : -1;
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return descending ? -order : order;
  });
}
