"""The parts of Determined 0.38's Core API a framework-free script may use beside metrics,
checkpoints and preemption, each checked as 0.38 defines it: ``det.get_cluster_info()``'s
fields, ``checkpoint.upload/download/get_metadata`` (selectors get paths relative to the
checkpoint), ``train.report_progress/report_metrics/set_status/get_tensorboard_path/
get_experiment_best_validation`` (``set_metadata/get_metadata`` refused saying why),
``searcher.get_configured_units``. A failed check fails the trial with its message; the last
validation reports ``checks`` (1 when all passed)."""

import logging
import os
import pathlib
import tempfile

import determined as det


def files_under(path):
    root = pathlib.Path(path)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def check_cluster_info(info):
    assert info.task_type == "TRIAL", info.task_type
    assert info.user_data == {"dataset": "iris", "rows": 150}, info.user_data
    assert info.latest_checkpoint is None, info.latest_checkpoint
    assert info.container_addrs == [os.uname().nodename], info.container_addrs
    assert info.container_rank == 0 and info.slot_ids == [0], (info.container_rank, info.slot_ids)
    assert info.trial.hparams == {"lr": 0.25}, info.trial.hparams
    assert info.trial._config["searcher"]["metric"] == "checks", info.trial._config
    assert info.task_id == f"{info.trial.experiment_id}.{info.trial.trial_id}", info.task_id


def check_checkpoints(checkpoint):
    with tempfile.TemporaryDirectory() as source:
        for name, text in (("model/weights.txt", "w"), ("model/a/b.txt", "b"), ("notes.txt", "n")):
            path = pathlib.Path(source, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        storage_id = checkpoint.upload(
            source,
            {"steps_completed": 1, "kind": "upload"},
            selector=lambda name: name.startswith("model/"),
        )
    metadata = checkpoint.get_metadata(storage_id)
    assert metadata["steps_completed"] == 1 and metadata["kind"] == "upload", metadata
    with tempfile.TemporaryDirectory() as target:
        checkpoint.download(storage_id, os.path.join(target, "all"))
        got = files_under(os.path.join(target, "all"))
        assert got == ["metadata.json", "model/a/b.txt", "model/weights.txt"], got
        checkpoint.download(
            storage_id, os.path.join(target, "one"), selector=lambda name: name.endswith("s.txt")
        )
        got = files_under(os.path.join(target, "one"))
        assert got == ["model/weights.txt"], got
    with checkpoint.restore_path(storage_id) as path:
        assert path.joinpath("model", "weights.txt").read_text() == "w"
    try:
        checkpoint.upload(None, {"steps_completed": 1})
    except (RuntimeError, ValueError):
        pass
    else:
        raise AssertionError("upload(None) was accepted")


def check_train(train):
    train.report_progress(0.5)
    try:
        train.report_progress(1.5)
    except ValueError as err:
        assert "between 0 and 1" in str(err), err
    else:
        raise AssertionError("report_progress(1.5) was accepted")
    for call in (lambda: train.set_metadata({"a": 1}), train.get_metadata):
        try:
            call()
        except NotImplementedError as err:
            assert "run metadata is not kept by PEDL" in str(err), err
        else:
            raise AssertionError("run metadata was accepted")
    train.set_status("checking")
    assert train.get_tensorboard_path().is_dir()
    assert train.get_experiment_best_validation() is None
    train.report_metrics("training", 1, {"loss": 0.5})
    train.report_metrics("profiling", 1, {"seconds": 2.0})  # not kept by PEDL (logged)


def main(core_context, info):
    check_cluster_info(info)
    check_checkpoints(core_context.checkpoint)
    check_train(core_context.train)
    assert core_context.searcher.get_configured_units() is None
    assert not core_context.preempt.should_preempt()
    assert det.LOG_FORMAT == "%(levelname)s: [%(process)s] %(name)s: %(message)s"
    core_context.train.report_metrics("validation", 2, {"checks": 1.0})
    logging.info("all Core API checks passed")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    cluster_info = det.get_cluster_info()
    assert cluster_info is not None, "this script only runs as a trial"
    with det.core.init() as context:
        main(context, cluster_info)
