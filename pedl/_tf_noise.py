"""Telling TensorFlow's C++ start-up chatter from a trial's own output.

Its own module below local mode and the master, which both filter a trial's lines with it
(the master's resource managers drop the chatter, a local run sends it to the run's log file),
so that neither imports the other for it. Standard library only.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""A terminal escape sequence (colours, cursor moves), stripped from a trial's output lines."""

_TF_NOISE = re.compile(
    "|".join(
        [
            # absl's info and warning lines (``I0000 00:00:1795436155.711112  9806 port.cc:153]
            # ...``), which TensorFlow's C++ start-up writes before TF_CPP_MIN_LOG_LEVEL applies
            r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ",
            # the same in TensorFlow's older format
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+:\d+\] ",
            r"^WARNING: All log messages before absl::InitializeLog\(\) is called",
            r"oneDNN custom operations are on",
            r"This TensorFlow binary is optimized to use available CPU instructions",
            r"^To enable the following instructions: .* rebuild TensorFlow",
            r"Unable to register cu(DNN|FFT|BLAS) factory",
            r"computation placer already registered",
        ]
    )
)


def is_tf_noise(line: str) -> bool:
    """Whether a line of a trial's output is TensorFlow's C++ start-up chatter (absl info and
    warning lines, oneDNN and CPU-instruction notices, duplicate CUDA plugin registrations),
    which is dropped before it reaches the trial's logs."""
    return _TF_NOISE.search(line) is not None
