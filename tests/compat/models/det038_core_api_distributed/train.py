"""A framework-free Core API script in the form of Determined 0.38's distributed tutorial
(stage 4): the entrypoint runs it as a launcher, which starts one worker process per slot of
its container through ``python3 -m determined.launch.wrap_rank``; each worker builds its
``det.core.DistributedContext`` from ``det.get_cluster_info()`` and passes it to
``det.core.init(distributed=...)``. Every step adds the sum of all workers' ``increment_by``
(an ``allgather``) to ``x``; the chief alone reports metrics and checkpoints, and every worker
asks ``should_preempt()`` in step. ``broadcast`` and ``gather`` are used once each.

Validations report ``x`` and ``samples`` (8 per step), a progress metric an ASHA searcher may
name as its ``time_metric`` (``adaptive.yaml`` runs one worker as the entrypoint itself, on one
slot). ``PEDL_TEST_STEP_DELAY`` (seconds) slows each step; with ``PEDL_TEST_HOLD_FOR_PAUSE=1``
a fresh run waits after its first checkpoint until it is asked to stop."""

import json
import logging
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time

import determined as det


def save_state(x, steps_completed, trial_id, path):
    path.joinpath("state").write_text(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id, path):
    x, steps_completed, ckpt_trial_id = (
        int(part) for part in pathlib.Path(path).joinpath("state").read_text().split(",")
    )
    return (x, steps_completed) if ckpt_trial_id == trial_id else (x, 0)


def hold_for_pause(core_context):
    """Waits, every worker in step, until the trial is asked to stop (``should_preempt()``) or
    the chief has waited 600 s (its clock decides for all: every worker makes the same calls)."""
    dist = core_context.distributed
    deadline = time.monotonic() + 600
    while dist.broadcast(time.monotonic() < deadline) and not core_context.preempt.should_preempt():
        time.sleep(0.05)


def main(core_context, latest_checkpoint, trial_id, increment_by, max_length):
    dist = core_context.distributed
    x, starting_batch = 0, 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)
        logging.info("resumed at batch %d (x=%d)", starting_batch, x)
    chief_says = dist.broadcast(f"hello from rank {dist.rank}")
    delay = float(os.environ.get("PEDL_TEST_STEP_DELAY", "0"))
    hold = os.environ.get("PEDL_TEST_HOLD_FOR_PAUSE") == "1"
    for batch in range(starting_batch, max_length):
        everyone = dist.allgather((dist.rank, increment_by))
        if batch == starting_batch:
            logging.info("allgather %s broadcast %s", json.dumps(everyone), chief_says)
        x += sum(increment for _, increment in everyone)
        steps_completed = batch + 1
        time.sleep(delay)
        if steps_completed % 10 == 0:
            if dist.rank == 0:
                core_context.train.report_training_metrics(
                    steps_completed=steps_completed, metrics={"x": x}
                )
                core_context.train.report_progress(steps_completed / float(max_length))
                core_context.train.report_validation_metrics(
                    steps_completed=steps_completed,
                    metrics={"x": x, "samples": 8 * steps_completed},
                )
                with core_context.checkpoint.store_path({"steps_completed": steps_completed}) as (
                    path,
                    _uuid,
                ):
                    save_state(x, steps_completed, trial_id, path)
            if hold and latest_checkpoint is None and steps_completed == 10:
                hold_for_pause(core_context)
            if core_context.preempt.should_preempt():
                return
    ranks = dist.gather(dist.rank)
    if dist.rank == 0:
        logging.info("gathered ranks %s", ranks)


def launcher_main(slots_per_node, cross_rank):
    procs = []
    for local_rank in range(slots_per_node):
        rank = cross_rank * slots_per_node + local_rank
        command = ["python3", "-m", "determined.launch.wrap_rank", str(rank), "--"]
        command += ["python3", __file__, "worker", str(rank), str(local_rank), *sys.argv[2:]]
        procs.append(subprocess.Popen(command))
    exits = queue.Queue()
    threads = [threading.Thread(target=lambda p=p: exits.put((p, p.wait()))) for p in procs]
    for thread in threads:
        thread.start()
    first_failure = 0
    for _ in procs:
        proc, code = exits.get()
        if code != 0 and first_failure == 0:
            first_failure = code
            for other in procs:
                if other is not proc:
                    other.kill()
    for thread in threads:
        thread.join()
    return first_failure


def worker_main(info, rank, local_rank, max_length):
    slots_per_node = len(info.slot_ids)
    num_nodes = len(info.container_addrs)
    distributed = det.core.DistributedContext(
        rank=rank,
        size=num_nodes * slots_per_node,
        local_rank=local_rank,
        local_size=slots_per_node,
        cross_rank=info.container_rank,
        cross_size=num_nodes,
        chief_ip=info.container_addrs[0],
    )
    with det.core.init(distributed=distributed) as core_context:
        main(
            core_context=core_context,
            latest_checkpoint=info.latest_checkpoint,
            trial_id=info.trial.trial_id,
            increment_by=info.trial.hparams["increment_by"],
            max_length=max_length,
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    cluster_info = det.get_cluster_info()
    assert cluster_info is not None, "this example only runs on-cluster"
    steps = int(sys.argv[-1])
    if sys.argv[1] == "launcher":  # SCRIPT launcher STEPS
        sys.exit(launcher_main(len(cluster_info.slot_ids), cluster_info.container_rank))
    if sys.argv[1] == "worker":  # SCRIPT worker RANK LOCAL_RANK STEPS
        worker_main(cluster_info, int(sys.argv[2]), int(sys.argv[3]), steps)
        sys.exit(0)
    raise ValueError(f"unrecognized first argument: {sys.argv[1]}")
