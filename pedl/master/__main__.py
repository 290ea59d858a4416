"""``python -m pedl.master``: run a master with settings from ``PEDL_*`` variables."""

from pedl.master import MasterSettings, serve

serve(MasterSettings())
