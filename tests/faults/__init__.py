"""Fault injection: real SIGKILLs of trial processes at seeded random batches and while a
checkpoint is being written (``test_trial_sigkill``); a trial SIGKILLed while it uploads a
checkpoint to S3, a moto server behind a proxy (``test_s3_upload_kill``); a trial that trains
on while the master is unreachable behind a TCP proxy gone dark, then catches up
(``test_master_unreachable``); a checkpoint storage (a small tmpfs) that fills up while a
checkpoint is written (``test_full_disk``).

The master-side faults are tested beside the master's other end-to-end tests, on the same
fixtures and references: the master SIGKILLed at seeded random moments of a random search
(``tests/master/test_orchestration.py``), in the middle of an ASHA rung
(``test_asha_e2e.py``), a TPE search (``test_tpe_e2e.py``) and a custom searcher's
(``test_custom_searcher_e2e.py``); a trial's reports across a master stopped and restarted
(``test_backpressure.py``).
"""
