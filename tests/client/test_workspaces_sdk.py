"""Workspaces and projects through the SDK under Determined's names
(``determined.experimental.client``) and PEDL's (``pedl.client``), on a real master:
``create/get/list/delete_workspace``, ``Workspace.create_project/get_project/list_projects/
delete_project``, ``Project``'s fields and setters, ``create_experiment(project_id=...)``,
``list_experiments(project_id=...)``, ``Experiment.project_id/workspace_id`` and
``move_to_project``."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from pedl.client import Client, NotFoundError, PEDLError, Project, Workspace
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.client.helpers import LiveMaster


def _det_client() -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from determined.experimental import client as det_client
    return det_client


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_workspaces_and_projects_under_determineds_names(
    master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    det = _det_client()
    det.login(master.url, ADMIN, ADMIN_PASSWORD)
    team = _name("team")
    workspace = det.create_workspace(team)
    assert isinstance(workspace, det.Workspace) and isinstance(workspace, Workspace)
    assert workspace.name == team and workspace.id > 1
    assert det.get_workspace(team).id == workspace.id
    assert {w.name for w in det.list_workspaces()} >= {"Uncategorized", team}
    with pytest.raises(NotFoundError):
        det.get_workspace(_name("nobody"))

    project = workspace.create_project("vision", description="cats")
    assert isinstance(project, det.Project) and isinstance(project, Project)
    assert (project.name, project.description, project.workspace_id) == (
        "vision",
        "cats",
        workspace.id,
    )
    assert project.key is not None and project.key.startswith("VIS")
    assert (project.n_experiments, project.n_active_experiments, project.archived) == (0, 0, False)
    assert project.username == ADMIN and project.notes == []
    assert workspace.get_project("vision").id == project.id
    assert [p.name for p in workspace.list_projects()] == ["vision"]
    with pytest.raises(NotFoundError, match="not found in this workspace"):
        workspace.get_project("nope")
    with pytest.raises(PEDLError):
        workspace.create_project("vision")  # the name is taken in this workspace

    experiment = det.create_experiment(config_file, model_dir, project_id=project.id)
    assert (experiment.project_id, experiment.workspace_id) == (project.id, workspace.id)
    listed = det.list_experiments(project_id=project.id)
    assert [e.id for e in listed] == [experiment.id]
    assert [e.id for e in project.list_experiments()] == [experiment.id]
    project.reload()
    assert (project.n_experiments, project.n_active_experiments) == (1, 1)

    other = workspace.create_project("speech")
    experiment.move_to_project(team, "speech")
    assert (experiment.project_id, experiment.workspace_id) == (other.id, workspace.id)
    assert det.get_experiment(experiment.id).project_id == other.id
    with pytest.raises(NotFoundError):
        experiment.move_to_project(team, "nope")

    project.set_name("images")
    project.set_description("")
    project.set_key("img01")
    assert (project.name, project.description, project.key) == ("images", "", "IMG01")
    project.archive()
    assert project.archived is True
    with pytest.raises(PEDLError, match="archived"):
        experiment.move_to_project(team, "images")
    project.unarchive()
    workspace.delete_project("images")
    with pytest.raises(NotFoundError):
        workspace.get_project("images")

    with pytest.raises(PEDLError, match="still holds 1 experiment"):
        det.delete_workspace(team)
    experiment.move_to_project("Uncategorized", "Uncategorized")
    assert (experiment.project_id, experiment.workspace_id) == (1, 1)
    det.delete_workspace(team)
    with pytest.raises(NotFoundError):
        det.get_workspace(team)


def test_a_workspace_by_name_or_id(master: LiveMaster, client: Client) -> None:
    name = _name("byname")
    created = client.create_workspace(name)
    by_name = Workspace(client.session, workspace_name=name)
    assert by_name.id == created.id and by_name.name == name
    by_id = Workspace(client.session, workspace_id=created.id)
    by_id.reload()
    assert by_id.name == name
    with pytest.raises(ValueError, match="either a name or id"):
        Workspace(client.session)
    by_id.archive()
    assert by_id.archived is True
    with pytest.raises(PEDLError, match="archived"):
        by_id.create_project("late")
    by_id.unarchive()
    client.delete_workspace(name)


def test_the_default_workspace_is_kept(client: Client) -> None:
    default = client.get_workspace("Uncategorized")
    assert default.id == 1
    assert default.get_project("Uncategorized").id == 1
    with pytest.raises(PEDLError, match="default workspace"):
        client.delete_workspace("Uncategorized")
