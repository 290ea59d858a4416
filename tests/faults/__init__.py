"""Fault injection: real SIGKILLs of trial processes at seeded random batches and while a
checkpoint is being written (``test_trial_sigkill``).

The master-side faults are tested beside the master's other end-to-end tests, on the same
fixtures: the master SIGKILLed in the middle of a random/grid search
(``tests/master/test_orchestration.py``), an ASHA search (``test_asha_e2e.py``), a TPE search
(``test_tpe_e2e.py``) and a custom searcher's (``test_custom_searcher_e2e.py``); a trial's
reports across a master stopped and restarted (``test_backpressure.py``).
"""
