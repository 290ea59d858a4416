"""TensorBoards the master runs over experiments and trials (``pedl tensorboard``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from pedl.client._client import Client, default_client
from pedl.client._errors import PEDLError

START_TIMEOUT_S = 120.0


class TensorBoard(BaseModel):
    """A TensorBoard on the master: ``url`` is where a signed-in browser or client opens it
    (the master proxies it behind its sign-in)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    owner: str
    state: str
    experiment_ids: list[int]
    trial_ids: list[int]
    service_address: str
    created_at: datetime
    exit_code: int | None = None
    error: str | None = None
    url: str = ""


def _board(client: Client, body: dict[str, object]) -> TensorBoard:
    board = TensorBoard.model_validate(body)
    board.url = client.master.rstrip("/") + board.service_address
    return board


def start_tensorboard(
    experiment_ids: Sequence[int] = (),
    trial_ids: Sequence[int] = (),
    *,
    wait: bool = True,
    timeout: float = START_TIMEOUT_S,
    client: Client | None = None,
) -> TensorBoard:
    """Start a TensorBoard over the trials of ``experiment_ids`` and over ``trial_ids`` (a
    running one of yours over the same trials is returned instead). With ``wait``, return
    once it serves (:class:`PEDLError` if it fails or ``timeout`` passes)."""
    client = client or default_client()
    body = {"experiment_ids": list(experiment_ids), "trial_ids": list(trial_ids)}
    board = _board(client, client.session.post("/tensorboards", json=body))
    deadline = time.monotonic() + timeout
    while wait and board.state == "STARTING":
        if time.monotonic() > deadline:
            raise PEDLError(f"TensorBoard {board.id} did not start within {timeout:g} s")
        time.sleep(0.25)
        board = get_tensorboard(board.id, client=client)
    if wait and board.state != "RUNNING":
        raise PEDLError(f"TensorBoard {board.id} is {board.state}: {board.error}")
    return board


def get_tensorboard(tensorboard_id: str, *, client: Client | None = None) -> TensorBoard:
    """One TensorBoard."""
    client = client or default_client()
    return _board(client, client.session.get(f"/tensorboards/{tensorboard_id}"))


def tensorboard_logs(
    tensorboard_id: str, *, tail: int | None = None, client: Client | None = None
) -> list[str]:
    """A TensorBoard's own output, oldest first: the latest lines the master kept of it (the
    last ``tail`` of them)."""
    client = client or default_client()
    params = {"tail": tail} if tail else None
    lines: list[str] = client.session.get(f"/tensorboards/{tensorboard_id}/logs", params=params)
    return lines


def list_tensorboards(*, client: Client | None = None) -> list[TensorBoard]:
    """The TensorBoards the master runs (and those that failed), oldest first."""
    client = client or default_client()
    return [_board(client, b) for b in client.session.get("/tensorboards")]


def stop_tensorboard(tensorboard_id: str, *, client: Client | None = None) -> TensorBoard:
    """Stop a TensorBoard (its process ends; yours, or any as an administrator)."""
    client = client or default_client()
    return _board(client, client.session.post(f"/tensorboards/{tensorboard_id}/kill"))
