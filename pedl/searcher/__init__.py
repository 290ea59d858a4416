"""Search methods: hyperparameter-search logic (events in, operations out), with Determined's
interface (:class:`SearchMethod`, :class:`SearcherState`, the operations), and the runner
that drives one behind an event log."""

from pedl._pareto import (
    dominates,
    front_ranks,
    hypervolume,
    hypervolume_contributions,
    non_dominated_sort,
    pareto_front,
    pareto_order,
    reference_point,
)
from pedl.searcher._adaptive_asha import AdaptiveASHASearch, plan_brackets
from pedl.searcher._asha import ASHABracket, AsyncHalvingSearch, HalvingSearch, rung_lengths
from pedl.searcher._bayes import gp_from_config, missing_optuna_requirements, tpe_from_config
from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._factory import RUNNABLE_SEARCHERS, make_search_method, unavailable_reason
from pedl.searcher._grid import GridSearch
from pedl.searcher._operations import (
    Close,
    Create,
    Operation,
    Progress,
    Shutdown,
    TrialCheckpoint,
    ValidateAfter,
    operation_from_dict,
    operation_to_dict,
)
from pedl.searcher._pbt import PBTMember, PBTSearch
from pedl.searcher._pbt_explore import explore_hparams
from pedl.searcher._random import RandomSearch
from pedl.searcher._remote import CustomSearcherError, RemoteSearchMethod
from pedl.searcher._runner import (
    CloseTrial,
    EventSink,
    NewTrial,
    SearcherRunner,
    TrainTrial,
    TrialOperation,
    trial_seed_for,
)
from pedl.searcher._search_method import JSONStateSearchMethod, SearcherState, SearchMethod
from pedl.searcher._single import SingleSearch
from pedl.searcher._trial_pool import MAX_INVALID_REPLACEMENTS, TrialPoolSearch

__all__ = [
    "MAX_INVALID_REPLACEMENTS",
    "RUNNABLE_SEARCHERS",
    "ASHABracket",
    "AdaptiveASHASearch",
    "AsyncHalvingSearch",
    "Close",
    "CloseTrial",
    "Create",
    "CustomSearcherError",
    "EventSink",
    "ExitedReason",
    "GridSearch",
    "HalvingSearch",
    "JSONStateSearchMethod",
    "NewTrial",
    "Operation",
    "PBTMember",
    "PBTSearch",
    "Progress",
    "RandomSearch",
    "RemoteSearchMethod",
    "SearchMethod",
    "SearcherError",
    "SearcherRunner",
    "SearcherState",
    "Shutdown",
    "SingleSearch",
    "TrainTrial",
    "TrialCheckpoint",
    "TrialOperation",
    "TrialPoolSearch",
    "ValidateAfter",
    "dominates",
    "explore_hparams",
    "front_ranks",
    "gp_from_config",
    "hypervolume",
    "hypervolume_contributions",
    "make_search_method",
    "missing_optuna_requirements",
    "non_dominated_sort",
    "operation_from_dict",
    "operation_to_dict",
    "pareto_front",
    "pareto_order",
    "plan_brackets",
    "reference_point",
    "rung_lengths",
    "tpe_from_config",
    "trial_seed_for",
    "unavailable_reason",
]
