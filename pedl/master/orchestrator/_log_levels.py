"""A trial's output line's level, read from its text (the trial's processes write plain text:
the master stores what its logging, absl's or TensorFlow's prefix says)."""

from __future__ import annotations

import re

_NAMES = "TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_STAMP = r"\d{4}-\d\d-\d\d[ T][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?"
_WORD = re.compile(
    # PEDL's trial processes: "2026-11-29 08:00:00,123 INFO name: text"; Python's default
    # "WARNING:tensorflow:text"; "[ERROR] text", "ERROR text".
    rf"^(?:{_STAMP}\s+)?\[?(?P<level>{_NAMES})\]?(?=[:\s])"
)
_LETTER = re.compile(
    # absl and glog: "W1129 08:00:00.123456 140 file.py:12] text"; TensorFlow's C++:
    # "2026-11-29 08:00:00.123456: W tensorflow/core/...".
    r"^(?:(?P<absl>[DIWEF])\d{4} \d\d:\d\d:\d\d"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: (?P<tf>[DIWEF]) )"
)
_RANK = re.compile(r"^\[rank=\d+\] ")  # determined.launch.wrap_rank's prefix
_SPELLED = {"WARN": "WARNING", "FATAL": "CRITICAL"}
_LETTERS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


def level_of(message: str) -> str | None:
    """The level a line's prefix names, as Determined names levels (``WARN`` is
    ``WARNING``, ``FATAL`` and absl's ``F`` ``CRITICAL``); None when it names none (a
    ``print``, a progress bar: such lines count as INFO when filtered)."""
    message = _RANK.sub("", message, count=1)
    word = _WORD.match(message)
    if word is not None:
        level = word.group("level")
        return _SPELLED.get(level, level)
    letter = _LETTER.match(message)
    if letter is not None:
        return _LETTERS[letter.group("absl") or letter.group("tf")]
    return None
