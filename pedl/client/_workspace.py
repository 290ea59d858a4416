"""Workspaces and projects (Determined's ``determined.experimental.Workspace``/``Project``).

A :class:`Workspace` holds projects; a :class:`Project` holds experiments. Every experiment is
in one project (``Experiment.project_id``, ``Experiment.workspace_id``): the default project
``Uncategorized`` of the default workspace ``Uncategorized`` unless it was created with a
``project_id`` (or its config's ``workspace`` and ``project``), or moved
(``Experiment.move_to_project``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pedl.client._errors import NotFoundError, PEDLError
from pedl.client._experiment import Experiment
from pedl.client._project_lookup import workspace_by_name
from pedl.client._session import Session


class Project:
    """A project, as Determined's SDK shows one.

    Attributes: ``id``, ``name``, ``key`` (1 to 5 letters and digits), ``description``,
    ``archived``, ``workspace_id``, ``username`` (its creator), ``n_experiments``,
    ``n_active_experiments`` and ``notes`` (always empty: PEDL keeps no project notes).
    """

    def __init__(self, session: Session, project_id: int) -> None:
        self._session = session
        self.id = project_id
        self.archived: bool | None = None
        self.description: str | None = None
        self.n_active_experiments: int | None = None
        self.n_experiments: int | None = None
        self.name: str | None = None
        self.notes: list[dict[str, str]] | None = None
        self.workspace_id: int | None = None
        self.username: str | None = None
        self.key: str | None = None

    @classmethod
    def _from_record(cls, session: Session, record: Mapping[str, Any]) -> Project:
        project = cls(session, int(record["id"]))
        project._hydrate(record)
        return project

    def _hydrate(self, record: Mapping[str, Any]) -> None:
        self.archived = bool(record["archived"])
        self.description = record.get("description") or ""
        self.n_active_experiments = int(record.get("num_active_experiments", 0))
        self.n_experiments = int(record.get("num_experiments", 0))
        self.name = record["name"]
        self.notes = []
        self.workspace_id = int(record["workspace_id"])
        self.username = record["owner"]
        self.key = record["key"]

    def __repr__(self) -> str:
        return f"Project(id={self.id}, name={self.name!r}, workspace_id={self.workspace_id})"

    def reload(self) -> None:
        """Fetch the project's current record from the master."""
        self._hydrate(self._session.get(f"/projects/{self.id}"))

    def list_experiments(self) -> list[Experiment]:
        """The project's experiments, archived ones included, oldest first."""
        items = self._session.get_all("/experiments", params={"project_id": self.id, "sort": "id"})
        return [Experiment(self._session, item) for item in items]

    def _patch(self, **changes: str) -> None:
        self._hydrate(self._session.patch(f"/projects/{self.id}", json=changes))

    def set_description(self, description: str) -> None:
        """Set the project's description, here and on the master."""
        self._patch(description=description)

    def set_key(self, key: str) -> None:
        """Set the project's key (1 to 5 letters and digits; stored upper case)."""
        self._patch(key=key)

    def set_name(self, name: str) -> None:
        """Rename the project (not the default one)."""
        self._patch(name=name)

    def archive(self) -> None:
        """Archive the project: no experiment is created in it or moved into it."""
        self._hydrate(self._session.post(f"/projects/{self.id}/archive"))

    def unarchive(self) -> None:
        """Undo :meth:`archive`."""
        self._hydrate(self._session.post(f"/projects/{self.id}/unarchive"))

    def add_note(self, name: str, contents: str) -> None:
        """Determined's project notes: PEDL keeps none (:class:`PEDLError`)."""
        raise PEDLError(
            "PEDL keeps no project notes: use the project's description (set_description)"
        )

    def remove_note(self, name: str) -> None:
        """Determined's project notes: PEDL keeps none (:class:`PEDLError`)."""
        raise PEDLError("PEDL keeps no project notes")


class Workspace:
    """A workspace, as Determined's SDK shows one: ``id`` and ``name``, made with either (and,
    once read from the master, ``archived``, ``username``, its creator, and ``num_projects``).

    ``Workspace(session, workspace_name="team")`` looks the id up at once
    (:class:`NotFoundError` if there is no such workspace).
    """

    def __init__(
        self,
        session: Session,
        workspace_id: int | None = None,
        workspace_name: str | None = None,
    ) -> None:
        if (workspace_id is None) == (workspace_name is None):
            raise ValueError("Workspace must be constructed with either a name or id (not both).")
        self._session = session
        self.archived: bool | None = None
        self.username: str | None = None
        self.num_projects: int | None = None
        if workspace_id is None:
            assert workspace_name is not None
            self._hydrate(workspace_by_name(session, workspace_name))
        else:
            self.id = int(workspace_id)
            self.name = workspace_name

    @classmethod
    def _from_record(cls, session: Session, record: Mapping[str, Any]) -> Workspace:
        workspace = cls(session, workspace_id=int(record["id"]))
        workspace._hydrate(record)
        return workspace

    def _hydrate(self, record: Mapping[str, Any]) -> None:
        self.id = int(record["id"])
        self.name = record["name"]
        self.archived = bool(record["archived"])
        self.username = record["owner"]
        self.num_projects = int(record.get("num_projects", 0))

    def __repr__(self) -> str:
        return f"Workspace(id={self.id}, name={self.name!r})"

    def reload(self) -> None:
        """Fetch the workspace's current record from the master."""
        self._hydrate(self._session.get(f"/workspaces/{self.id}"))

    def create_project(
        self, name: str, description: str | None = None, *, key: str | None = None
    ) -> Project:
        """A new project in this workspace (:class:`PEDLError` if the name is taken here);
        ``key`` (1 to 5 letters and digits, as ``det project create --key``) is made from the
        name when not given."""
        body: dict[str, Any] = {"name": name}
        if description is not None:
            body["description"] = description
        if key is not None:
            body["key"] = key
        record = self._session.post(f"/workspaces/{self.id}/projects", json=body)
        return Project._from_record(self._session, record)

    def delete_project(self, name: str) -> None:
        """Delete this workspace's project ``name`` (:class:`NotFoundError` if none; refused
        while it holds experiments)."""
        self._session.delete(f"/projects/{self.get_project(name).id}")

    def get_project(self, project_name: str) -> Project:
        """This workspace's project ``project_name`` (:class:`NotFoundError` if none)."""
        found = self._session.get(f"/workspaces/{self.id}/projects", params={"name": project_name})
        if not found:
            raise NotFoundError(
                f"Project '{project_name}' not found in this workspace.", status_code=404
            )
        return Project._from_record(self._session, found[0])

    def list_projects(self) -> list[Project]:
        """Every project of this workspace, by id."""
        records = self._session.get(f"/workspaces/{self.id}/projects")
        return [Project._from_record(self._session, r) for r in records]

    def set_name(self, name: str) -> None:
        """Rename the workspace (not in Determined's SDK; its CLI's ``workspace edit --name``)."""
        self._hydrate(self._session.patch(f"/workspaces/{self.id}", json={"name": name}))

    def archive(self) -> None:
        """Archive the workspace (not in Determined's SDK; its CLI's ``workspace archive``)."""
        self._hydrate(self._session.post(f"/workspaces/{self.id}/archive"))

    def unarchive(self) -> None:
        """Undo :meth:`archive`."""
        self._hydrate(self._session.post(f"/workspaces/{self.id}/unarchive"))


def create_workspace(session: Session, name: str) -> Workspace:
    """A new workspace called ``name`` (:class:`PEDLError` if one is so named)."""
    return Workspace._from_record(session, session.post("/workspaces", json={"name": name}))


def get_workspace(session: Session, name: str) -> Workspace:
    """The workspace called ``name`` (:class:`NotFoundError` if none)."""
    return Workspace._from_record(session, workspace_by_name(session, name))


def list_workspaces(session: Session) -> list[Workspace]:
    """Every workspace, by id."""
    return [Workspace._from_record(session, r) for r in session.get("/workspaces")]


def delete_workspace(session: Session, name: str) -> None:
    """Delete the workspace called ``name`` and its projects (:class:`NotFoundError` if none;
    refused while they hold experiments)."""
    session.delete(f"/workspaces/{workspace_by_name(session, name)['id']}")
