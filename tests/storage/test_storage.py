"""The shared_fs backend's contract, the storage factory, and checkpoint retention."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from pedl.config import ExperimentConfig
from pedl.storage import (
    AzureStorage,
    CheckpointSummary,
    GCSStorage,
    SharedFSStorage,
    UnsupportedStorageError,
    checkpoints_to_delete,
    list_resources,
    make_storage,
)


def test_store_then_restore(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "ckpt")
    with storage.store_path("abc") as path:
        (path / "a.txt").write_text("hello")
        (path / "sub").mkdir()
        (path / "sub" / "b.bin").write_bytes(b"\0" * 10)
        assert not storage.exists("abc")  # not visible until the block finishes
    assert storage.exists("abc")
    with storage.restore_path("abc") as path:
        assert (path / "a.txt").read_text() == "hello"
        assert list_resources(path) == {"a.txt": 5, "sub/b.bin": 10}
    storage.delete("abc")
    storage.delete("abc")  # deleting twice is fine
    assert not storage.exists("abc")


def test_a_failed_store_leaves_nothing(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    with pytest.raises(RuntimeError), storage.store_path("x") as path:
        (path / "partial").write_text("...")
        raise RuntimeError("crash mid-write")
    assert not storage.exists("x")
    assert list(tmp_path.iterdir()) == []


def test_ids_are_checked(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path)
    for bad in ["", "../escape", "a/b", ".hidden"]:
        with pytest.raises(ValueError, match="invalid checkpoint id"):
            storage.path_of(bad)
    with storage.store_path("once"):
        pass
    with pytest.raises(FileExistsError), storage.store_path("once"):
        pass
    with (
        pytest.raises(FileNotFoundError, match="no checkpoint missing"),
        storage.restore_path("missing"),
    ):
        pass


def config_with(storage: str) -> object:
    return ExperimentConfig.model_validate(
        yaml.safe_load(
            "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
            f"checkpoint_storage: {storage}\n"
        )
    ).checkpoint_storage


def test_make_storage(tmp_path: Path) -> None:
    shared = make_storage(
        config_with(f"{{type: shared_fs, host_path: {tmp_path}, storage_path: ckpts}}")  # type: ignore[arg-type]
    )
    assert isinstance(shared, SharedFSStorage) and shared.base_path == tmp_path / "ckpts"
    directory = make_storage(config_with(f"{{type: directory, container_path: {tmp_path}}}"))  # type: ignore[arg-type]
    assert isinstance(directory, SharedFSStorage) and directory.base_path == tmp_path
    gcs = make_storage(config_with("{type: gcs, bucket: b, prefix: p}"))  # type: ignore[arg-type]
    assert isinstance(gcs, GCSStorage) and gcs.location("c") == "gs://b/p/c/"
    azure = make_storage(
        config_with(
            "{type: azure, container: c, connection_string: 'AccountName=a;AccountKey=aw=='}"
        )  # type: ignore[arg-type]
    )
    assert isinstance(azure, AzureStorage) and azure.container == "c"
    sas = AzureStorage("c", account_url="https://a.blob.core.windows.net/?sv=1&sig=SAS-SECRET")
    assert sas.location("x") == "https://a.blob.core.windows.net/c/x/"
    keyed = AzureStorage(
        "c", account_url="https://a.blob.core.windows.net", credential="KEY-SECRET"
    )
    assert "SECRET" not in keyed.location("x") + repr(keyed) + repr(sas)


def test_azure_without_a_credential_needs_azure_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # as if it were not installed
    with pytest.raises(UnsupportedStorageError, match="pip install azure-identity"):
        AzureStorage("c", account_url="https://b.blob.core.windows.net")


def summary(sid: str, trial: int, batches: int, metric: float | None) -> CheckpointSummary:
    return CheckpointSummary(sid, trial, batches, metric)


def test_retention_keeps_latest_and_best_per_trial_and_best_overall() -> None:
    checkpoints = [
        summary("t1-10", 1, 10, 0.5),
        summary("t1-20", 1, 20, 0.2),  # trial 1 best (smaller is better)
        summary("t1-30", 1, 30, 0.4),  # trial 1 latest
        summary("t2-10", 2, 10, 0.1),  # experiment best
        summary("t2-20", 2, 20, None),  # trial 2 latest, never validated
    ]
    doomed = checkpoints_to_delete(
        checkpoints,
        smaller_is_better=True,
        save_trial_latest=1,
        save_trial_best=1,
        save_experiment_best=0,
    )
    assert doomed == {"t1-10"}
    assert checkpoints_to_delete(
        checkpoints,
        smaller_is_better=False,
        save_trial_latest=0,
        save_trial_best=0,
        save_experiment_best=1,
        keep=["t2-20"],
    ) == {"t1-20", "t1-30", "t2-10"}  # larger is better now: t1-10 (0.5) is the best overall
