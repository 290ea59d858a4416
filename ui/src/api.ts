// The master's REST API under /api/v1. Every action of the UI goes through here; nothing else
// calls fetch. The bodies are typed by ./api-types.ts, generated from the master's OpenAPI
// document (ui/openapi.json) by `npm run api-types`: the names below are the UI's names for the
// schemas. The browser sends the session cookie with every request, and those that change state
// carry the CSRF header (src/auth.ts); a 401 answer sends the user back to the sign-in form.

import type { components } from "./api-types";
import { csrfHeaders, signInAgain } from "./auth";

type Schemas = components["schemas"];

export type ExperimentState = Schemas["ExperimentState"];
export type TrialState = Schemas["TrialState"];
export type TrialOutcome = Schemas["TrialOutcome"];
export type CheckpointState = Schemas["CheckpointState"];
export type MetricKind = Schemas["MetricKind"];
export type XAxis = Schemas["SeriesPublic"]["x"];
export type SeriesSelect = Schemas["SeriesPublic"]["select"];
/** The actions of `POST /experiments/{id}/{action}`. */
export type ExperimentAction = "pause" | "activate" | "cancel" | "kill" | "archive" | "unarchive";

/** `values`, checked to name every member of the union `T` (the build fails when the schema's
 * enum gains one the list lacks). */
function everyOf<T extends string>() {
  return <const A extends readonly T[]>(values: A & (Exclude<T, A[number]> extends never ? unknown : never)) =>
    values as readonly T[];
}

/** Every experiment state, in the order the filters show them. */
export const EXPERIMENT_STATES = everyOf<ExperimentState>()([
  "ACTIVE",
  "PAUSED",
  "STOPPING_CANCELED",
  "STOPPING_KILLED",
  "CANCELED",
  "COMPLETED",
  "ERROR",
]);

/** Every trial state, in the order the filters show them. */
export const TRIAL_STATES = everyOf<TrialState>()([
  "ACTIVE",
  "QUEUED",
  "RUNNING",
  "PAUSED",
  "STOPPING_CANCELED",
  "STOPPING_KILLED",
  "CANCELED",
  "COMPLETED",
  "ERROR",
]);

const TERMINAL = new Set<string>(["CANCELED", "COMPLETED", "ERROR"]);

/** True once nothing more will happen to an experiment or trial in this state. */
export function isTerminal(state: ExperimentState | TrialState): boolean {
  return TERMINAL.has(state);
}

/** A metric value as the API answers it: a number, null, or one of the strings the master writes
 * for a non-finite value (pedl.vocabulary's NON_FINITE_NAMES, through the schema). */
export type MetricValue = Schemas["MetricPublic"]["metrics"][string];

export type Experiment = Schemas["ExperimentPublic"];
export type TrialError = Schemas["TrialErrorPublic-Output"];
/** A trial; one of an experiment's trials list (a {@link TrialListItem}) has its `latest_validation`. */
export type Trial = Schemas["TrialPublic"] & Partial<Pick<TrialListItem, "latest_validation">>;
/** A trial in an experiment's trials list, with the metrics of its latest validation. */
export type TrialListItem = Schemas["TrialListItem"];
/** Every trial of an experiment, column-wise (parallel coordinates, scatter plots). */
export type TrialsSummary = Schemas["TrialsSummaryPublic"];
export type SeriesTrial = Schemas["TrialSeriesPublic"];
export type Series = Schemas["SeriesPublic"];
export type MetricNames = Schemas["MetricNamesPublic"];
export type MetricRow = Schemas["MetricPublic"];
export type LogLine = Schemas["LogLinePublic"];
/** One sample of a trial process's system metrics (`GET /trials/{id}/system-metrics`). */
export type SystemSample = Schemas["SystemSamplePublic"];
export type SystemMetrics = Schemas["SystemMetricsPublic"];
/** One worker process of a trial's attempt (`GET /trials/{id}/workers`). */
export type TrialWorker = Schemas["TrialWorkerPublic"];
export type Checkpoint = Schemas["CheckpointPublic"];
/** A TensorBoard the master runs (`POST /tensorboards`), served at its `service_address`. */
export type TensorBoard = Schemas["TensorBoardPublic"];
/** A model of the registry (`/models`). */
export type Model = Schemas["ModelPublic"];
/** Version `version` of a model: one registered checkpoint. */
export type ModelVersion = Schemas["ModelVersionPublic"];
/** A model version holding a checkpoint (`GET /checkpoints/model-versions`). */
export type CheckpointRegistration = Schemas["CheckpointRegistration"];
export type Cluster = Schemas["ClusterPublic"];
/** A worker process kept ready for trials, idle now (a spare, or an experiment's warm one). */
export type IdleWorker = Schemas["IdleWorkerPublic"];
export type Importance = Schemas["ImportancePublic"];
export type History = Schemas["HistoryPublic"];
export type Timeline = Schemas["TimelinePublic"];
export type SignedIn = Schemas["LoginPublic"];
export type User = Schemas["UserPublic"];

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

/** The download address of a checkpoint's files (a tar stream). */
export function checkpointArchiveUrl(uuid: string): string {
  return url(`/checkpoints/${encodeURIComponent(uuid)}/archive`);
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
    request<SignedIn>("POST", "/auth/login", undefined, { username, password } satisfies Schemas["Login"]),
  logout: () => request<void>("POST", "/auth/logout"),
  me: (signal?: AbortSignal) => get<User>("/me", undefined, signal),
  clusterMessage: () => get<Schemas["ClusterMessageAnswer"]>("/master/cluster_message"),
  experiments: (q: ExperimentQuery, signal?: AbortSignal) =>
    get<Schemas["Page_ExperimentPublic_"]>("/experiments", { ...q, state: q.state, label: q.label }, signal),
  experiment: (id: number, signal?: AbortSignal) => get<Experiment>(`/experiments/${id}`, undefined, signal),
  experimentAction: (id: number, action: ExperimentAction) =>
    request<Experiment>("POST", `/experiments/${id}/${action}`),
  /** Delete an ended experiment; what stayed in storage and why (empty: every file removed). */
  deleteExperiment: async (id: number): Promise<string[]> => {
    const answer = await request<Schemas["ExperimentDeleted"] | undefined>("DELETE", `/experiments/${id}`);
    return answer?.files_not_removed ?? [];
  },
  patchExperiment: (id: number, patch: Schemas["ExperimentEdit"]) =>
    request<Experiment>("PATCH", `/experiments/${id}`, undefined, patch),
  trials: (experimentId: number, q: TrialQuery, signal?: AbortSignal) =>
    get<Schemas["Page_TrialListItem_"]>(`/experiments/${experimentId}/trials`, { ...q, state: q.state }, signal),
  trialsSummary: (experimentId: number, signal?: AbortSignal) =>
    get<TrialsSummary>(`/experiments/${experimentId}/trials/summary`, undefined, signal),
  paretoFront: (experimentId: number, signal?: AbortSignal) =>
    get<Schemas["ParetoFrontPublic"]>(`/experiments/${experimentId}/pareto`, undefined, signal),
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
  ) =>
    get<Schemas["Page_CheckpointPublic_"]>(
      `/experiments/${experimentId}/checkpoints`,
      { ...q, state: q.state },
      signal,
    ),
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
    get<Schemas["Page_CheckpointPublic_"]>(`/trials/${id}/checkpoints`, q, signal),
  cluster: (signal?: AbortSignal) => get<Cluster>("/cluster", undefined, signal),
  models: (q: { limit: number; offset: number }, signal?: AbortSignal) =>
    get<Schemas["Page_ModelPublic_"]>("/models", q, signal),
  model: (name: string, signal?: AbortSignal) => get<Model>(`/models/${encodeURIComponent(name)}`, undefined, signal),
  modelVersions: (name: string, signal?: AbortSignal) =>
    get<ModelVersion[]>(`/models/${encodeURIComponent(name)}/versions`, undefined, signal),
  checkpointRegistrations: (uuids: readonly string[], signal?: AbortSignal) =>
    get<CheckpointRegistration[]>("/checkpoints/model-versions", { uuid: uuids }, signal),
  createModel: (name: string) =>
    request<Model>("POST", "/models", undefined, { name } satisfies Schemas["ModelCreate"]),
  registerVersion: (name: string, checkpointUuid: string) =>
    request<ModelVersion>("POST", `/models/${encodeURIComponent(name)}/versions`, undefined, {
      checkpoint_uuid: checkpointUuid,
    } satisfies Schemas["ModelVersionCreate"]),
  startTensorBoard: (experimentIds: number[]) =>
    request<TensorBoard>("POST", "/tensorboards", undefined, {
      experiment_ids: experimentIds,
    } satisfies Schemas["TensorBoardCreate"]),
  tensorBoard: (id: string, signal?: AbortSignal) =>
    get<TensorBoard>(`/tensorboards/${encodeURIComponent(id)}`, undefined, signal),
  tensorBoards: (signal?: AbortSignal) => get<TensorBoard[]>("/tensorboards", undefined, signal),
};

/** The strings the master writes for a non-finite metric value. */
export type NonFiniteName = Extract<MetricValue, string>;

/** What each non-finite name stands for: the UI's one decoding of them. Keyed by the names the
 * schema gives (pedl.vocabulary's), so a name added or dropped there fails the build here. */
export const NON_FINITE: Readonly<Record<NonFiniteName, number>> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};

/** A metric value as a number (NaN and the infinities for their names, null when missing or
 * not a metric value). */
export function metricNumber(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (typeof value === "string" && Object.hasOwn(NON_FINITE, value)) return NON_FINITE[value as NonFiniteName];
  return null;
}
