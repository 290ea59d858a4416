"""The trial process's TensorBoard event files, uploaded while it trains.

The chief's TensorBoard directory (``<work dir>/tensorboard``: where the user's
``TensorBoard`` callbacks and ``core_context.train.get_tensorboard_path()`` write) is
uploaded to the trial's checkpoint storage every :data:`UPLOAD_INTERVAL_S` seconds by a
background thread, and once more when the attempt ends, as snapshots of what was appended
(:class:`pedl.storage.EventFileUploader`), from which the master's TensorBoards fetch it. A
failed upload is logged and tried again at the next interval; it never fails the trial.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from types import TracebackType

from pedl.storage import EventFileUploader, StorageManager

logger = logging.getLogger("pedl.exec")

UPLOAD_INTERVAL_S = 10.0


class EventUploads:
    """A context manager: uploads ``directory`` in the background while inside, and once
    more on leaving."""

    def __init__(
        self,
        storage: StorageManager,
        trial_id: int,
        directory: Path,
        interval: float = UPLOAD_INTERVAL_S,
    ) -> None:
        self.uploader = EventFileUploader(storage, trial_id, directory)
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pedl-event-uploads", daemon=True)
        self._lock = threading.Lock()

    def __enter__(self) -> EventUploads:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.upload()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.upload()

    def upload(self) -> None:
        with self._lock:
            try:
                self.uploader.upload()
            except Exception as err:
                logger.warning("TensorBoard files not uploaded (tried again later): %s", err)
