"""The S3 backend beyond the common contract (``test_contract``): its layout in the bucket,
torn and damaged uploads, the config that names it, and a missing boto3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from pedl.config import ConfigError, ExperimentConfig
from pedl.local import LocalExperiment
from pedl.storage import (
    S3Storage,
    UnsupportedStorageError,
    make_storage,
    storage_unavailable_reason,
)
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server


def s3_config(text: str) -> object:
    return ExperimentConfig.model_validate(
        yaml.safe_load(
            "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
            f"checkpoint_storage: {text}\n"
        )
    ).checkpoint_storage


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    return s3_server.new_bucket()


@pytest.fixture
def storage(s3_server: S3Server, bucket: str) -> S3Storage:
    return S3Storage(bucket, "/runs/a/", endpoint_url=s3_server.endpoint_url)


def test_layout_is_determined_s_plus_a_manifest_written_last(
    s3_server: S3Server, bucket: str, storage: S3Storage
) -> None:
    with storage.store_path("c1") as path:
        (path / "state").mkdir()
        (path / "state" / "w.bin").write_bytes(b"\1" * 7)
        (path / "metadata.json").write_text("{}")
        (path / "empty_dir").mkdir()
    assert s3_server.keys(bucket) == [
        "runs/a/c1.pedl-manifest.json",
        "runs/a/c1/metadata.json",
        "runs/a/c1/state/w.bin",
    ]
    body = s3_server.client().get_object(Bucket=bucket, Key="runs/a/c1.pedl-manifest.json")
    manifest = json.loads(body["Body"].read())
    assert manifest["files"] == {"metadata.json": 2, "state/w.bin": 7}
    assert manifest["directories"] == ["empty_dir", "state"]
    assert storage.location("c1") == f"s3://{bucket}/runs/a/c1/"


def test_objects_without_a_manifest_are_not_a_checkpoint(
    s3_server: S3Server, bucket: str, storage: S3Storage
) -> None:
    # What a process killed in the middle of its upload leaves behind.
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="runs/a/torn/metadata.json", Body=b"{}")
    client.put_object(Bucket=bucket, Key="runs/a/torn/state/w.bin", Body=b"\0" * 3)
    assert not storage.exists("torn")
    with pytest.raises(FileNotFoundError, match="no checkpoint torn"), storage.restore_path("torn"):
        pass
    storage.delete("torn")  # garbage collection of a torn upload removes its objects
    assert s3_server.keys(bucket) == []


def test_a_file_that_differs_from_its_manifest_is_refused(
    s3_server: S3Server, bucket: str, storage: S3Storage
) -> None:
    with storage.store_path("c2") as path:
        (path / "w.bin").write_bytes(b"\1" * 100)
        (path / "other.txt").write_text("fine")
    s3_server.client().put_object(Bucket=bucket, Key="runs/a/c2/w.bin", Body=b"\1" * 50)
    seen: list[Path] = []
    with (
        pytest.raises(OSError, match=r"w\.bin has 50 bytes, its manifest says 100"),
        storage.restore_path("c2") as path,
    ):
        seen.append(path)
    assert seen == []  # never handed out

    s3_server.client().delete_object(Bucket=bucket, Key="runs/a/c2/w.bin")
    with (
        pytest.raises(FileNotFoundError, match=r"runs/a/c2/w.bin is gone"),
        storage.restore_path("c2"),
    ):
        pass


def test_local_directories_are_removed(storage: S3Storage) -> None:
    with storage.store_path("c3") as stored:
        (stored / "f").write_text("x")
    assert not stored.exists()
    with storage.restore_path("c3") as restored:
        assert (restored / "f").read_text() == "x"
    assert not restored.exists()


def test_a_failed_upload_raises_and_leaves_nothing_locally(s3_server: S3Server) -> None:
    storage = S3Storage("no-such-bucket", endpoint_url=s3_server.endpoint_url)
    with (
        pytest.raises(Exception, match=r"NoSuchBucket|does not exist"),
        storage.store_path("c4") as path,
    ):
        (path / "f").write_text("x")
    assert not path.exists()


def test_make_storage_from_a_determined_config(s3_server: S3Server, bucket: str) -> None:
    config = s3_config(
        f"{{type: s3, bucket: {bucket}, prefix: exp7, access_key: {ACCESS_KEY}, "
        f"secret_key: {SECRET_KEY}, endpoint_url: '{s3_server.endpoint_url}'}}"
    )
    storage = make_storage(config)  # type: ignore[arg-type]
    assert isinstance(storage, S3Storage)
    with storage.store_path("c5") as path:
        (path / "f").write_text("x")
    assert s3_server.keys(bucket) == ["exp7/c5.pedl-manifest.json", "exp7/c5/f"]


def test_without_boto3_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    config = s3_config("{type: s3, bucket: b}")
    assert storage_unavailable_reason(config) is None  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if it were not installed
    reason = storage_unavailable_reason(config)  # type: ignore[arg-type]
    assert reason is not None and "pip install 'pedl[s3]'" in reason
    with pytest.raises(UnsupportedStorageError, match=r"needs boto3.*pip install 'pedl\[s3\]'"):
        make_storage(config)  # type: ignore[arg-type]
    assert storage_unavailable_reason(s3_config("{type: shared_fs, host_path: /x}")) is None  # type: ignore[arg-type]


def test_without_boto3_a_local_run_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    config = tmp_path / "config.yaml"
    config.write_text(
        "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
        "checkpoint_storage: {type: s3, bucket: b}\n"
    )
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model_def.py").write_text("")
    with pytest.raises(ConfigError, match=r"checkpoint_storage\.type.*pip install 'pedl\[s3\]'"):
        LocalExperiment.create(config, tmp_path / "model", tmp_path / "runs")
    assert list((tmp_path / "runs").iterdir()) == []
