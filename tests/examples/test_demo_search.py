"""``make demo``'s search shows what a search is: every hyperparameter it declares as a range
or a choice, a categorical one included, draws more than one value over its trials."""

from __future__ import annotations

import re
from pathlib import Path

from pedl.config import flatten_hparams, load_config
from pedl.searcher import make_search_method
from tests.searcher.searcher_sim import simulate

ROOT = Path(__file__).resolve().parents[2]


def _demo_config() -> Path:
    """The config scripts/demo.sh submits."""
    script = (ROOT / "scripts" / "demo.sh").read_text()
    found = re.search(r"experiment create (\S+\.yaml) ", script)
    assert found is not None, "scripts/demo.sh submits no experiment config"
    return ROOT / found.group(1)


def test_the_demo_search_varies_every_drawn_hyperparameter() -> None:
    config = load_config(_demo_config())
    drawn = [
        flatten_hparams(create.hparams) for create in simulate(make_search_method(config)).creates
    ]
    assert len(drawn) == config.searcher.max_trials  # type: ignore[union-attr]
    space = config.model_dump(mode="json")["hyperparameters"]
    varying = [name for name, spec in space.items() if spec.get("type") != "const"]
    kinds = {space[name]["type"] for name in varying}
    assert "categorical" in kinds, kinds
    for name in varying:
        values = {repr(trial[name]) for trial in drawn}
        assert len(values) > 1, f"every demo trial drew {name}={values.pop()}"
