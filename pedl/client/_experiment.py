"""An experiment: its record, lifecycle actions, waiting, trials and checkpoints."""

from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pedl.client._checkpoint import Checkpoint, best_checkpoints, resolve_sort
from pedl.client._errors import PEDLError
from pedl.client._ordering import CheckpointSortBy, OrderBy, TrialSortBy
from pedl.client._pareto import ParetoPoint, points_of
from pedl.client._project_lookup import project_by_names
from pedl.client._session import Session
from pedl.client._sorting import sort_checkpoints, sort_trials
from pedl.client._trial import Trial
from pedl.vocabulary import ExperimentState

_MAX_PAGE = 1000
"""The largest page the master serves."""

TERMINAL_EXPERIMENT_STATES = frozenset(s for s in ExperimentState if s.is_terminal)
"""Experiment states nothing ever leaves."""


class _ExperimentFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    name: str | None = None
    owner: str
    state: ExperimentState
    progress: float
    config: dict[str, Any]
    searcher_metric: str | None = None
    smaller_is_better: bool = True
    best_validation: float | None = None
    created_at: datetime
    ended_at: datetime | None = None
    error: str | None = None
    project_id: int = 1
    workspace_id: int = 1


class Experiment:
    """An experiment as the master last described it (see :meth:`reload`).

    Attributes mirror the API's ``ExperimentPublic``: ``id``, ``name``, ``owner``, ``state``,
    ``progress`` (0..1), ``config`` (validated, defaults filled), ``searcher_metric``,
    ``smaller_is_better``, ``best_validation`` (the best searcher-metric value so far),
    ``created_at``, ``ended_at``, ``error`` (why it ended in
    ``ERROR``: which trials failed how, or the searcher's error), ``project_id`` and
    ``workspace_id``. The actions update ``state`` from the master's answer.
    """

    def __init__(self, session: Session, data: Mapping[str, Any]) -> None:
        self._session = session
        self._update(data)

    def _update(self, data: Mapping[str, Any]) -> None:
        fields = _ExperimentFields.model_validate(data)
        self._record = dict(data)
        self.id = fields.id
        self.name = fields.name
        self.owner = fields.owner
        self.state = fields.state
        self.progress = fields.progress
        self.config = fields.config
        self.searcher_metric = fields.searcher_metric
        self.smaller_is_better = fields.smaller_is_better
        self.best_validation = fields.best_validation
        self.created_at = fields.created_at
        self.ended_at = fields.ended_at
        self.error = fields.error
        self.project_id = fields.project_id
        """The project it belongs to (1: ``Uncategorized``), as Determined's SDK names it."""
        self.workspace_id = fields.workspace_id
        """The workspace of its project."""

    def __repr__(self) -> str:
        return f"Experiment(id={self.id}, name={self.name!r}, state={self.state.value!r})"

    def to_dict(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    @property
    def is_terminal(self) -> bool:
        """True once the experiment has ended (COMPLETED, CANCELED or ERROR)."""
        return self.state in TERMINAL_EXPERIMENT_STATES

    def move_to_project(self, workspace_name: str, project_name: str) -> None:
        """Move the experiment into the project ``project_name`` of the workspace
        ``workspace_name`` (its owner or an administrator; :class:`NotFoundError` if either
        is missing; :class:`PEDLError` if that project or workspace is archived). Updates
        ``project_id`` and ``workspace_id``."""
        project = project_by_names(self._session, workspace_name, project_name)
        body = {"destination_project_id": project["id"]}
        self._update(self._session.post(f"/experiments/{self.id}/move", json=body))

    def reload(self) -> Experiment:
        """Fetch the experiment's current record from the master; returns ``self``."""
        self._update(self._session.get(f"/experiments/{self.id}"))
        return self

    def _action(self, action: str) -> None:
        self._update(self._session.post(f"/experiments/{self.id}/{action}"))

    def pause(self) -> None:
        """Pause an ACTIVE experiment (no-op when PAUSED; :class:`PEDLError` 409 otherwise)."""
        self._action("pause")

    def activate(self) -> None:
        """Resume a PAUSED experiment (no-op when ACTIVE; :class:`PEDLError` 409 otherwise)."""
        self._action("activate")

    def cancel(self) -> None:
        """Stop gracefully: trials checkpoint and exit, then the experiment is CANCELED."""
        self._action("cancel")

    def kill(self) -> None:
        """Stop at once, without checkpointing."""
        self._action("kill")

    def wait(
        self,
        *,
        interval: float = 2.0,
        timeout: float | None = None,
        on_poll: Callable[[Experiment], None] | None = None,
    ) -> ExperimentState:
        """Poll every ``interval`` seconds until the experiment ends; return its final state
        (an :class:`ExperimentState`, a ``StrEnum``: ``state == "COMPLETED"`` holds too).

        ``on_poll`` is called with this (reloaded) experiment after every poll, the last one
        included. Raises ``TimeoutError`` when ``timeout`` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.reload()
            if on_poll is not None:
                on_poll(self)
            if self.is_terminal:
                return self.state
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"experiment {self.id} is still {self.state} after {timeout} seconds"
                )
            pause = interval if deadline is None else min(interval, deadline - time.monotonic())
            time.sleep(max(0.0, pause))

    def _patch(self, body: Mapping[str, Any]) -> None:
        self._update(self._session.patch(f"/experiments/{self.id}", json=dict(body)))

    @property
    def labels(self) -> list[str]:
        """The experiment's labels, in their order."""
        return list(self._record.get("labels") or [])

    @property
    def description(self) -> str | None:
        """The experiment's description."""
        description = self._record.get("description")
        return None if description is None else str(description)

    @property
    def notes(self) -> str | None:
        """The experiment's notes (Determined's ``Experiment.notes``; see :meth:`set_notes`)."""
        notes = self._record.get("notes")
        return None if notes is None else str(notes)

    @property
    def archived(self) -> bool:
        """Whether the experiment is archived (hidden from lists unless asked for)."""
        return bool(self._record.get("archived", False))

    def set_name(self, name: str) -> None:
        """Rename the experiment (its owner or an administrator)."""
        self._patch({"name": name})

    def set_description(self, description: str) -> None:
        """Set the experiment's description."""
        self._patch({"description": description})

    def set_notes(self, notes: str) -> None:
        """Set (overwrite) the experiment's notes: at most 100,000 characters (its owner or
        an administrator)."""
        self._patch({"notes": notes})

    @property
    def log_retention_days(self) -> int | None:
        """Days its trials' logs are kept after it ends (-1 or ``None``: forever)."""
        days = self._record.get("log_retention_days")
        return None if days is None else int(days)

    def set_log_retention(self, days: int | None) -> None:
        """Keep its trials' logs ``days`` days (0 to 32,767) after it ends, then the master
        deletes them (``det experiment set log-retention``); -1 or ``None``: forever. Days that
        have already passed since it ended delete them now."""
        self._patch({"log_retention_days": days})

    def delete_tensorboard_files(self) -> list[str]:
        """Delete the TensorBoard event files its trials uploaded to its checkpoint storage
        (Determined's ``delete_tensorboard_files``; :class:`PEDLError` 409 before it ends).
        Returns what stayed in storage and why, one line each (empty: all gone)."""
        answer = self._session.delete(f"/experiments/{self.id}/tensorboard-files")
        if isinstance(answer, dict):
            return [str(line) for line in answer.get("files_not_removed", [])]
        return []

    def add_label(self, label: str) -> None:
        """Add ``label`` to the experiment's labels (nothing if it has it)."""
        self.reload()
        if label not in self.labels:
            self._patch({"labels": [*self.labels, label]})

    def remove_label(self, label: str) -> None:
        """Remove ``label`` from the experiment's labels (nothing if it lacks it)."""
        self.reload()
        if label in self.labels:
            self._patch({"labels": [one for one in self.labels if one != label]})

    def set_labels(self, labels: Iterable[str]) -> None:
        """Replace the experiment's labels."""
        self._patch({"labels": list(labels)})

    def set_max_slots(self, max_slots: int | None) -> None:
        """Cap the slots the experiment's trials use together (``None``: no cap); the
        master's scheduler starts no trial beyond it from now on (``det experiment set
        max-slots``). :class:`PEDLError` 422 below 1 or below ``slots_per_trial``."""
        self._patch({"resources": {"max_slots": max_slots}})

    def set_priority(self, priority: int) -> None:
        """Set the experiment's scheduling priority, 1 (first) to 99."""
        self._patch({"resources": {"priority": priority}})

    def set_weight(self, weight: float) -> None:
        """Set the experiment's fair-share weight (above 0)."""
        self._patch({"resources": {"weight": weight}})

    def set_gc_policy(
        self, *, save_experiment_best: int, save_trial_best: int, save_trial_latest: int
    ) -> None:
        """Change how many checkpoints the experiment keeps (each count 0 or more); the
        checkpoints the new policy does not keep are deleted (at once for an ended
        experiment), as ``det experiment set gc-policy`` does. See :meth:`preview_gc`."""
        policy = {
            "save_experiment_best": save_experiment_best,
            "save_trial_best": save_trial_best,
            "save_trial_latest": save_trial_latest,
        }
        self._patch({"checkpoint_storage": policy})

    def preview_gc(
        self, *, save_experiment_best: int, save_trial_best: int, save_trial_latest: int
    ) -> list[Checkpoint]:
        """The experiment's checkpoints that :meth:`set_gc_policy` with these counts would
        delete (nothing is changed)."""
        params = {
            "save_experiment_best": save_experiment_best,
            "save_trial_best": save_trial_best,
            "save_trial_latest": save_trial_latest,
        }
        items = self._session.get(f"/experiments/{self.id}/preview_gc", params=params)
        return [Checkpoint(self._session, item) for item in items]

    def continue_experiment(self, config: Mapping[str, Any] | None = None) -> None:
        """Continue the ended experiment as ``det experiment continue`` does. A single-trial
        experiment's trial trains on from its latest checkpoint; ``config`` overrides parts
        of its config (e.g. ``{"searcher": {"max_length": {"batches": 2000}}}`` to train
        longer). A grid or random search (no ``config``: :class:`PEDLError` 422) keeps its
        completed trials, trains its unfinished ones again from their latest checkpoints as
        the same trials and creates those it never created (409 when it completed with
        every trial completed)."""
        body = {"config": dict(config) if config is not None else {}}
        self._update(self._session.post(f"/experiments/{self.id}/continue", json=body))

    def archive(self) -> None:
        """Archive the ended experiment: lists leave it out unless asked for it."""
        self._update(self._session.post(f"/experiments/{self.id}/archive"))

    def unarchive(self) -> None:
        """Undo :meth:`archive`."""
        self._update(self._session.post(f"/experiments/{self.id}/unarchive"))

    def delete(self) -> list[str]:
        """Delete the ended experiment: its records, and its checkpoints' files from storage
        (:class:`PEDLError` 409 while it has not ended). Returns what stayed in storage and
        why, one line each (empty when every file was removed; Determined returns nothing)."""
        answer = self._session.delete(f"/experiments/{self.id}")
        if isinstance(answer, dict):
            return [str(line) for line in answer.get("files_not_removed", [])]
        return []

    def download_code(self, output_dir: str | os.PathLike[str] | None = None) -> str:
        """Save the experiment's model definition, the ``.tar.gz`` exactly as submitted, as
        ``exp-<id>_model_def.tar.gz`` in ``output_dir`` (created if needed; default: the
        current directory), replacing a file of that name; its path. As Determined's
        ``download_code``; :meth:`extract_code` unpacks it instead."""
        name = f"exp-{self.id}_model_def.tar.gz"
        if output_dir:
            directory = Path(output_dir).expanduser()
            directory.mkdir(parents=True, exist_ok=True)
            target = directory / name
        else:
            target = Path(name)
        target.write_bytes(self.model_definition())
        return str(target)

    def extract_code(self, output_dir: str | os.PathLike[str] | None = None) -> str:
        """Extract the experiment's model definition into ``output_dir`` (default
        ``./exp-<id>_model_def``; it must not exist yet) and return its path."""
        target = Path(output_dir if output_dir is not None else f"exp-{self.id}_model_def")
        if target.exists():
            raise PEDLError(f"{target} already exists: choose another output directory")
        archive = self.model_definition()
        target.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(target, filter="data")
        return str(target)

    def model_definition(self) -> bytes:
        """The model definition archive (``.tar.gz``) exactly as submitted."""
        return self._session.get_bytes(f"/experiments/{self.id}/model_definition")

    def await_first_trial(self, interval: float = 0.1) -> Trial:
        """Wait until the experiment has a trial and return it; :class:`PEDLError` if the
        experiment ends without one."""
        while True:
            page = self._session.get(f"/experiments/{self.id}/trials", params={"limit": 1})
            if page["items"]:
                return Trial(self._session, page["items"][0])
            if self.reload().is_terminal:
                raise PEDLError(f"experiment {self.id} ended ({self.state}) without a trial")
            time.sleep(interval)

    def list_trials(
        self,
        sort_by: TrialSortBy | str = TrialSortBy.ID,
        order_by: OrderBy | str = OrderBy.ASCENDING,
        *,
        states: tuple[str, ...] = (),
    ) -> list[Trial]:
        """The experiment's trials, by ``sort_by`` (a :class:`TrialSortBy`; default: id, the
        order they were created in) in ``order_by``'s order; only those in ``states`` when
        given. Trials without a value to sort by (no validation yet, still running) come
        last either way."""
        return list(self.iter_trials(sort_by, order_by, states=states))

    def iter_trials(
        self,
        sort_by: TrialSortBy | str = TrialSortBy.ID,
        order_by: OrderBy | str = OrderBy.ASCENDING,
        limit: int | None = None,
        *,
        states: tuple[str, ...] = (),
    ) -> Iterator[Trial]:
        """:meth:`list_trials` as an iterator; ``limit`` is the page size (as Determined's:
        every trial comes either way)."""
        params: dict[str, Any] = {"state": list(states)} if states else {}
        page = min(max(int(limit), 1), _MAX_PAGE) if limit else _MAX_PAGE
        items = self._session.get_all(
            f"/experiments/{self.id}/trials", params=params or None, page_size=page
        )
        trials = [Trial(self._session, item) for item in items]
        yield from sort_trials(trials, TrialSortBy(sort_by), OrderBy(order_by), self._record)

    def get_trials(
        self,
        sort_by: TrialSortBy | str = TrialSortBy.ID,
        order_by: OrderBy | str = OrderBy.ASCENDING,
    ) -> list[Trial]:
        """:meth:`list_trials` under Determined's deprecated name."""
        return self.list_trials(sort_by, order_by)

    def list_checkpoints(
        self,
        sort_by: str | CheckpointSortBy | None = None,
        order_by: OrderBy | str | None = None,
        max_results: int | None = None,
        *,
        states: tuple[str, ...] = (),
    ) -> list[Checkpoint]:
        """The checkpoints of all the experiment's trials.

        With none of Determined's arguments: every checkpoint, oldest first; only those in
        ``states`` when given. With them, as Determined's ``list_checkpoints``: only the
        COMPLETED checkpoints, sorted by ``sort_by`` (a :class:`CheckpointSortBy`, or a
        validation metric's name) in ``order_by``'s order, both given or neither (then by
        the searcher's metric, best first), at most ``max_results``."""
        if sort_by is None and order_by is None and max_results is None:
            params = {"state": list(states)} if states else None
            items = self._session.get_all(f"/experiments/{self.id}/checkpoints", params=params)
            return [Checkpoint(self._session, item) for item in items]
        completed = self.list_checkpoints(states=("COMPLETED",))
        return sort_checkpoints(completed, sort_by, order_by, max_results, self._record)

    def top_n_checkpoints(
        self, limit: int, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> list[Checkpoint]:
        """Up to ``limit`` best completed checkpoints of the experiment by validation metric
        ``sort_by``, best first (defaults as in :meth:`top_checkpoint`)."""
        n = limit
        metric, smaller = resolve_sort(
            {"searcher_metric": self.searcher_metric, "smaller_is_better": self.smaller_is_better},
            sort_by,
            smaller_is_better,
        )
        if metric is None or n <= 0:
            return []
        if metric == self.searcher_metric and smaller == self.smaller_is_better:
            # Ranked by the master: only the first n come over the wire.
            params = {"sort": "best", "state": ["COMPLETED"]}
            path = f"/experiments/{self.id}/checkpoints"
            items = (
                self._session.get(path, params={**params, "limit": n})["items"]
                if n <= _MAX_PAGE
                else self._session.get_all(path, params=params)
            )
            ranked = [Checkpoint(self._session, item) for item in items]
            return best_checkpoints(ranked, metric, smaller, n)
        return best_checkpoints(self.list_checkpoints(), metric, smaller, n)

    def pareto_front(self) -> list[ParetoPoint]:
        """The best trials of a multi-objective search (``searcher.metrics``): the Pareto
        front of the trials' latest validations, trials no other one dominates, by trial id
        (each with its objectives' values, hyperparameters and checkpoint). With one
        objective, the trials with its best value."""
        body = self._session.get(f"/experiments/{self.id}/pareto", params={"front_only": True})
        return points_of(body)

    def pareto_points(self) -> list[ParetoPoint]:
        """Every trial as a point of the objective space, with its front's ``rank`` (0: on
        the front), best fronts first (:meth:`pareto_front` keeps rank 0)."""
        return points_of(self._session.get(f"/experiments/{self.id}/pareto"))

    def top_checkpoint(
        self, *, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint | None:
        """The experiment's best completed checkpoint by validation metric ``sort_by``;
        ``None`` when no checkpoint has a finite value of it.

        ``sort_by`` defaults to the searcher metric; ``smaller_is_better`` defaults to the
        searcher's direction for that metric, and to true for any other.
        """
        best = self.top_n_checkpoints(1, sort_by=sort_by, smaller_is_better=smaller_is_better)
        return best[0] if best else None
