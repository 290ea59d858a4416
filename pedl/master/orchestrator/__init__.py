"""The master's engine: runs each experiment's searcher, schedules trials onto slots, starts
and stops their processes through a resource manager, and acts on pause/activate/cancel/kill.
"""

from pedl.master.orchestrator._experiment import ExperimentActor, OperationAnswer
from pedl.master.orchestrator._log_writer import TrialLogWriter
from pedl.master.orchestrator._orchestrator import Orchestrator

__all__ = ["ExperimentActor", "OperationAnswer", "Orchestrator", "TrialLogWriter"]
