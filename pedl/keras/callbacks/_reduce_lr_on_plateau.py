"""ReduceLROnPlateau that checks after each validation and survives pauses."""

from __future__ import annotations

from pedl.keras._keras import keras
from pedl.keras.callbacks._after_validation import AfterValidation


class ReduceLROnPlateau(AfterValidation, keras.callbacks.ReduceLROnPlateau):
    """``keras.callbacks.ReduceLROnPlateau``, checked after every validation (``on_test_end``).

    The learning rate itself lives in the optimizer and is checkpointed with it; this
    callback's counters are checkpointed through ``get_state``.
    """

    state_fields = ("wait", "best", "cooldown_counter")
