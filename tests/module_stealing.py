"""pytest-xdist's work stealing (``--dist worksteal``) that splits the queue at a test module's
edge where it can.

Work stealing hands each worker a contiguous run of the collection, then moves the back half
of the longest queue to a worker that runs dry. Where that cut falls inside a module, both
workers run the module's module-scoped fixtures: many of ours start a master and train a
reference search first (30-120 s each on CI's machine), so a cut there costs that much CPU
again. This scheduler moves each cut to the module edge nearest to it; a queue that is one
module only is still cut where xdist cuts it (a worker left idle would cost more).
"""

from __future__ import annotations

from xdist.scheduler import WorkStealingScheduling
from xdist.scheduler.worksteal import MIN_PENDING
from xdist.workermanage import WorkerController


def module_edge(modules: list[str], cut: int, low: int, high: int) -> int:
    """The index in ``[low, high]`` nearest ``cut`` where a new module starts in ``modules``
    (``modules[i - 1] != modules[i]``); ``cut`` where there is none."""
    edges = [
        i
        for i in range(max(low, 1), min(high, len(modules) - 1) + 1)
        if modules[i - 1] != modules[i]
    ]
    return min(edges, key=lambda i: (abs(i - cut), i)) if edges else cut


class ModuleStealing(WorkStealingScheduling):
    """:class:`xdist.scheduler.WorkStealingScheduling` with its cuts at module edges."""

    def _modules(self, indices: list[int]) -> list[str]:
        assert self.collection is not None
        return [self.collection[i].split("::", 1)[0] for i in indices]

    def _send_tests(self, node: WorkerController, num: int) -> None:
        if 0 < num < len(self.pending):
            num = module_edge(self._modules(self.pending), num, 1, len(self.pending) - 1)
        super()._send_tests(node, num)

    def check_schedule(self) -> None:
        """xdist's own, with the steal's cut moved (the ``stolen`` line)."""
        nodes_up = [
            (node, pending) for node, pending in self.node2pending.items() if not node.shutting_down
        ]

        def idle_nodes() -> list[WorkerController]:
            return [node for node, pending in nodes_up if len(pending) < MIN_PENDING]

        if not idle_nodes():
            return
        if self.pending:
            idle = idle_nodes()
            for i, node in enumerate(idle):
                self._send_tests(node, len(self.pending) // (len(idle) - i))
            if not idle_nodes():
                return
        if self.steal_requested_from_node is not None:
            return
        if not nodes_up:
            return
        victim, queue = max(nodes_up, key=lambda node_pending: len(node_pending[1]))
        most = max(0, len(queue) - MIN_PENDING)
        steal = min(len(queue) // 2, most)
        if steal == 0:
            for node in idle_nodes():
                node.shutdown()
            return
        # The cut is at len(queue) - steal; it may move to a module edge it keeps MIN_PENDING
        # tests before.
        cut = module_edge(self._modules(queue), len(queue) - steal, MIN_PENDING, len(queue) - 1)
        stolen = queue[cut:]
        victim.send_steal(stolen)
        self.steal_requested_from_node = victim
