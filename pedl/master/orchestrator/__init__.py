"""The master's shell around the engine: runs each experiment's driver, schedules trials onto
slots, starts and stops their processes through a resource manager, and acts on
pause/activate/cancel/kill.
"""

from pedl.master.orchestrator._log_writer import TrialLogWriter
from pedl.master.orchestrator._orchestrator import Orchestrator, disk_full_reason

__all__ = ["Orchestrator", "TrialLogWriter", "disk_full_reason"]
