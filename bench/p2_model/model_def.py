"""P2 model definition: the master tests' tiny trial, timestamped.

Records ``time.time()`` at points of the trial process's start-up and, after the first batch,
writes them with the probe's import times (``bench/p2_site/sitecustomize.py``) as JSON to
``$PEDL_P2_OUT/<trial id>.json``.
"""

import time

TIMES: dict[str, float] = {"model_module:start": time.time()}

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402

from pedl.keras import TFKerasTrial  # noqa: E402

TIMES["model_module:end"] = time.time()


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


def write_times() -> None:
    probe = sys.modules.get("sitecustomize")
    times = {**getattr(probe, "TIMES", {}), **TIMES}
    out = Path(os.environ["PEDL_P2_OUT"]) / f"{os.environ['PEDL_TRIAL_ID']}.json"
    out.write_text(json.dumps(times))


class Stamps(keras.callbacks.Callback):
    def on_train_begin(self, logs: Any = None) -> None:
        TIMES.setdefault("fit:on_train_begin", time.time())

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        TIMES.setdefault("first_batch:begin", time.time())

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if "first_batch:end" not in TIMES:
            TIMES["first_batch:end"] = time.time()
            write_times()


class TinyTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        TIMES["build_model:start"] = time.time()
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        lr = float(self.context.get_hparam("lr"))
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(lr)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        TIMES["build_model:end"] = time.time()
        return model

    def build_training_data_loader(self) -> Any:
        TIMES["train_data:start"] = time.time()
        data = blobs(96, 0)
        TIMES["train_data:end"] = time.time()
        return data

    def build_validation_data_loader(self) -> Any:
        TIMES["validation_data:start"] = time.time()
        data = blobs(32, 1)
        TIMES["validation_data:end"] = time.time()
        return data

    def keras_callbacks(self) -> list[Any]:
        return [Stamps()]
