"""The model of the trial-user test: a tiny Keras trial whose ``build_model`` reports, in one
line of its log (``PROBE {json}``), who it runs as and what of the master's it can reach.

Driven by its experiment's environment variables:

- ``PROBE_PATHS``: a JSON mapping ``{"name": path}`` of the master's files and directories the
  trial tries to read (a directory: to list);
- ``PROBE_STORAGE``: its checkpoint storage directory, which it tries to list;
- ``PROBE_CHANNEL``: a directory of the trial user's where the first run leaves a marker
  before it SIGKILLs itself after its 7th batch (after its first checkpoint), so that the
  next run resumes from that checkpoint; that run tries to change the checkpoint it restored
  from (append to its ``metadata.json``, rename it), which the master sealed.
"""

import gc
import json
import os
import pwd
import signal
import stat
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial


def attempt(action: Any) -> str:
    """``"ok"``, or the name of the exception ``action()`` raised."""
    try:
        action()
    except Exception as err:  # the test reads the name
        return type(err).__name__
    return "ok"


def touch(path: Path) -> None:
    if path.is_dir():
        os.listdir(path)
    else:
        with open(path, "rb") as file:
            file.read(1)


def restored_from() -> str | None:
    """The checkpoint this run resumed from (the trial's start information)."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "TrialInfo" and hasattr(obj, "latest_checkpoint"):
            return obj.latest_checkpoint
    return None


def owner(path: str) -> int:
    return os.stat(path).st_uid


class KillOnce(keras.callbacks.Callback):
    """SIGKILL the process after its 7th batch (the checkpoint after batch 5 is stored), once."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches += 1
        marker = Path(os.environ["PROBE_CHANNEL"]) / "killed"
        if self.batches == 7 and not marker.exists():
            marker.write_text("killed after the first checkpoint")
            os.kill(os.getpid(), signal.SIGKILL)


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class ProbeTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        storage = Path(os.environ["PROBE_STORAGE"])
        report: dict[str, Any] = {
            "uid": os.getuid(),
            "euid": os.geteuid(),
            "user": pwd.getpwuid(os.getuid()).pw_name,
            "gid": os.getgid(),
            "groups": os.getgroups(),
            "home": os.environ["HOME"],
            "home_owner": owner(os.environ["HOME"]),
            "tmpdir": os.environ["TMPDIR"],
            "tmpdir_owner": owner(os.environ["TMPDIR"]),
            "tmpdir_mode": stat.S_IMODE(os.stat(os.environ["TMPDIR"]).st_mode),
            "reads": {
                name: attempt(lambda p=Path(path): touch(p))
                for name, path in json.loads(os.environ["PROBE_PATHS"]).items()
            },
            "list_storage": attempt(lambda: os.listdir(storage)),
            "restored_from": restored_from(),
        }
        if report["restored_from"]:
            sealed = storage / report["restored_from"]
            report["change_restored"] = attempt(lambda: open(sealed / "metadata.json", "a").close())
            report["rename_restored"] = attempt(lambda: sealed.rename(storage / "stolen"))
        print("PROBE " + json.dumps(report), flush=True)
        model = self.context.wrap_model(
            keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.SGD(0.1)),
            loss="sparse_categorical_crossentropy",
        )
        return model

    def build_training_data_loader(self) -> Any:
        return blobs(32, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(16, 1)

    def keras_callbacks(self) -> list[Any]:
        return [KillOnce()]
