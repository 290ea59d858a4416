"""Workspaces and projects in a real browser against a real master: the Workspaces page lists
each workspace with its projects, a project's page lists its experiments (each a link to its
page), and the experiment list filters by project."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import Experiments, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_workspaces_page_and_a_project_page(page: Page, experiments: Experiments) -> None:
    http = experiments.master.http
    workspace = http.post("/workspaces", json={"name": "ui-team"}).json()
    project = http.post(
        f"/workspaces/{workspace['id']}/projects",
        json={"name": "ui-vision", "description": "cats and dogs"},
    ).json()
    moved = http.post(
        f"/experiments/{experiments.finished}/move",
        json={"destination_project_id": project["id"]},
    )
    assert moved.status_code == 200, moved.text
    try:
        page.goto(f"{experiments.url}/#/experiments")
        page.get_by_role("link", name="Workspaces").click()
        section = page.get_by_test_id("workspace").filter(has_text="ui-team")
        row = section.get_by_test_id("project-row").filter(has_text="ui-vision")
        expect(row).to_contain_text(project["key"])
        expect(row).to_contain_text("cats and dogs")
        default = page.get_by_test_id("workspace").filter(has_text="Uncategorized")
        expect(default.get_by_test_id("project-row")).to_contain_text("Uncategorized")
        screenshot(page, "workspaces")

        row.get_by_role("link", name="ui-vision").click()
        expect(page.get_by_test_id("project-name")).to_have_text("ui-vision")
        expect(page.get_by_test_id("project-about")).to_contain_text("Workspace ui-team")
        experiment_rows = page.get_by_test_id("project-experiment-row")
        expect(experiment_rows).to_have_count(1)
        expect(experiment_rows.first).to_contain_text("ui-finished")
        expect(experiment_rows.first.get_by_test_id("experiment-state")).to_contain_text(
            "completed", ignore_case=True
        )
        screenshot(page, "project")
        experiment_rows.first.get_by_role("link", name=str(experiments.finished)).click()
        expect(page).to_have_url(f"{experiments.url}/#/experiments/{experiments.finished}")

        # The experiment list, filtered by the project: only that experiment.
        page.goto(f"{experiments.url}/#/experiments")
        page.get_by_test_id("filter-project").select_option(label="ui-team / ui-vision")
        expect(page).to_have_url(f"{experiments.url}/#/experiments?project={project['id']}")
        expect(page.get_by_test_id("experiment-row")).to_have_count(1)
        expect(page.get_by_test_id("experiment-row").first).to_contain_text("ui-finished")
    finally:
        http.post(f"/experiments/{experiments.finished}/move", json={"destination_project_id": 1})
