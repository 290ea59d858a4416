"""Rank information and small collective operations between the workers of one trial."""

from __future__ import annotations

from typing import Any


class DistributedContext:
    """Who this worker is within its trial, and gather / allgather / broadcast between workers.

    The collective methods are for coordinating the workers (agreeing on a path, sharing a
    small result), not a replacement for the training framework's own collectives. This class
    is the single-process implementation (``size == 1``), where every collective is the
    identity; the multi-worker implementation subclasses it and overrides ``_gather`` and
    ``_broadcast`` (and their ``_local`` forms).
    """

    def __init__(
        self,
        *,
        rank: int = 0,
        size: int = 1,
        local_rank: int = 0,
        local_size: int = 1,
        cross_rank: int = 0,
        cross_size: int = 1,
        chief_ip: str | None = None,
    ) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"rank must be in [0, size): rank={rank}, size={size}")
        if not 0 <= local_rank < local_size:
            raise ValueError(
                f"local_rank must be in [0, local_size): local_rank={local_rank}, "
                f"local_size={local_size}"
            )
        if not 0 <= cross_rank < cross_size:
            raise ValueError(
                f"cross_rank must be in [0, cross_size): cross_rank={cross_rank}, "
                f"cross_size={cross_size}"
            )
        if cross_size > 1 and not chief_ip:
            raise ValueError("chief_ip is required when the trial spans several machines")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self.chief_ip = chief_ip

    @classmethod
    def single(cls) -> DistributedContext:
        """The context of a trial that runs in one process."""
        return cls()

    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return self.size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def get_num_agents(self) -> int:
        return self.cross_size

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def gather(self, stuff: Any) -> list[Any] | None:
        """The chief gets a list of every worker's ``stuff`` (in rank order); others get None."""
        return self._gather(stuff, local=False)

    def gather_local(self, stuff: Any) -> list[Any] | None:
        """Like gather, to the chief of this machine."""
        return self._gather(stuff, local=True)

    def allgather(self, stuff: Any) -> list[Any]:
        """Every worker gets the list of every worker's ``stuff``, in rank order."""
        gathered = self.gather(stuff)
        result: list[Any] = self.broadcast(gathered)
        return result

    def allgather_local(self, stuff: Any) -> list[Any]:
        gathered = self.gather_local(stuff)
        result: list[Any] = self.broadcast_local(gathered)
        return result

    def broadcast(self, stuff: Any) -> Any:
        """Every worker gets the chief's ``stuff``."""
        return self._broadcast(stuff, local=False)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """Every worker gets the local chief's ``stuff``."""
        return self._broadcast(stuff, local=True)

    def _gather(self, stuff: Any, *, local: bool) -> list[Any] | None:
        return [stuff]

    def _broadcast(self, stuff: Any, *, local: bool) -> Any:
        return stuff
