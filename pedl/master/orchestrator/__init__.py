"""The master's shell around the engine: runs each experiment's driver, schedules trials onto
slots, starts and stops their processes through a resource manager, and acts on
pause/activate/cancel/kill, and on its one agent's and slots' being disabled or enabled.
"""

from pedl.master.orchestrator._log_writer import TrialLogWriter
from pedl.master.orchestrator._orchestrator import Orchestrator, disk_full_reason
from pedl.master.orchestrator._slots import AGENT_ID, SlotState

__all__ = ["AGENT_ID", "Orchestrator", "SlotState", "TrialLogWriter", "disk_full_reason"]
