"""``TensorBoard(core_context, ...)``: Determined 0.38's TensorBoard callback for scripts."""

from __future__ import annotations

from typing import Any

from pedl import core
from pedl.keras.callbacks import TensorBoard as KerasTensorBoard


class TensorBoard(KerasTensorBoard):
    """Keras' TensorBoard callback for a script's ``fit`` (``determined.keras.TensorBoard``
    in Determined 0.38): the other arguments are Keras'. In a PEDL trial the events go to
    the trial's TensorBoard directory (``pedl tensorboard`` serves them) and the batch counter
    survives pauses; ``log_dir`` (keyword, or the first positional argument after the core
    context, as in 0.38) is ignored."""

    def __init__(self, core_context: core.Context, *args: Any, **kwargs: Any) -> None:
        if not isinstance(core_context, core.Context):
            raise TypeError(
                "TensorBoard needs the core context that `with pedl.core.init() as "
                f"core_context:` yields, got {type(core_context).__name__}"
            )
        if args:
            args = args[1:]  # 0.38's TensorBoard(core_context, log_dir, ...): log_dir ignored
        super().__init__(*args, **kwargs)
        self.core_context = core_context
