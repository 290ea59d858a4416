"""``python -m pedl.exec.trial``: run the trial named by ``PEDL_TRIAL_ID`` for the master at
``PEDL_MASTER_URL`` (started by a resource manager; see :func:`pedl.exec.run_trial`)."""

from pedl.exec import run_trial

if __name__ == "__main__":
    raise SystemExit(run_trial())
