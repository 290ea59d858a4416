// Workspaces and projects from the master (GET /workspaces, /workspaces/{id}/projects,
// /projects/{id}; the experiments of a project come from GET /experiments?project_id=).
// Typed by the generated API types; errors as src/api.ts's (ApiError, a 401 signs out).

import { ApiError, type Experiment } from "./api";
import type { components } from "./api-types";
import { signInAgain } from "./auth";

type Schemas = components["schemas"];
export type Workspace = Schemas["WorkspacePublic"];
export type Project = Schemas["ProjectPublic"];
export type ExperimentPage = Schemas["Page_ExperimentPublic_"];

async function getJson<T>(path: string, query: Record<string, string | number> = {}, signal?: AbortSignal): Promise<T> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) params.set(key, String(value));
  const search = params.toString();
  let response: Response;
  try {
    response = await fetch(`api/v1${path}${search ? `?${search}` : ""}`, {
      headers: { Accept: "application/json" },
      signal: signal ?? null,
    });
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
  return (await response.json()) as T;
}

export const workspacesApi = {
  workspaces: (signal?: AbortSignal) => getJson<Workspace[]>("/workspaces", {}, signal),
  workspaceProjects: (workspaceId: number, signal?: AbortSignal) =>
    getJson<Project[]>(`/workspaces/${workspaceId}/projects`, {}, signal),
  projects: (signal?: AbortSignal) => getJson<Project[]>("/projects", {}, signal),
  project: (projectId: number, signal?: AbortSignal) => getJson<Project>(`/projects/${projectId}`, {}, signal),
  projectExperiments: (projectId: number, limit: number, offset: number, signal?: AbortSignal) =>
    getJson<ExperimentPage>("/experiments", { project_id: projectId, sort: "-id", limit, offset }, signal),
};

export type { Experiment };
