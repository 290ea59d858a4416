"""Searchers: pure hyperparameter-search logic (events in, operations out, JSON state)."""

from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._factory import make_search_method
from pedl.searcher._grid import GridSearch
from pedl.searcher._operations import (
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
    operation_from_dict,
    operation_to_dict,
)
from pedl.searcher._random import RandomSearch
from pedl.searcher._runner import EventSink, SearcherRunner
from pedl.searcher._search_method import SearchMethod
from pedl.searcher._single import SingleSearch
from pedl.searcher._trial_pool import MAX_INVALID_REPLACEMENTS, TrialPoolSearch

__all__ = [
    "MAX_INVALID_REPLACEMENTS",
    "Close",
    "Create",
    "EventSink",
    "ExitedReason",
    "GridSearch",
    "Operation",
    "RandomSearch",
    "SearchMethod",
    "SearcherError",
    "SearcherRunner",
    "Shutdown",
    "SingleSearch",
    "TrialPoolSearch",
    "ValidateAfter",
    "make_search_method",
    "operation_from_dict",
    "operation_to_dict",
]
