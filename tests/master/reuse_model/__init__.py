"""The tiny model of the warm-worker tests (``tests/master/test_worker_reuse.py``).

The hyperparameter ``mode`` says what a trial does besides training: ``mutate`` changes this
module's global ``MUTATED_BY``, the submodule ``state``, an environment variable and
``sys.path``; ``raise`` fails in ``build_model``; ``sigkill`` SIGKILLs its own process after its
first batch; other modes only train. Every trial first writes what it found of that state, its
pid and its start time to ``$PEDL_TEST_RECORDS/<trial id>.json``, and prints a line naming
itself to stdout and stderr.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial

from . import state

MUTATED_BY: int | None = None
LEAK_VARIABLE = "PEDL_TEST_LEAKED"
LEAK_PATH = "/pedl-test-leaked-path"


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class KillAfterFirstBatch(keras.callbacks.Callback):
    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


class ReuseTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        global MUTATED_BY
        trial_id = self.context.get_trial_id()
        mode = self.context.get_hparam("mode")
        record = {
            "trial_id": trial_id,
            "mode": mode,
            "pid": os.getpid(),
            "started": time.time(),
            "found": {
                "global": MUTATED_BY,
                "submodule": list(state.SEEN),
                "variable": os.environ.get(LEAK_VARIABLE),
                "path": LEAK_PATH in sys.path,
            },
        }
        Path(os.environ["PEDL_TEST_RECORDS"], f"{trial_id}.json").write_text(json.dumps(record))
        print(f"output of trial {trial_id}", flush=True)
        print(f"errors of trial {trial_id}", file=sys.stderr, flush=True)
        if mode == "mutate":
            MUTATED_BY = trial_id
            state.SEEN.append(trial_id)
            os.environ[LEAK_VARIABLE] = str(trial_id)
            sys.path.append(LEAK_PATH)
        if mode == "raise":
            raise RuntimeError("build_model failed on purpose")
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dropout(0.2),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.05)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return blobs(96, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(32, 1)

    def keras_callbacks(self) -> list[Any]:
        return [KillAfterFirstBatch()] if self.context.get_hparam("mode") == "sigkill" else []
