// The master's REST API under /api/v1, typed after ui/API.md. Every action of the UI goes
// through here; nothing else calls fetch. The browser sends the session cookie with every
// request, and those that change state carry the CSRF header (src/auth.ts); a 401 answer sends
// the user back to the sign-in form.

import { csrfHeaders, signInAgain } from "./auth";

export type ExperimentState =
  "ACTIVE" | "PAUSED" | "STOPPING_CANCELED" | "STOPPING_KILLED" | "CANCELED" | "COMPLETED" | "ERROR";

export type TrialState =
  | "ACTIVE"
  | "QUEUED"
  | "RUNNING"
  | "PAUSED"
  | "STOPPING_CANCELED"
  | "STOPPING_KILLED"
  | "CANCELED"
  | "COMPLETED"
  | "ERROR";

export type TrialOutcome =
  "COMPLETED" | "STOPPED_EARLY" | "STOPPED_BY_SEARCHER" | "INVALID_HP" | "ERRORED" | "KILLED" | "PREEMPTED";

export type CheckpointState = "ACTIVE" | "COMPLETED" | "ERROR" | "DELETED";
export type MetricKind = "training" | "validation";
export type XAxis = "batches" | "epochs";
export type ExperimentAction = "pause" | "activate" | "cancel" | "kill" | "archive" | "unarchive";

export const EXPERIMENT_STATES: readonly ExperimentState[] = [
  "ACTIVE",
  "PAUSED",
  "STOPPING_CANCELED",
  "STOPPING_KILLED",
  "CANCELED",
  "COMPLETED",
  "ERROR",
];

export const TRIAL_STATES: readonly TrialState[] = [
  "ACTIVE",
  "QUEUED",
  "RUNNING",
  "PAUSED",
  "STOPPING_CANCELED",
  "STOPPING_KILLED",
  "CANCELED",
  "COMPLETED",
  "ERROR",
];

const TERMINAL = new Set<string>(["CANCELED", "COMPLETED", "ERROR"]);

/** True once nothing more will happen to an experiment or trial in this state. */
export function isTerminal(state: ExperimentState | TrialState): boolean {
  return TERMINAL.has(state);
}

/** A JSON number, null, or one of the strings the API uses for non-finite values. */
export type MetricValue = number | "NaN" | "Infinity" | "-Infinity" | null;

export interface Page<T> {
  items: T[];
  total: number;
  offset: number;
  limit: number;
}

export interface Experiment {
  id: number;
  name: string | null;
  owner: string;
  state: ExperimentState;
  progress: number;
  config: Record<string, unknown>;
  searcher_metric: string | null;
  smaller_is_better: boolean;
  best_validation: number | null;
  created_at: string;
  ended_at: string | null;
  error: string | null;
  description: string | null;
  labels: string[];
  archived?: boolean;
  /** Its trials by state, read with it (GET /experiments/{id} only). */
  trial_counts?: Partial<Record<TrialState, number>> | null;
}

export interface TrialError {
  type: string;
  message: string;
  location: string | null;
  before_progress: boolean;
  traceback: string;
}

export interface Trial {
  id: number;
  experiment_id: number;
  request_id: string | null;
  hparams: Record<string, unknown>;
  seed: number;
  state: TrialState;
  restarts: number;
  total_batches: number;
  latest_checkpoint_uuid: string | null;
  best_checkpoint_uuid: string | null;
  best_validation: number | null;
  outcome: TrialOutcome | null;
  error: TrialError | null;
  created_at: string;
  ended_at: string | null;
  /** The metrics of its validation with the most batches (trials lists only; null before
   * its first). */
  latest_validation?: Record<string, MetricValue> | null;
}

/** Every trial of an experiment, column-wise (parallel coordinates, scatter plots). */
export interface TrialsSummary {
  trial_ids: number[];
  states: TrialState[];
  best_validation: (number | null)[];
  hparams: Record<string, unknown[]>;
}

export interface SeriesTrial {
  trial_id: number;
  best: boolean;
  points: [number, number | null][];
}

export interface Series {
  kind: MetricKind;
  metric: string;
  x: XAxis;
  cursor: number;
  select?: SeriesSelect;
  total_trials?: number;
  trials: SeriesTrial[];
}

export interface MetricNames {
  training: string[];
  validation: string[];
}

export interface MetricRow {
  trial_id: number;
  kind: MetricKind;
  total_batches: number;
  total_records: number | null;
  total_epochs: number | null;
  metrics: Record<string, MetricValue | string>;
  reported_at: string;
}

export interface LogLine {
  seq: number;
  message: string;
  level: string | null;
  stream: string | null;
  timestamp: string | null;
  /** The worker of a multi-worker trial that wrote it (0: the chief); null otherwise. */
  rank?: number | null;
}

/** One sample of a trial process's system metrics (GET /trials/{id}/system-metrics). */
export interface SystemSample {
  rank: number;
  time: string;
  metrics: Record<string, number>;
}

export interface SystemMetrics {
  trial_id: number;
  total: number;
  downsampled: boolean;
  samples: SystemSample[];
}

/** One worker process of a trial's attempt (`GET /trials/{id}/workers`). */
export interface TrialWorker {
  rank: number;
  pid: number;
  state: string;
  exit: string | null;
  exit_code: number | null;
  heartbeat_age: number | null;
}

export interface Checkpoint {
  uuid: string;
  trial_id: number;
  experiment_id: number;
  total_batches: number;
  state: CheckpointState;
  metadata: Record<string, unknown>;
  resources: Record<string, number>;
  size: number;
  created_at: string;
  validation_metrics: Record<string, MetricValue> | null;
}

/** A TensorBoard the master runs (`POST /tensorboards`), served at its `service_address`. */
export interface TensorBoard {
  id: string;
  state: "STARTING" | "RUNNING" | "STOPPED" | "FAILED";
  experiment_ids: number[];
  trial_ids: number[];
  service_address: string;
  error: string | null;
}

/** A model of the registry (`/models`). */
export interface Model {
  id: number;
  name: string;
  description: string;
  notes: string;
  labels: string[];
  metadata: Record<string, unknown>;
  owner: string;
  archived: boolean;
  created_at: string;
  updated_at: string;
  num_versions: number;
}

/** Version `version` of a model: one registered checkpoint. */
export interface ModelVersion {
  id: number;
  model_id: number;
  model_name: string;
  version: number;
  checkpoint: Checkpoint;
  name: string | null;
  comment: string;
  owner: string;
  created_at: string;
}

export interface Cluster {
  slots_total: number;
  slots_used: number;
  running: { trial_id: number; experiment_id: number; slots: number }[];
  queued: { trial_id: number; experiment_id: number; reason: string | null }[];
}

/** An error answer of the API (or of the network), with the master's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

const BASE = "api/v1";

type Query = Record<string, string | number | boolean | readonly (string | number)[] | null | undefined>;

function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value == null || value === "") continue;
    if (Array.isArray(value)) for (const item of value) params.append(key, String(item));
    else params.append(key, String(value));
  }
  const search = params.toString();
  return `${BASE}${path}${search ? `?${search}` : ""}`;
}

/** A GET the page started before the app loaded (index.html), taken at most once. */
function prefetched(address: string): Promise<Response> | undefined {
  const store = (window as { __pedlPrefetch?: Record<string, Promise<Response> | undefined> }).__pedlPrefetch;
  const pending = store?.[address];
  if (store && pending) delete store[address];
  return pending;
}

async function request<T>(
  method: string,
  path: string,
  query?: Query,
  body?: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const address = url(path, query);
  let response: Response;
  try {
    response = await ((method === "GET" ? prefetched(address) : undefined) ??
      fetch(address, {
        method,
        headers: {
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
          ...(method === "GET" ? {} : csrfHeaders()),
        },
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ?? null,
      }));
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError(0, "The master cannot be reached.");
  }
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    let field: string | null = null;
    try {
      const payload = (await response.json()) as { error?: { message?: string; field?: string | null } };
      if (payload.error?.message) message = payload.error.message;
      field = payload.error?.field ?? null;
    } catch {
      // Not JSON: keep the status line.
    }
    if (response.status === 401) signInAgain();
    throw new ApiError(response.status, message, field);
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

const get = <T>(path: string, query?: Query, signal?: AbortSignal) => request<T>("GET", path, query, undefined, signal);

export interface ExperimentQuery {
  state?: readonly ExperimentState[];
  name?: string;
  description?: string;
  owner?: string;
  label?: readonly string[];
  /** `COLUMN:LOW..HIGH` (id, progress, best_validation, duration in seconds, created_at). */
  range?: readonly string[];
  sort?: string;
  archived?: boolean;
  limit: number;
  offset: number;
}

export interface TrialQuery {
  state?: readonly TrialState[];
  /** id, state, outcome, total_batches, best_validation, restarts, created_at, ended_at,
   * duration, `hparams.NAME` or `metrics.NAME` (latest value); `-` prefix: descending. */
  sort?: string;
  /** `COLUMN:LOW..HIGH` (either end may be empty). */
  range?: readonly string[];
  /** `hparams.NAME:VALUE`. */
  value?: readonly string[];
  limit: number;
  offset: number;
}

export type SeriesSelect = "default" | "best" | "worst" | "all" | "ids";

export interface SeriesQuery {
  kind: MetricKind;
  metric: string;
  x: XAxis;
  maxPoints?: number;
  maxTrials?: number;
  after?: number;
  select?: SeriesSelect;
  trialIds?: readonly number[];
}

export interface Importance {
  metric: string | null;
  method: string;
  ready: boolean;
  current: boolean;
  trials: number;
  importances: { name: string; importance: number }[];
}

export interface History {
  metric: string | null;
  smaller_is_better: boolean;
  started_at: string;
  trial_ids: number[];
  times: number[];
  ended: boolean[];
  values: number[];
  best_so_far: number[];
}

export interface Timeline {
  started_at: string;
  now: number;
  slots: number;
  slots_per_trial: number;
  trial_ids: number[];
  states: TrialState[];
  starts: number[];
  ends: (number | null)[];
  slot: number[];
}

/** The download address of a checkpoint's files (a tar stream). */
export function checkpointArchiveUrl(uuid: string): string {
  return url(`/checkpoints/${encodeURIComponent(uuid)}/archive`);
}

export interface SignedIn {
  token: string;
  username: string;
  admin: boolean;
  expires_at: string;
}

export interface User {
  username: string;
  admin: boolean;
  active: boolean;
  created_at: string;
}

/** Fetch a checkpoint's files (the session cookie goes along) and hand them to the browser as
 * a download. */
export async function downloadCheckpoint(uuid: string): Promise<void> {
  const response = await fetch(checkpointArchiveUrl(uuid));
  if (!response.ok) {
    if (response.status === 401) signInAgain();
    throw new ApiError(response.status, `${response.status} ${response.statusText}`);
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = `checkpoint-${uuid}.tar`;
  link.click();
  window.setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

export const api = {
  login: (username: string, password: string) =>
    request<SignedIn>("POST", "/auth/login", undefined, { username, password }),
  logout: () => request<void>("POST", "/auth/logout"),
  me: (signal?: AbortSignal) => get<User>("/me", undefined, signal),
  experiments: (q: ExperimentQuery, signal?: AbortSignal) =>
    get<Page<Experiment>>("/experiments", { ...q, state: q.state, label: q.label }, signal),
  experiment: (id: number, signal?: AbortSignal) => get<Experiment>(`/experiments/${id}`, undefined, signal),
  experimentAction: (id: number, action: ExperimentAction) =>
    request<Experiment>("POST", `/experiments/${id}/${action}`),
  /** Delete an ended experiment; what stayed in storage and why (empty: every file removed). */
  deleteExperiment: async (id: number): Promise<string[]> => {
    const answer = await request<{ files_not_removed?: string[] } | undefined>("DELETE", `/experiments/${id}`);
    return answer?.files_not_removed ?? [];
  },
  patchExperiment: (id: number, patch: { description?: string; labels?: string[] }) =>
    request<Experiment>("PATCH", `/experiments/${id}`, undefined, patch),
  trials: (experimentId: number, q: TrialQuery, signal?: AbortSignal) =>
    get<Page<Trial>>(`/experiments/${experimentId}/trials`, { ...q, state: q.state }, signal),
  trialsSummary: (experimentId: number, signal?: AbortSignal) =>
    get<TrialsSummary>(`/experiments/${experimentId}/trials/summary`, undefined, signal),
  series: (experimentId: number, q: SeriesQuery, signal?: AbortSignal) =>
    get<Series>(
      `/experiments/${experimentId}/series`,
      {
        kind: q.kind,
        metric: q.metric,
        x: q.x,
        max_points: q.maxPoints,
        max_trials: q.maxTrials,
        after: q.after,
        select: q.select,
        trial_id: q.trialIds?.map(String),
      },
      signal,
    ),
  importance: (experimentId: number, signal?: AbortSignal) =>
    get<Importance>(`/experiments/${experimentId}/importance`, undefined, signal),
  history: (experimentId: number, signal?: AbortSignal) =>
    get<History>(`/experiments/${experimentId}/history`, undefined, signal),
  timeline: (experimentId: number, signal?: AbortSignal) =>
    get<Timeline>(`/experiments/${experimentId}/timeline`, undefined, signal),
  metricNames: (experimentId: number, signal?: AbortSignal) =>
    get<MetricNames>(`/experiments/${experimentId}/metric-names`, undefined, signal),
  experimentCheckpoints: (
    experimentId: number,
    q: { sort: "best" | "created"; state?: readonly CheckpointState[]; limit: number; offset: number },
    signal?: AbortSignal,
  ) => get<Page<Checkpoint>>(`/experiments/${experimentId}/checkpoints`, { ...q, state: q.state }, signal),
  trial: (id: number, signal?: AbortSignal) => get<Trial>(`/trials/${id}`, undefined, signal),
  killTrial: (id: number) => request<Trial>("POST", `/trials/${id}/kill`),
  trialMetrics: (id: number, q: { kind?: MetricKind; afterBatches?: number; limit?: number }, signal?: AbortSignal) =>
    get<MetricRow[]>(`/trials/${id}/metrics`, { kind: q.kind, after_batches: q.afterBatches, limit: q.limit }, signal),
  trialLogs: (id: number, q: { after?: number; limit: number }, signal?: AbortSignal) =>
    get<LogLine[]>(`/trials/${id}/logs`, { after: q.after, limit: q.limit }, signal),
  trialWorkers: (id: number, signal?: AbortSignal) => get<TrialWorker[]>(`/trials/${id}/workers`, undefined, signal),
  trialSystemMetrics: (id: number, q: { maxPoints: number }, signal?: AbortSignal) =>
    get<SystemMetrics>(`/trials/${id}/system-metrics`, { max_points: q.maxPoints }, signal),
  trialCheckpoints: (id: number, q: { limit: number; offset: number }, signal?: AbortSignal) =>
    get<Page<Checkpoint>>(`/trials/${id}/checkpoints`, q, signal),
  cluster: (signal?: AbortSignal) => get<Cluster>("/cluster", undefined, signal),
  models: (q: { limit: number; offset: number }, signal?: AbortSignal) => get<Page<Model>>("/models", q, signal),
  model: (name: string, signal?: AbortSignal) => get<Model>(`/models/${encodeURIComponent(name)}`, undefined, signal),
  modelVersions: (name: string, signal?: AbortSignal) =>
    get<ModelVersion[]>(`/models/${encodeURIComponent(name)}/versions`, undefined, signal),
  createModel: (name: string) => request<Model>("POST", "/models", undefined, { name }),
  registerVersion: (name: string, checkpointUuid: string) =>
    request<ModelVersion>("POST", `/models/${encodeURIComponent(name)}/versions`, undefined, {
      checkpoint_uuid: checkpointUuid,
    }),
  startTensorBoard: (experimentIds: number[]) =>
    request<TensorBoard>("POST", "/tensorboards", undefined, { experiment_ids: experimentIds }),
  tensorBoard: (id: string, signal?: AbortSignal) =>
    get<TensorBoard>(`/tensorboards/${encodeURIComponent(id)}`, undefined, signal),
};

/** A metric value as a number (NaN for the non-finite strings, null when missing). */
export function metricNumber(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (value === "NaN") return Number.NaN;
  if (value === "Infinity") return Number.POSITIVE_INFINITY;
  if (value === "-Infinity") return Number.NEGATIVE_INFINITY;
  return null;
}
