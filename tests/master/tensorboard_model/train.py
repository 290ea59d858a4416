"""A framework-free trial for the TensorBoard tests (no TensorFlow): reports training metric
``x`` (= the step) and validation metric ``score`` every step, and writes its own scalar
``user/y`` (10 x the step) to an event file in its TensorBoard directory (``custom/``), as
a user's TensorBoard callback would; it ends after ``--steps`` steps, or, with ``--until
FILE``, once FILE exists (so a test decides when a running trial stops). ``--delay`` seconds
between steps."""

import argparse
import pathlib
import time

import pedl.core
from pedl.master.tensorboard import ScalarEventFile

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--until", default="")
parser.add_argument("--delay", type=float, default=0.0)
args = parser.parse_args()

with pedl.core.init() as core_context:
    events = ScalarEventFile(pathlib.Path(core_context.info.extra["tensorboard_dir"]) / "custom")
    step = 0
    while True:
        step += 1
        core_context.train.report_training_metrics(steps_completed=step, metrics={"x": step})
        core_context.train.report_validation_metrics(
            steps_completed=step, metrics={"score": 0.5 * step}
        )
        events.append([(step, time.time(), [("user/y", 10.0 * step)])])
        if args.until and pathlib.Path(args.until).exists():
            break
        if not args.until and step >= args.steps:
            break
        time.sleep(args.delay)
