"""TensorBoard event files carried through checkpoint storage (shared_fs here; the snapshots
use only the storage contract the contract suite checks on every backend): whatever the
appends, uploads, restarts and downloads in between, the master's copy ends up equal to the
trial's directory."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.storage import SharedFSStorage
from pedl.storage._event_files import (
    EventFileDownloader,
    EventFileUploader,
    first_free_snapshot,
    snapshot_id,
)

FILES = ["events.out.tfevents.1.host", "train/events.out.tfevents.2.host", "validation/e.v2"]

step = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(FILES), st.binary(min_size=1, max_size=300)),
    st.tuples(st.just("upload")),
    st.tuples(st.just("restart")),
    st.tuples(st.just("download")),
)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@settings(max_examples=60)
@given(st.lists(step, max_size=25))
def test_the_copy_equals_the_directory(steps: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        storage = SharedFSStorage(root / "storage")
        trial_dir, copy = root / "trial", root / "copy"
        uploader = EventFileUploader(storage, 7, trial_dir)
        downloader = EventFileDownloader(storage, 7, copy)
        for action, *args in steps:
            if action == "append":
                name, data = args
                path = trial_dir / str(name)
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("ab") as out:
                    out.write(bytes(data))  # type: ignore[call-overload]
            elif action == "upload":
                uploader.upload()
            elif action == "restart":  # a new attempt: nothing known as sent
                uploader = EventFileUploader(storage, 7, trial_dir)
            else:
                downloader.download()
        uploader.upload()
        downloader.download()
        assert _tree(copy) == _tree(trial_dir)
        assert uploader.upload() == 0  # nothing new: no snapshot


@given(st.integers(min_value=0, max_value=70))
@settings(max_examples=30)
def test_first_free_snapshot(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        storage = SharedFSStorage(tmp)
        for index in range(count):
            with storage.store_path(snapshot_id(3, index)):
                pass
        assert first_free_snapshot(storage, 3) == count
        assert first_free_snapshot(storage, 4) == 0


def test_a_snapshot_cannot_write_outside_the_copy(tmp_path: Path) -> None:
    storage = SharedFSStorage(tmp_path / "storage")
    for index, name in enumerate(["../../escape", "/tmp/escape", "ok"]):
        with storage.store_path(snapshot_id(1, index)) as target:
            (target / "data").mkdir()
            (target / "data" / "ok").write_bytes(b"fine")
            (target / "pedl-tensorboard.json").write_text(json.dumps({"files": {name: 0}}))
    downloader = EventFileDownloader(storage, 1, tmp_path / "copy")
    assert downloader.download() == 3  # the bad ones skipped, the good one applied
    assert _tree(tmp_path / "copy") == {"ok": b"fine"}
    assert not (tmp_path / "escape").exists()
