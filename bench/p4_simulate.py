"""P4 replayed: ASHA's settings against random search on recorded learning curves.

``bench/p4_curves.py`` records, for each seed, the 27 configurations P4 draws, each trained
to 27 epochs with a validation after every whole epoch. Training is deterministic and a
promoted trial continues from its checkpoint, so what a halving search would see of a
configuration at any rung is that curve's value there. This script drives PEDL's own
searchers (``make_search_method`` on P4's config, through the engine's ``SearcherRunner``)
with a discrete-event stand-in for the master's two slots, and prints for each setting:
in how many seeds ASHA's best validation accuracy matches random search's, and the
simulated wall time ratio.

The time model (``--costs``, seconds per slot; the defaults were read off a real ASHA
search's trial logs on this machine, `bench/RESULTS.md` says which): a trial run started
from scratch costs ``fresh`` (hand-off, building the model, tracing its functions) before its
first batch, one restored from a checkpoint ``resume``; each epoch costs ``epoch[batch
size]``, each validation ``validation``, each exit (the checkpoint) ``exit``. As on the
master: slots go to the oldest runnable trial; a trial whose next length was already asked
for goes on in its process; a trial with nothing to do exits at once when another trial waits
for a slot, else keeps its slot up to 5 s for work. Matching is exact (the accuracies are
the recorded ones); the wall times are estimates, compared with measured ones in
``bench/RESULTS.md``.

Run from ``bench/``: ``../.venv/bin/python p4_simulate.py results/p4_curves.jsonl`` (or a
``.jsonl.gz``).

Curves recorded before PEDL drew hyperparameters in sorted name order (issue 25: until then it
drew in the config's key order; ``results/p4_curves_s18_*``) are replayed with the draws they
recorded: when a seed's first recorded trial is not what the searcher now draws, the search
runs on the config with its hyperparameters renamed so that sorted order is the written one
(the same rng calls, so the same values), and the drawn values get their names back.
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import itertools
import json
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import p4_asha

from pedl.config import ExperimentConfig, parse_config
from pedl.searcher import (
    CloseTrial,
    NewTrial,
    SearcherRunner,
    Shutdown,
    TrainTrial,
    TrialOperation,
    make_search_method,
)

COSTS: dict[str, Any] = {
    "fresh": 1.15,
    "resume": 1.30,
    "exit": 0.15,
    "validation": 0.05,
    "epoch": {"16": 0.40, "32": 0.23, "64": 0.17},
}
WAIT_FOR_WORK_S = 5.0


@dataclass
class _Trial:
    request_id: int
    curve: dict[int, dict[str, float]]
    batch_size: int
    issued: list[int] = field(default_factory=list)
    trained: int = 0
    close_requested: bool = False
    closed: bool = False
    running: bool = False
    waiting_since: float | None = None
    """Holding its slot with nothing to do, since then."""


@dataclass
class Outcome:
    wall_s: float
    epochs: int
    best_val_accuracy: float
    validations: list[tuple[int, int, float]]


Names = Callable[[dict[str, Any]], dict[str, Any]]
"""Gives the hyperparameters a searcher drew their names in P4's config."""


def _as_drawn(hparams: dict[str, Any]) -> dict[str, Any]:
    return hparams


def _in_written_order(config: ExperimentConfig) -> tuple[ExperimentConfig, Names]:
    """``config`` with its hyperparameters renamed so that PEDL's draw order (sorted names) is
    the order they are written in, which PEDL drew in before; and what gives the drawn values
    their names back. ``global_batch_size`` keeps its name (epochs are converted with it): the
    names written before it become ``0<place><name>``, those after ``global_batch_size~<place>
    <name>``, which sort below and above it. P4's hyperparameters are not nested (refused if
    they become so: this renames one level)."""
    document = config.as_dict()
    written = document["hyperparameters"]
    if any(isinstance(spec, dict) and "type" not in spec for spec in written.values()):
        raise RuntimeError("P4's hyperparameters are nested now: rename every level")
    batch_size = "global_batch_size"
    position = list(written).index(batch_size) if batch_size in written else len(written)
    original: dict[str, str] = {}
    for place, name in enumerate(written):
        if name == batch_size:
            renamed = name
        elif place < position:
            renamed = f"0{place:02d}{name}"
        else:
            renamed = f"{batch_size}~{place:02d}{name}"
        original[renamed] = name
    if sorted(original) != list(original):
        raise RuntimeError("the renamed hyperparameters do not sort in the written order")
    document["hyperparameters"] = {renamed: written[name] for renamed, name in original.items()}

    def names(hparams: dict[str, Any]) -> dict[str, Any]:
        return {original[name]: value for name, value in hparams.items()}

    return parse_config(document), names


def _recorded_draws(
    config: ExperimentConfig, by_request: dict[int, dict[str, Any]]
) -> tuple[ExperimentConfig, Names]:
    """The config (and names) under which the searcher draws the recorded first trial: as
    written, or (curves recorded before sorted draws) renamed by :func:`_in_written_order`."""
    for candidate, names in ((config, _as_drawn), _in_written_order(config)):
        runner = SearcherRunner(
            make_search_method(candidate), seed=candidate.reproducibility.experiment_seed
        )
        first = next(op for op in runner.initial_operations() if isinstance(op, NewTrial))
        if names(first.hparams) == by_request[first.request_id]["hparams"]:
            return candidate, names
    raise RuntimeError("trial 1: other hyperparameters than recorded, in either draw order")


Objectives = Callable[[dict[str, Any], dict[str, float]], list[float]]
"""A multi-objective search's objectives of a trial (its recorded hyperparameters) at a
validation (the curve's point there)."""


def simulate(
    config_yaml: str,
    curves: list[dict[str, Any]],
    costs: dict[str, Any],
    *,
    objectives: Objectives | None = None,
    jitter: tuple[random.Random, float] | None = None,
) -> Outcome:
    """Run the search ``config_yaml`` on the seed's ``curves`` with 2 slots. A search with
    ``searcher.metrics`` hears ``objectives`` at each validation. ``jitter`` (an rng and a
    spread s) multiplies each stretch of training's cost by a factor drawn from
    lognormal(0, s): the timing noise of a real machine, which decides the order in which an
    asynchronous search hears its trials."""
    by_request = {int(t["request_id"]): t for t in curves}
    config, names = _recorded_draws(parse_config(config_yaml), by_request)
    metric = config.searcher.metric
    runner = SearcherRunner(make_search_method(config), seed=config.reproducibility.experiment_seed)
    trials: dict[int, _Trial] = {}
    slots = 2
    now = 0.0
    queue: list[tuple[float, int, str, int]] = []
    order = itertools.count()
    shut_down = False
    validations: list[tuple[int, int, float]] = []
    epochs = 0

    def handle(ops: list[TrialOperation]) -> None:
        nonlocal shut_down
        pending = list(ops)
        while pending:
            op = pending.pop(0)
            if isinstance(op, NewTrial):
                recorded = by_request[op.request_id]
                hparams = names(op.hparams)
                if recorded["hparams"] != hparams:
                    raise RuntimeError(
                        f"trial {op.request_id}: other hyperparameters than recorded"
                    )
                trials[op.request_id] = _Trial(
                    op.request_id,
                    {int(k): v for k, v in recorded["epochs"].items()},
                    int(hparams["global_batch_size"]),
                )
                pending += runner.on_trial_created(op.request_id)
            elif isinstance(op, TrainTrial):
                trials[op.request_id].issued.append(op.length)
            elif isinstance(op, CloseTrial):
                trial = trials[op.request_id]
                trial.close_requested = True
                if not trial.running and not trial.closed:
                    trial.closed = True
                    pending += runner.on_trial_closed(op.request_id)
            elif isinstance(op, Shutdown):
                shut_down = True

    def next_length(trial: _Trial) -> int | None:
        ahead = [n for n in trial.issued if n > trial.trained]
        return ahead[0] if ahead else None

    def train(trial: _Trial, start: float) -> None:
        length = next_length(trial)
        assert length is not None
        cost = (length - trial.trained) * costs["epoch"][str(trial.batch_size)]
        if jitter is not None:
            rng, spread = jitter
            cost *= rng.lognormvariate(0.0, spread)
        heapq.heappush(
            queue, (start + cost + costs["validation"], next(order), "validated", trial.request_id)
        )

    def schedule() -> None:
        nonlocal slots
        waiting = sorted(
            t.request_id
            for t in trials.values()
            if not t.running and not t.closed and next_length(t)
        )
        for trial in trials.values():  # a held slot is given up for a trial that waits
            if trial.running and trial.waiting_since is not None:
                if next_length(trial) is not None:
                    trial.waiting_since = None
                    train(trial, now)
                elif (
                    waiting or trial.close_requested or now - trial.waiting_since >= WAIT_FOR_WORK_S
                ):
                    trial.waiting_since = None
                    heapq.heappush(
                        queue, (now + costs["exit"], next(order), "exited", trial.request_id)
                    )
        for request_id in waiting:
            if slots == 0:
                break
            trial = trials[request_id]
            slots -= 1
            trial.running = True
            start = now + (costs["resume"] if trial.trained else costs["fresh"])
            train(trial, start)

    handle(runner.initial_operations())
    schedule()
    ended = 0.0
    while queue:
        at, _, kind, request_id = heapq.heappop(queue)
        trial = trials[request_id]
        if kind == "tick" and trial.waiting_since is None:
            continue  # it got work or exited meanwhile
        now = at
        if kind == "validated":
            length = next_length(trial)
            assert length is not None
            epochs += length - trial.trained
            trial.trained = length
            point = trial.curve[length]
            validations.append((request_id, length, point["val_accuracy"]))
            values = None
            if objectives is not None:
                values = objectives(by_request[request_id]["hparams"], point)
            handle(runner.on_validation_completed(request_id, point[metric], length, values))
            if next_length(trial) is not None:
                train(trial, now)
            elif trial.close_requested:
                heapq.heappush(queue, (now + costs["exit"], next(order), "exited", request_id))
            else:
                trial.waiting_since = now
                heapq.heappush(queue, (now + WAIT_FOR_WORK_S, next(order), "tick", request_id))
        elif kind == "exited" and trial.running:
            trial.running = False
            slots += 1
            ended = now
            if trial.close_requested and not trial.closed:
                trial.closed = True
                handle(runner.on_trial_closed(request_id))
        schedule()
    if not shut_down or any(t.running or not t.closed for t in trials.values()):
        raise RuntimeError("the simulated search did not end with every trial closed")
    return Outcome(ended, epochs, max(v[2] for v in validations), validations)


ASHA_SETTINGS = [
    {"mode": mode, "divisor": divisor, "max_rungs": rungs, "stop_once": stop_once}
    for mode in ("aggressive", "standard", "conservative")
    for divisor in (2, 3, 4)
    for rungs in (2, 3, 4, 5)
    for stop_once in (False, True)
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("curves", type=Path)
    parser.add_argument("--costs", type=json.loads, default=COSTS)
    parser.add_argument("--metric", action="append", choices=["val_accuracy", "val_loss"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    opener = gzip.open if args.curves.suffix == ".gz" else open
    with opener(args.curves, "rt") as f:
        seeds = [json.loads(line) for line in f if line.strip()]
    random_runs = {
        s["seed"]: simulate(
            p4_asha.config("random", s["seed"], 27, p4_asha.ASHA_DEFAULTS), s["trials"], args.costs
        )
        for s in seeds
    }
    rows = []
    for metric, settings in itertools.product(args.metric or ["val_accuracy"], ASHA_SETTINGS):
        ratios, matches, at_least = [], 0, 0
        for s in seeds:
            yaml = p4_asha.config("asha", s["seed"], 27, settings)
            if metric == "val_loss":
                accuracy = "metric: val_accuracy\n  smaller_is_better: false"
                if accuracy not in yaml:
                    raise RuntimeError("p4_asha's ASHA config no longer names its metric so")
                yaml = yaml.replace(accuracy, "metric: val_loss\n  smaller_is_better: true")
            asha = simulate(yaml, s["trials"], args.costs)
            rand = random_runs[s["seed"]]
            ratios.append(asha.wall_s / rand.wall_s)
            matches += math.isclose(asha.best_val_accuracy, rand.best_val_accuracy, abs_tol=1e-9)
            at_least += asha.best_val_accuracy >= rand.best_val_accuracy - 1e-9
        row = {
            "metric": metric,
            **settings,
            "matching": matches,
            "at_least_random": at_least,
            "wall_ratio_median": round(statistics.median(ratios), 3),
            "wall_ratio_max": round(max(ratios), 3),
            "seeds_wall_le_0_35": sum(r <= 0.35 for r in ratios),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
