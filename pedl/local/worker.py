"""``python -m pedl.local.worker``: a worker (rank 1..N-1) of a local run's multi-worker
trial (see :mod:`pedl.local._worker`)."""

from pedl.local._worker import main

if __name__ == "__main__":
    main()
