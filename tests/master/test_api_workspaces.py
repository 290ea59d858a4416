"""``/workspaces``, ``/projects`` and ``/experiments/{id}/move`` on a real master over HTTP,
on SQLite and PostgreSQL: Determined's default workspace and project, creating, listing,
renaming, archiving and deleting, experiments placed by ``project_id`` or by the config's
``workspace``/``project``, lists filtered by project, and who may change what."""

from __future__ import annotations

import httpx

from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.vocabulary import ExperimentState
from tests.master.helpers import CONFIG_YAML, create_experiment, experiment_body, sign_in


def _workspace(client: httpx.Client, name: str) -> dict[str, object]:
    response = client.post("/workspaces", json={"name": name})
    assert response.status_code == 201, response.text
    created: dict[str, object] = response.json()
    return created


def _project(client: httpx.Client, workspace_id: object, name: str, **extra: str) -> dict:
    response = client.post(f"/workspaces/{workspace_id}/projects", json={"name": name, **extra})
    assert response.status_code == 201, response.text
    created: dict = response.json()
    return created


def test_the_default_workspace_and_project(client: httpx.Client) -> None:
    workspaces = client.get("/workspaces").json()
    assert [(w["id"], w["name"], w["immutable"], w["num_projects"]) for w in workspaces] == [
        (1, "Uncategorized", True, 1)
    ]
    experiment = create_experiment(client)
    assert (experiment["project_id"], experiment["workspace_id"]) == (1, 1)
    assert experiment["project_name"] == experiment["workspace_name"] == "Uncategorized"
    project = client.get("/projects/1").json()
    assert (project["name"], project["key"], project["workspace_name"]) == (
        "Uncategorized",
        "UNC",
        "Uncategorized",
    )
    assert (project["num_experiments"], project["num_active_experiments"]) == (1, 1)
    for refused in (
        client.post("/workspaces/1/archive"),
        client.delete("/workspaces/1"),
        client.patch("/workspaces/1", json={"name": "Mine"}),
        client.post("/projects/1/archive"),
        client.delete("/projects/1"),
        client.patch("/projects/1", json={"name": "Mine"}),
    ):
        assert refused.status_code == 409, refused.text
        assert "default" in refused.json()["error"]["message"]


def test_create_list_rename_archive_and_delete(client: httpx.Client) -> None:
    team = _workspace(client, "team")
    assert (team["name"], team["owner"], team["archived"], team["num_projects"]) == (
        "team",
        "admin",
        False,
        0,
    )
    again = client.post("/workspaces", json={"name": "team"})
    assert again.status_code == 409 and again.json()["error"]["field"] == "name"
    vision = _project(client, team["id"], "vision", description="cats and dogs")
    assert vision["key"].startswith("VIS") and len(vision["key"]) == 5
    keyed = _project(client, team["id"], "speech", key="sp1")
    assert keyed["key"] == "SP1"
    taken = client.post(f"/workspaces/{team['id']}/projects", json={"name": "x", "key": "SP1"})
    assert taken.status_code == 409 and taken.json()["error"]["field"] == "key"
    twin = client.post(f"/workspaces/{team['id']}/projects", json={"name": "vision"})
    assert twin.status_code == 409 and twin.json()["error"]["field"] == "name"
    # The same project name in another workspace is fine.
    _project(client, 1, "vision")

    assert client.get("/workspaces", params={"name": "team"}).json()[0]["num_projects"] == 2
    listed = client.get(f"/workspaces/{team['id']}/projects").json()
    assert [p["name"] for p in listed] == ["vision", "speech"]
    assert [
        p["name"]
        for p in client.get(f"/workspaces/{team['id']}/projects", params={"name": "speech"}).json()
    ] == ["speech"]
    assert len(client.get("/projects").json()) == 4
    assert len(client.get("/projects", params={"workspace_id": team["id"]}).json()) == 2

    renamed = client.patch(f"/workspaces/{team['id']}", json={"name": "research"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "research"
    changed = client.patch(
        f"/projects/{vision['id']}", json={"name": "images", "description": "", "key": "img"}
    )
    assert changed.status_code == 200, changed.text
    assert (changed.json()["name"], changed.json()["key"]) == ("images", "IMG")

    assert client.post(f"/projects/{keyed['id']}/archive").json()["archived"] is True
    assert client.get("/projects", params={"archived": "true"}).json()[0]["id"] == keyed["id"]
    assert client.post(f"/projects/{keyed['id']}/unarchive").json()["archived"] is False
    archived = client.post(f"/workspaces/{team['id']}/archive").json()
    assert archived["archived"] is True
    refused = client.post(f"/workspaces/{team['id']}/projects", json={"name": "late"})
    assert refused.status_code == 409 and "archived" in refused.json()["error"]["message"]
    assert [w["name"] for w in client.get("/workspaces", params={"archived": "false"}).json()] == [
        "Uncategorized"
    ]
    client.post(f"/workspaces/{team['id']}/unarchive")

    assert client.delete(f"/projects/{keyed['id']}").status_code == 204
    assert client.get(f"/projects/{keyed['id']}").status_code == 404
    assert client.delete(f"/workspaces/{team['id']}").status_code == 204
    assert client.get(f"/workspaces/{team['id']}").status_code == 404
    assert client.get(f"/projects/{vision['id']}").status_code == 404


def test_names_and_keys_are_checked(client: httpx.Client) -> None:
    for body, field in (
        ({"name": ""}, "body.name"),
        ({"name": "x" * 129}, "body.name"),
        ({"name": " padded"}, "body.name"),
        ({"name": "two\nlines"}, "body.name"),
        ({"name": "ok", "extra": 1}, "body.extra"),
    ):
        response = client.post("/workspaces", json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["field"] == field
    for body, field in (
        ({"name": "p", "key": "TOOLONG"}, "body.key"),
        ({"name": "p", "key": "a-b"}, "body.key"),
        ({"name": "p", "description": "d" * 10_001}, "body.description"),
    ):
        response = client.post("/workspaces/1/projects", json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["field"] == field
    assert client.get("/workspaces/0").status_code == 422
    assert client.get("/workspaces/999").status_code == 404
    assert client.get("/projects/999").status_code == 404


def test_experiments_go_where_they_are_told(client: httpx.Client) -> None:
    team = _workspace(client, "team")
    vision = _project(client, team["id"], "vision")
    by_id = create_experiment(client, project_id=vision["id"])
    assert (by_id["project_id"], by_id["workspace_id"]) == (vision["id"], team["id"])
    assert (by_id["workspace_name"], by_id["project_name"]) == ("team", "vision")
    by_names = create_experiment(client, config=CONFIG_YAML + "workspace: team\nproject: vision\n")
    assert by_names["project_id"] == vision["id"] and by_names["warnings"] == []
    # project_id wins over the config's names (as in Determined).
    wins = create_experiment(
        client, project_id=1, config=CONFIG_YAML + "workspace: team\nproject: vision\n"
    )
    assert wins["project_id"] == 1

    for extra, field, status in (
        ({"project_id": 999}, "project_id", 404),
        ({"project_id": 0}, "body.project_id", 422),
        ({"config": CONFIG_YAML + "workspace: team\n"}, "config.project", 422),
        ({"config": CONFIG_YAML + "project: vision\n"}, "config.workspace", 422),
        ({"config": CONFIG_YAML + "workspace: nope\nproject: vision\n"}, "config.workspace", 422),
        ({"config": CONFIG_YAML + "workspace: team\nproject: nope\n"}, "config.project", 422),
    ):
        response = client.post("/experiments", json=experiment_body(**extra))
        assert response.status_code == status, (extra, response.text)
        assert response.json()["error"]["field"] == field, response.text
    client.post(f"/projects/{vision['id']}/archive")
    archived = client.post("/experiments", json=experiment_body(project_id=vision["id"]))
    assert archived.status_code == 409 and archived.json()["error"]["field"] == "project_id"
    client.post(f"/projects/{vision['id']}/unarchive")

    listed = client.get("/experiments", params={"project_id": vision["id"]}).json()
    assert sorted(e["id"] for e in listed["items"]) == sorted([by_id["id"], by_names["id"]])
    assert listed["total"] == 2
    assert {e["project_name"] for e in listed["items"]} == {"vision"}
    in_team = client.get("/experiments", params={"workspace_id": team["id"]}).json()
    assert in_team["total"] == 2
    assert client.get("/experiments", params={"project_id": 1}).json()["total"] == 1
    assert client.get("/experiments", params={"project_id": 0}).status_code == 422

    refused = client.delete(f"/projects/{vision['id']}")
    assert refused.status_code == 409 and "2 experiments" in refused.json()["error"]["message"]
    refused = client.delete(f"/workspaces/{team['id']}")
    assert refused.status_code == 409


def test_move(client: httpx.Client, database: Database) -> None:
    experiment = create_experiment(client)
    team = _workspace(client, "team")
    vision = _project(client, team["id"], "vision")
    moved = client.post(
        f"/experiments/{experiment['id']}/move", json={"destination_project_id": vision["id"]}
    )
    assert moved.status_code == 200, moved.text
    assert (moved.json()["project_id"], moved.json()["workspace_id"]) == (vision["id"], team["id"])
    assert client.get(f"/experiments/{experiment['id']}").json()["project_name"] == "vision"
    counted = client.get(f"/projects/{vision['id']}").json()
    assert (counted["num_experiments"], counted["num_active_experiments"]) == (1, 1)
    with database.session(write=True) as session:
        experiments_repo.set_experiment_state(session, experiment["id"], ExperimentState.COMPLETED)
    assert client.get(f"/projects/{vision['id']}").json()["num_active_experiments"] == 0

    missing = client.post(
        f"/experiments/{experiment['id']}/move", json={"destination_project_id": 999}
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["field"] == "destination_project_id"
    assert (
        client.post("/experiments/999/move", json={"destination_project_id": 1}).status_code == 404
    )
    client.post(f"/workspaces/{team['id']}/archive")
    other = _project(client, 1, "elsewhere")
    client.post(
        f"/experiments/{experiment['id']}/move", json={"destination_project_id": other["id"]}
    )
    into_archived = client.post(
        f"/experiments/{experiment['id']}/move", json={"destination_project_id": vision["id"]}
    )
    assert into_archived.status_code == 409
    assert into_archived.json()["error"]["field"] == "destination_project_id"
    assert client.post(f"/experiments/{experiment['id']}/move", json={}).status_code == 422


def test_owners_and_admins_change_them_everyone_reads(
    client: httpx.Client, database: Database
) -> None:
    bob = sign_in(database, "bob", "bob-password-1234", admin=False)
    carol = sign_in(database, "carol", "carol-password-1234", admin=False)
    bobs = client.post("/workspaces", json={"name": "bobs"}, headers=bob).json()
    assert bobs["owner"] == "bob"
    project = client.post(
        f"/workspaces/{bobs['id']}/projects", json={"name": "p"}, headers=bob
    ).json()
    # Anyone reads; anyone may add a project to a workspace (Determined's open source).
    assert client.get(f"/workspaces/{bobs['id']}", headers=carol).status_code == 200
    assert client.get(f"/projects/{project['id']}", headers=carol).status_code == 200
    carols = client.post(f"/workspaces/{bobs['id']}/projects", json={"name": "c"}, headers=carol)
    assert carols.status_code == 201 and carols.json()["owner"] == "carol"
    for response in (
        client.patch(f"/workspaces/{bobs['id']}", json={"name": "mine"}, headers=carol),
        client.post(f"/workspaces/{bobs['id']}/archive", headers=carol),
        client.delete(f"/workspaces/{bobs['id']}", headers=carol),
        client.patch(f"/projects/{project['id']}", json={"name": "mine"}, headers=carol),
        client.post(f"/projects/{project['id']}/archive", headers=carol),
        client.delete(f"/projects/{project['id']}", headers=carol),
    ):
        assert response.status_code == 403, response.text
        assert response.json()["error"]["field"] == "Authorization"
    experiment = create_experiment(client)  # admin's
    moved = client.post(
        f"/experiments/{experiment['id']}/move",
        json={"destination_project_id": project["id"]},
        headers=bob,
    )
    assert moved.status_code == 403
    # The administrator changes anything.
    assert client.post(f"/projects/{project['id']}/archive").status_code == 200
    assert client.delete(f"/projects/{project['id']}").status_code == 204
    assert client.get("/workspaces").status_code == 200
    assert httpx.get(str(client.base_url) + "workspaces").status_code == 401
