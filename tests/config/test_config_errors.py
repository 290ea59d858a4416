"""Invalid configs: every problem reported at once, each with path, line and plain words."""

from __future__ import annotations

import pytest

from pedl.config import ConfigError, ConfigIssue, parse_config

HEAD = """\
name: bad
hyperparameters:
  lr: 0.1
searcher:
  name: random
  metric: loss
  max_trials: 4
  max_length:
    batches: 100
"""
# Line numbers in HEAD: hyperparameters 2, lr 3, searcher 4, name 5, metric 6,
# max_trials 7, max_length 8, batches 9. Appended text starts at line 10.


def only_issue(text: str, overrides: tuple[str, ...] = ()) -> ConfigIssue:
    with pytest.raises(ConfigError) as info:
        parse_config(text, name="bad.yaml", overrides=overrides)
    assert len(info.value.issues) == 1, str(info.value)
    return info.value.issues[0]


CASES = [
    # (id, yaml, expected path, expected line, expected words in the message)
    (
        "unknown-top-level",
        HEAD + "max_restart: 3\n",
        "max_restart",
        10,
        "unknown field 'max_restart'; did you mean 'max_restarts'?",
    ),
    (
        "unknown-searcher-field",
        HEAD + "  max_concurent_trials: 2\n",
        "searcher.max_concurent_trials",
        10,
        "unknown field 'max_concurent_trials'; did you mean 'max_concurrent_trials'?",
    ),
    (
        "unknown-searcher-name",
        HEAD.replace("name: random", "name: randon"),
        "searcher.name",
        5,
        "must be one of single, grid, random, adaptive_asha, async_halving, tpe, nsga2, gp, pbt, "
        "custom; got 'randon'; did you mean 'random'?",
    ),
    (
        "searcher-without-name",
        HEAD.replace("  name: random\n", ""),
        "searcher.name",
        4,
        "missing required field 'name' (one of single, grid, random, adaptive_asha",
    ),
    (
        "missing-metric",
        HEAD.replace("  metric: loss\n", ""),
        "searcher.metric",
        4,
        "missing required field 'metric'",
    ),
    (
        "missing-searcher",
        "name: x\nhyperparameters: {}\n",
        "searcher",
        1,
        "missing required field 'searcher'",
    ),
    (
        "random-needs-max-trials",
        HEAD.replace("  max_trials: 4\n", ""),
        "searcher.max_trials",
        4,
        "missing required field 'max_trials'",
    ),
    (
        "max-trials-zero",
        HEAD.replace("max_trials: 4", "max_trials: 0"),
        "searcher.max_trials",
        7,
        "must be >= 1, got 0",
    ),
    (
        "max-trials-not-int",
        HEAD.replace("max_trials: 4", "max_trials: abc"),
        "searcher.max_trials",
        7,
        "expected an integer, got 'abc'",
    ),
    (
        "missing-max-length",
        HEAD.replace("  max_length:\n    batches: 100\n", ""),
        "searcher.max_length",
        4,
        "trains for the length the random searcher gives it, so PEDL needs max_length",
    ),
    (
        "max-length-zero",
        HEAD.replace("batches: 100", "batches: 0"),
        "searcher.max_length",
        8,
        "must be greater than 0, got 0 batches",
    ),
    (
        "length-two-units",
        HEAD.replace("batches: 100", "batches: 100\n    epochs: 1"),
        "searcher.max_length",
        8,
        "expected exactly one of batches, records, epochs, e.g. {batches: 100}; "
        "got batches, epochs",
    ),
    (
        "length-bad-value",
        HEAD.replace("batches: 100", "batches: many"),
        "searcher.max_length.batches",
        9,
        "expected an integer, got 'many'",
    ),
    (
        "length-bad-unit",
        HEAD.replace("batches: 100", "steps: 100"),
        "searcher.max_length",
        8,
        "unknown length unit 'steps'",
    ),
    (
        "epochs-without-records-per-epoch",
        HEAD.replace("batches: 100", "epochs: 3"),
        "searcher.max_length.epochs",
        9,
        "needs records_per_epoch > 0",
    ),
    (
        "period-epochs-without-records-per-epoch",
        HEAD + "min_checkpoint_period:\n  epochs: 1\n",
        "min_checkpoint_period.epochs",
        11,
        "needs records_per_epoch > 0",
    ),
    (
        "hp-minval-type",
        HEAD.replace("  lr: 0.1\n", "  lr:\n    type: double\n    minval: abc\n    maxval: 1\n"),
        "hyperparameters.lr.minval",
        5,
        "expected a number, got 'abc'",
    ),
    (
        "hp-int-needs-ints",
        HEAD.replace("  lr: 0.1\n", "  units:\n    type: int\n    minval: 1.5\n    maxval: 4\n"),
        "hyperparameters.units.minval",
        5,
        "expected an integer, got 1.5",
    ),
    (
        "hp-min-greater-than-max",
        HEAD.replace("  lr: 0.1\n", "  lr:\n    type: log\n    minval: -1\n    maxval: -4\n"),
        "hyperparameters.lr.maxval",
        6,
        "maxval (-4.0) must not be less than minval (-1.0)",
    ),
    (
        "hp-unknown-type",
        HEAD.replace("  lr: 0.1\n", "  lr:\n    type: float\n    minval: 0\n"),
        "hyperparameters.lr.type",
        4,
        "must be one of const, int, double, log, categorical; got 'float'",
    ),
    (
        "hp-empty-categorical",
        HEAD.replace("  lr: 0.1\n", "  opt:\n    type: categorical\n    vals: []\n"),
        "hyperparameters.opt.vals",
        5,
        "must not be empty",
    ),
    (
        "hp-count-zero-nested",
        HEAD.replace(
            "  lr: 0.1\n",
            "  optim:\n    lr:\n      type: double\n      minval: 0\n      maxval: 1\n"
            "      count: 0\n",
        ),
        "hyperparameters.optim.lr.count",
        8,
        "must be >= 1, got 0",
    ),
    (
        "hp-unknown-key",
        HEAD.replace(
            "  lr: 0.1\n", "  lr:\n    type: int\n    minval: 0\n    maxval: 3\n    cout: 3\n"
        ),
        "hyperparameters.lr.cout",
        7,
        "unknown field 'cout'; did you mean 'count'?",
    ),
    (
        "grid-needs-count",
        HEAD.replace("name: random", "name: grid")
        .replace("  max_trials: 4\n", "")
        .replace("  lr: 0.1\n", "  drop:\n    type: double\n    minval: 0\n    maxval: 1\n"),
        "hyperparameters.drop.count",
        3,
        "the grid searcher needs 'count'",
    ),
    (
        "env-var-not-key-value",
        HEAD + "environment:\n  environment_variables:\n    - A=1\n    - B=2\n    - JUSTTEXT\n",
        "environment.environment_variables[2]",
        14,
        "expected KEY=VALUE, got 'JUSTTEXT'",
    ),
    (
        "env-var-bad-name",
        HEAD + "environment:\n  environment_variables: ['1X=2']\n",
        "environment.environment_variables[0]",
        11,
        "'1X' is not a valid environment variable name",
    ),
    (
        "checkpoint-policy-literal",
        HEAD + "checkpoint_policy: bset\n",
        "checkpoint_policy",
        10,
        "must be one of best, all, none; got 'bset'; did you mean 'best'?",
    ),
    (
        "storage-unknown-type",
        HEAD + "checkpoint_storage:\n  type: azur\n",
        "checkpoint_storage.type",
        11,
        "must be one of shared_fs, directory, s3, gcs, azure; got 'azur'; did you mean 'azure'?",
    ),
    (
        "s3-needs-bucket",
        HEAD + "checkpoint_storage:\n  type: s3\n  prefix: x\n",
        "checkpoint_storage.bucket",
        10,
        "missing required field 'bucket'",
    ),
    (
        "gcs-needs-bucket",
        HEAD + "checkpoint_storage:\n  type: gcs\n  prefix: x\n",
        "checkpoint_storage.bucket",
        10,
        "missing required field 'bucket'",
    ),
    (
        "azure-needs-one-way-to-the-account",
        HEAD + "checkpoint_storage:\n  type: azure\n  container: c\n",
        "checkpoint_storage.connection_string",
        10,
        "exactly one of connection_string or account_url must be set",
    ),
    (
        "storage-path-outside-host-path",
        HEAD + "checkpoint_storage:\n  type: shared_fs\n  host_path: /a\n  storage_path: /b\n",
        "checkpoint_storage.storage_path",
        13,
        "must be relative or a subdirectory of host_path",
    ),
    (
        "priority-range",
        HEAD + "resources:\n  priority: 0\n",
        "resources.priority",
        11,
        "must be >= 1, got 0",
    ),
    (
        "bool-field",
        HEAD + "perform_initial_validation: yes please\n",
        "perform_initial_validation",
        10,
        "expected true or false, got 'yes please'",
    ),
    (
        "section-not-a-mapping",
        HEAD + "resources: 4\n",
        "resources",
        10,
        "expected a mapping, got 4",
    ),
    (
        "both-scheduling-unit-names",
        HEAD + "scheduling_unit: 10\nbatches_per_step: 20\n",
        "batches_per_step",
        11,
        "give either 'scheduling_unit' or its legacy name 'batches_per_step', not both",
    ),
    (
        "legacy-max-steps-zero",
        HEAD.replace("  max_length:\n    batches: 100\n", "  max_steps: 0\n"),
        "searcher.max_steps",
        8,
        "must be greater than 0",
    ),
    (
        "legacy-step-budget",
        HEAD + "  step_budget: 1000\n",
        "searcher.step_budget",
        10,
        "set 'max_trials'",
    ),
    (
        "removed-searcher",
        HEAD.replace("name: random", "name: adaptive_simple"),
        "searcher.name",
        5,
        "Determined's removed 'adaptive_simple' searcher (now 'adaptive_asha') is not "
        "supported; use one of single, grid, random, adaptive_asha",
    ),
    (
        # Refused for its name alone: the missing max_length is not reported too.
        "removed-searcher-name-alone",
        "searcher:\n  name: sync_halving\n  metric: m\n  max_trials: 3\n",
        "searcher.name",
        2,
        "Determined's removed 'sync_halving' searcher (now 'async_halving') is not supported",
    ),
    (
        "searcher-name-not-a-string",
        HEAD.replace("name: random", "name: 3"),
        "searcher.name",
        5,
        "must be one of single, grid, random, adaptive_asha, async_halving, tpe, nsga2, gp, "
        "pbt, custom; got 3",
    ),
    (
        "max-restarts-negative",
        HEAD + "max_restarts: -1\n",
        "max_restarts",
        10,
        "must be >= 0, got -1",
    ),
    (
        "seed-out-of-range",
        HEAD + "reproducibility:\n  experiment_seed: -1\n",
        "reproducibility.experiment_seed",
        11,
        "must be >= 0, got -1",
    ),
    (
        "duplicate-key",
        HEAD + "max_restarts: 1\nmax_restarts: 2\n",
        "max_restarts",
        11,
        "duplicate key 'max_restarts' (first given on line 10)",
    ),
]


@pytest.mark.parametrize(
    ("text", "path", "line", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_invalid_config(text: str, path: str, line: int, words: str) -> None:
    issue = only_issue(text)
    assert issue.path == path
    assert issue.line == line
    assert words in issue.message
    assert "pydantic" not in issue.message and "type=" not in issue.message


def test_the_valid_head_is_valid() -> None:
    # Every case above is HEAD plus one mistake; HEAD itself must pass.
    assert parse_config(HEAD).searcher.name == "random"


def test_all_problems_at_once_sorted_by_line() -> None:
    text = (
        HEAD.replace("max_trials: 4", "max_trials: -2").replace("  metric: loss\n", "")
        + "checkpoint_policy: never\nresources:\n  slots_per_trial: x\nwhat: 1\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text, name="many.yaml")
    err = info.value
    assert [(i.path, i.line) for i in err.issues] == [
        ("searcher.metric", 4),
        ("searcher.max_trials", 6),
        ("checkpoint_policy", 9),
        ("resources.slots_per_trial", 11),
        ("what", 12),
    ]
    lines = str(err).splitlines()
    assert lines[0] == "5 problems in many.yaml:"
    assert lines[1] == "  line 4: searcher.metric: missing required field 'metric'"
    assert lines[2] == "  line 6: searcher.max_trials: must be >= 1, got -2"
    assert all(line.startswith("  line ") for line in lines[1:])
    assert "errors.pydantic.dev" not in str(err)


def test_misspelt_required_field_gives_both_problems() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(HEAD.replace("  max_length:", "  max_lenght:").replace("random", "tpe"))
    assert [(i.path, i.line, i.message) for i in info.value.issues] == [
        ("searcher.max_length", 4, "missing required field 'max_length'"),
        ("searcher.max_lenght", 8, "unknown field 'max_lenght'; did you mean 'max_length'?"),
    ]


def test_yaml_syntax_error_has_a_line() -> None:
    issue = only_issue("searcher:\n  name: single\n  metric: [unclosed\nmax_restarts: 3\n")
    assert issue.path == ""
    assert issue.message.startswith("invalid YAML: ")
    assert issue.line == 4


@pytest.mark.parametrize(
    ("text", "words"),
    [("- a\n- b\n", "got a list"), ("just a string\n", "got 'just a string'")],
)
def test_top_level_must_be_a_mapping(text: str, words: str) -> None:
    issue = only_issue(text)
    assert issue.path == "" and issue.line == 1
    assert "expected a mapping of config fields at the top level" in issue.message
    assert words in issue.message


def test_empty_config() -> None:
    issue = only_issue("# nothing here\n")
    assert "the config is empty" in issue.message


def test_problem_in_an_overridden_value_names_the_override() -> None:
    issue = only_issue(HEAD, overrides=("searcher.max_trials=abc",))
    assert issue.path == "searcher.max_trials"
    assert issue.line is None
    assert issue.message == (
        "expected an integer, got 'abc' (set by override 'searcher.max_trials=abc')"
    )


@pytest.mark.parametrize(
    ("override", "path", "words"),
    [
        ("no_equals_sign", "no_equals_sign", "expected dotted.key=value"),
        ("searcher..metric=x", "searcher..metric", "expected dotted.key=value"),
        ("name.first=x", "name.first", "'name' is not a mapping"),
        ("labels=[a, b", "labels", "the value is not valid YAML"),
    ],
)
def test_malformed_override(override: str, path: str, words: str) -> None:
    issue = only_issue(HEAD, overrides=(override,))
    assert issue.path == path
    assert issue.line is None
    assert f"malformed override '{override}'" in issue.message
    assert words in issue.message


def test_mapping_source_errors_have_no_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"searcher": {"name": "single", "metric": 3, "max_length": {"batches": 1}}})
    (issue,) = info.value.issues
    assert (issue.path, issue.line, issue.message) == (
        "searcher.metric",
        None,
        "expected a string, got 3",
    )
    assert info.value.source == "<config>"
    assert str(info.value) == "1 problem in <config>:\n  searcher.metric: expected a string, got 3"


def with_batch_size(spec: str, extra: str = "") -> str:
    """HEAD with ``global_batch_size: <spec>`` on line 4 (the searcher moves down one line)."""
    return HEAD.replace("  lr: 0.1\n", f"  lr: 0.1\n  global_batch_size: {spec}\n") + extra


@pytest.mark.parametrize(
    ("spec", "extra", "words"),
    [
        ("0", "", "must be a positive integer, got 0"),
        ("-5", "", "must be a positive integer, got -5"),
        ("8.5", "", "must be a positive integer, got 8.5"),
        ("true", "", "must be a positive integer, got true"),
        ("'32'", "", "must be a positive integer, got '32'"),
        (
            "1000000000000",
            "",
            "must be at most 2,147,483,648 (PEDL_MAX_GLOBAL_BATCH_SIZE), got 1000000000000",
        ),
        ("{type: const, val: 0}", "", "must be a positive integer, got 0"),
        ("{type: categorical, vals: [32, 0]}", "", "must be a positive integer, got 0"),
        ("{type: int, minval: 0, maxval: 64}", "", "must be a positive integer, got 0"),
        ("{type: int, minval: 1, maxval: 4294967296}", "", "must be at most 2,147,483,648"),
        ("{type: double, minval: 1, maxval: 64}", "", "a double hyperparameter gives fractional"),
        ("{type: log, minval: 1, maxval: 3}", "", "a log hyperparameter gives fractional"),
        ("{a: 1}", "", "must be a positive integer, got a nested group"),
        (
            "30",
            "resources:\n  slots_per_trial: 4\n",
            "30 is not divisible by resources.slots_per_trial (4)",
        ),
        (
            "{type: categorical, vals: [32, 30]}",
            "resources:\n  slots_per_trial: 4\n",
            "30 is not divisible by resources.slots_per_trial (4)",
        ),
    ],
)
def test_unrunnable_global_batch_size(spec: str, extra: str, words: str) -> None:
    issue = only_issue(with_batch_size(spec, extra))
    assert issue.path == "hyperparameters.global_batch_size"
    assert issue.line == 4
    assert words in issue.message


@pytest.mark.parametrize(
    ("spec", "extra"),
    [
        ("64", ""),
        ("2147483648", ""),
        ("{type: int, minval: 1, maxval: 512}", ""),
        ("{type: categorical, vals: [32, 64]}", "resources:\n  slots_per_trial: 4\n"),
        # An int range is not checked for divisibility: some of its values may divide.
        ("{type: int, minval: 8, maxval: 64}", "resources:\n  slots_per_trial: 4\n"),
    ],
)
def test_runnable_global_batch_size(spec: str, extra: str) -> None:
    parse_config(with_batch_size(spec, extra))


def test_length_in_records_needs_global_batch_size() -> None:
    text = HEAD.replace("    batches: 100\n", "    records: 6400\n")
    issue = only_issue(text)
    assert issue.path == "hyperparameters.global_batch_size"
    assert issue.line == 2  # the missing key's section
    assert "missing: searcher.max_length is in records" in issue.message
    parse_config(with_batch_size("64").replace("    batches: 100\n", "    records: 6400\n"))
    epochs = HEAD + "records_per_epoch: 100\nmin_validation_period:\n  epochs: 1\n"
    assert "min_validation_period is in epochs" in only_issue(epochs).message


def test_grid_over_the_point_limit() -> None:
    text = (
        "hyperparameters:\n"
        "  a: {type: int, minval: 0, maxval: 10000, count: 1000}\n"
        "  b: {type: double, minval: 0, maxval: 1, count: 1000}\n"
        "  c: {type: categorical, vals: [x, y]}\n"
        "searcher:\n  name: grid\n  metric: m\n  max_length: {batches: 1}\n"
    )
    issue = only_issue(text)
    assert (issue.path, issue.line) == ("hyperparameters", 1)
    assert "the grid has 2,000,000 points (one trial each), more than the limit of 100,000" in (
        issue.message
    )
    # The same space is fine for the random searcher, and a grid at the limit is fine.
    parse_config(text.replace("name: grid", "name: random\n  max_trials: 3"))
    parse_config(text.replace("count: 1000}\n  c:", "count: 50}\n  c:"))
    # int counts are capped at the number of integers in the range, as the grid does.
    parse_config(text.replace("maxval: 10000, count: 1000", "maxval: 9, count: 1000"))


def test_unrunnable_problems_come_with_the_others() -> None:
    text = HEAD.replace("name: random", "name: sync_halving") + "max_restarts: -1\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, name="bad.yaml")
    assert [(i.path, i.line) for i in info.value.issues] == [
        ("searcher.name", 5),
        ("max_restarts", 10),
    ]


def test_unrunnable_searcher_set_by_override() -> None:
    issue = only_issue(HEAD, overrides=("searcher.name=sync_halving",))
    assert issue.path == "searcher.name" and issue.line is None
    assert "(set by override 'searcher.name=sync_halving')" in issue.message
