"""P8: the pause when a trial's leftover input iterator is freed, with and without tf.data's
autotuning.

A trial's ``fit`` stops mid-pass; Keras keeps the iterator in a reference cycle, so it is freed
by a later collection: a warm worker's clean-up between trials, a local search's next trial,
the process's exit. With autotuning on, that collection waits for the iterator's autotune
thread. This benchmark trains a small model through PEDL's own array pipeline
(``ArrayData.fit_input``) with Keras's ``fit``, stops it after 5 batches, waits a while
beside ``--busy`` busy processes, and times the ``gc.collect()`` that frees the iterator; the
peer is the pipeline as PEDL built it before (``prefetch(AUTOTUNE)``, autotuning on); the same
for a Keras ``PyDataset`` read in the training thread (``sequence``: Keras's pipeline of it
without autotuning; ``sequence-before``: the ``PyDataset`` given to ``fit``, as before). How long
the collection waits depends on where the wait falls in the autotune thread's optimization
period, so each round measures several waits (``--ages``), every variant at every one, all
at the same time in fresh processes::

    .venv/bin/python bench/p8_leftover_iterator.py --rounds 2 --ages 30,50,70,90 --busy 3

Prints one JSON line per variant, wait and round (``collect_s``), with the load average and
the machine (``bench/_env.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _env

VARIANTS = ("pedl", "before", "sequence", "sequence-before")


def measure(variant: str, age: float) -> dict[str, float]:
    """In this process: train, stop mid-pass, wait ``age`` s, time the collection."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    from pedl.keras import _data

    if variant == "before":  # the pipeline as PEDL built it before: autotuned prefetching
        _data._AHEAD = tf.data.AUTOTUNE
        _data._without_autotune = tf.data.Options
    gc.disable()
    rng = np.random.default_rng(0)
    x = rng.random((2000, 8), dtype=np.float32)
    y = rng.random((2000, 1), dtype=np.float32)
    data: _data.TrainingData
    if variant.startswith("sequence"):

        class Batches(keras.utils.PyDataset):
            def __len__(self) -> int:
                return len(x) // 10

            def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
                return x[i * 10 : (i + 1) * 10], y[i * 10 : (i + 1) * 10]

        data = _data.SequenceData(_data.SequenceAdapter(Batches()), shuffle=True, seed=1)
        dataset = data.fit_input(0)
        if variant == "sequence-before":  # the Sequence itself, as PEDL gave it to fit before
            dataset = data._fit_inputs[-1]
    else:
        data = _data.ArrayData(x, y, None, batch_size=10, shuffle=True, seed=1)
        dataset = data.fit_input(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile("sgd", "mse")

    class Stop(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            if batch >= 4:
                self.model.stop_training = True

    model.fit(dataset, epochs=1, steps_per_epoch=10**6, callbacks=[Stop()], verbose=0)
    data.close()  # as the controller does when fit returns
    time.sleep(age)
    start = time.perf_counter()
    collected = gc.collect()
    return {"collect_s": time.perf_counter() - start, "collected": collected}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ages", default="30,50,70,90", help="seconds from fit to collect")
    parser.add_argument("--age", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--busy", type=int, default=3, help="busy processes beside them")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.variant, args.age)))
        return
    for round_ in range(args.rounds):
        busy = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)
        ]
        try:
            before = _env.load_average()
            runs = {
                (v, age): subprocess.Popen(
                    [sys.executable, __file__, "--variant", v, "--age", age],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for age in args.ages.split(",")
                for v in VARIANTS
            }
            outputs = {key: p.communicate()[0] for key, p in runs.items()}
            after = _env.load_average()
        finally:
            for p in busy:
                p.kill()
                p.wait()
        for (variant, age), output in outputs.items():
            row = json.loads(output.strip().splitlines()[-1])
            _env.emit(
                {
                    "bench": "p8_leftover_iterator",
                    "variant": variant,
                    "round": round_,
                    "age_s": float(age),
                    "busy": args.busy,
                    **row,
                    "loadavg_before": before,
                    "loadavg_after": after,
                    "machine": _env.machine(),
                },
                args.out,
            )


if __name__ == "__main__":
    main()
