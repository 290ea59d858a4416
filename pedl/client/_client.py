"""The SDK's entry points: a :class:`Client` bound to one master, and module-level functions
that use a default client built from ``PEDL_MASTER``."""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pedl.client import _workspace
from pedl.client._checkpoint import Checkpoint
from pedl.client._errors import ErrorIssue, PEDLError
from pedl.client._experiment import Experiment
from pedl.client._model import Model, ModelSortBy, model_path
from pedl.client._ordering import ExperimentSortBy, OrderBy
from pedl.client._session import Session
from pedl.client._trial import Trial, TrialMetrics, iter_metrics_of
from pedl.client._user import User
from pedl.client._workspace import Workspace

CREATE_TIMEOUT = 600.0
"""Seconds an experiment's creation may take: the upload, and for a config that leaves its
searcher to a KerasTuner script, the master running the script up to ``tuner.search``."""

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]
"""An experiment config: a file path, YAML text, or a mapping."""


def _config_document(config: ConfigSource, overrides: Sequence[str]) -> str | dict[str, Any]:
    """The config to send: YAML text or a mapping.

    A path (``os.PathLike``, or a one-line ``str`` naming an existing file) is read; any
    other ``str`` is YAML text. With ``overrides`` the config is validated here with them,
    and sent as the user wrote it with only the overridden keys changed: no defaults filled
    in (the master fills in its own, such as ``checkpoint_storage.host_path`` under its home).
    """
    name = "<config>"
    source: str | dict[str, Any]
    if isinstance(config, Mapping):
        source = dict(config)
    elif isinstance(config, os.PathLike) or ("\n" not in config and Path(config).is_file()):
        path = Path(config)
        name = path.name
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as err:
            raise PEDLError(f"cannot read the experiment config {path}: {err}") from err
    else:
        source = config
    if not overrides:
        return source
    # The config's models, only where a config is read (a list or a describe never does).
    from pedl.config import ConfigError, parse_config
    from pedl.config._overrides import overridden_document
    from pedl.tuner import wants_implied_searcher

    try:
        try:
            parse_config(source, name=name, overrides=overrides)
        except ConfigError as whole:
            # A searcher left to a KerasTuner script: the master fills it in, then checks.
            # Otherwise every problem the config has is said (not only a bad override's).
            try:
                left = overridden_document(source, overrides)
            except ConfigError:
                raise whole from None
            if not (isinstance(left, dict) and wants_implied_searcher(left)):
                raise
        document: dict[str, Any] = overridden_document(source, overrides)
    except ConfigError as err:
        issues = [
            ErrorIssue(f"config.{i.path}" if i.path else "config", i.message, i.line)
            for i in err.issues
        ]
        count = len(issues)
        first = issues[0]
        raise PEDLError(
            f"invalid experiment config ({count} problem{'s' if count != 1 else ''}): "
            f"{first.field}: {first.message}",
            field=first.field,
            issues=issues,
        ) from err
    return document


def _config_mapping(config: ConfigSource) -> dict[str, Any]:
    """``config`` as a mapping, as the user wrote it (YAML loaded, nothing validated)."""
    source = _config_document(config, ())
    if isinstance(source, dict):
        return source
    from pedl.config import ConfigError
    from pedl.config._overrides import overridden_document

    try:
        document = overridden_document(source, ())
    except ConfigError as err:
        raise PEDLError(f"invalid config: {err}") from err
    if not isinstance(document, dict):
        raise PEDLError("a config must be a mapping")
    return document


class Client:
    """The SDK bound to one master (``master``, else ``$PEDL_MASTER``, else
    ``http://127.0.0.1:8080``), signed in as :class:`Session` says (``PEDL_USER`` and
    ``PEDL_PASSWORD``, or the token ``pedl user login`` saved). Every method raises
    :class:`PEDLError` on failure (:class:`NotSignedInError` when not signed in).

    ``Client(master, user, password)`` is Determined's ``Determined(master, user,
    password)``: with ``user`` and ``password`` it signs in as that user at once (saving the
    token); with ``user`` alone it uses the token saved for that user on this master, else
    signs in with the password of the environment (``PEDL_PASSWORD``/``DET_PASS``) when its
    user is ``user``, else raises :class:`NotSignedInError` saying how to sign in."""

    def __init__(
        self,
        master: str | None = None,
        user: str | None = None,
        password: str | None = None,
        *,
        session: Session | None = None,
    ) -> None:
        self.session = session if session is not None else Session(master)
        if user is not None:
            try:
                self._sign_in_as(user, password)
            except BaseException:
                if session is None:
                    self.session.close()
                raise

    def _sign_in_as(self, user: str, password: str | None) -> None:
        """Sign in as ``user`` (see the class's docstring)."""
        from pedl.client._errors import NotSignedInError
        from pedl.client._tokens import env_credentials

        if password is None:
            saved = self.session.tokens.get(self.session.master)
            if saved is not None and saved.username == user:
                return
            env_user, env_password = env_credentials()
            if env_user != user or not env_password:
                raise NotSignedInError(
                    f"no saved session of {user!r} for {self.session.master}: give the "
                    f"password, or sign in with `pedl user login {user}`"
                )
            password = env_password
        self.session.login(user, password)

    @property
    def master(self) -> str:
        """The master's base URL."""
        return self.session.master

    def close(self) -> None:
        """Close the connection."""
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_experiment(
        self,
        config: ConfigSource,
        model_dir: str | os.PathLike[str],
        *,
        overrides: Sequence[str] = (),
        activate: bool = True,
        template: str | None = None,
        project_id: int | None = None,
    ) -> Experiment:
        """Submit an experiment: ``config`` (a file path, YAML text or a mapping) with
        ``overrides`` (``"dotted.key=value"``) applied, and the model definition packaged
        from ``model_dir`` (honouring ``.pedlignore``). It starts ACTIVE, or PAUSED when
        ``activate`` is false. With ``template``, the master merges that template (as it
        stores it, its secrets included, which it shows masked) under the config first, as
        Determined merges them (:func:`pedl.client.merge_template`); :class:`NotFoundError` if none.
        With ``project_id``, it goes into that project (else into the project its config's
        ``workspace`` and ``project`` name, else into ``Uncategorized``).

        An invalid config raises :class:`PEDLError` whose ``issues`` name every bad field
        (``config.<path>``, with its YAML line); so does a config PEDL cannot run (e.g.
        ``config.searcher.name``: a searcher PEDL does not implement). A model directory that
        cannot be packaged raises :class:`pedl.model_def.ModelDefError`, and so does one
        over the master's limits (``GET /master``: archive size, total file size, file
        count), before anything is uploaded; its message names the largest files and how to
        leave files out (``.pedlignore``).

        The master's warnings about an accepted config (one that lists the Determined
        fields it sets that PEDL ignores) are issued as :class:`pedl.config.ConfigWarning`
        with :func:`warnings.warn`, and kept in ``experiment.to_dict()["warnings"]``.
        """
        # Packaging and the config's models: only where an experiment is made.
        from pedl import model_def
        from pedl.config import ConfigWarning

        document = _config_document(config, overrides)
        limits = self.session.get("/master")["limits"]["model_definition"]
        archive = model_def.package(
            Path(model_dir),
            max_bytes=limits["max_bytes"],
            max_unpacked_bytes=limits["max_unpacked_bytes"],
            max_members=limits["max_members"],
        )
        # multipart/form-data: the master spools the archive to a file as it arrives.
        if isinstance(document, str):
            config_part = ("config.yaml", document.encode("utf-8"), "application/yaml")
        else:
            config_part = ("config.json", json.dumps(document).encode("utf-8"), "application/json")
        fields = {"activate": "true" if activate else "false"}
        if template is not None:
            fields["template"] = template
        if project_id is not None:
            fields["project_id"] = str(int(project_id))
        record = self.session.post_form(
            "/experiments",
            fields=fields,
            files={
                "config": config_part,
                "model_definition": ("model_definition.tar.gz", archive, "application/gzip"),
            },
            timeout=CREATE_TIMEOUT,
        )
        experiment = Experiment(self.session, record)
        for message in record.get("warnings") or ():
            warnings.warn(str(message), ConfigWarning, stacklevel=2)
        return experiment

    def list_templates(self) -> dict[str, dict[str, Any]]:
        """Every template on the master: name -> its config mapping (secrets masked)."""
        return {t["name"]: t["config"] for t in self.session.get("/templates")}

    def get_template(self, name: str) -> dict[str, Any]:
        """The config mapping of the template ``name``, its secrets masked as an experiment's
        config's are (:class:`NotFoundError` if none)."""
        config: dict[str, Any] = self.session.get(f"/templates/{name}")["config"]
        return config

    def set_template(self, name: str, config: ConfigSource) -> dict[str, Any]:
        """Create the template ``name`` or replace it with ``config`` (a path, YAML text or
        a mapping); its stored mapping."""
        body = {"config": _config_mapping(config)}
        stored: dict[str, Any] = self.session.put(f"/templates/{name}", json=body)["config"]
        return stored

    def remove_template(self, name: str) -> None:
        """Remove the template ``name`` (its creator or an administrator)."""
        self.session.delete(f"/templates/{name}")

    def get_experiment(self, experiment_id: int) -> Experiment:
        """The experiment with this id (:class:`NotFoundError` if none)."""
        return Experiment(self.session, self.session.get(f"/experiments/{int(experiment_id)}"))

    def list_experiments(
        self,
        sort_by: ExperimentSortBy | str | None = None,
        order_by: OrderBy | str | None = None,
        experiment_ids: Sequence[int] | None = None,
        labels: Sequence[str] | None = None,
        users: Sequence[str] | None = None,
        states: Sequence[str] = (),
        name: str | None = None,
        project_id: int | None = None,
        *,
        archived: bool | None = False,
    ) -> list[Experiment]:
        """Experiments, newest first (``sort_by`` an :class:`ExperimentSortBy`, ``order_by``
        an :class:`OrderBy`, as Determined's ``list_experiments`` takes them), only those
        with ids ``experiment_ids``, with every one of ``labels``, owned by one of ``users``,
        in one of ``states``, whose name contains ``name`` (any case), in the project
        ``project_id``. Archived experiments are left out unless ``archived`` is ``None``
        (all) or ``True`` (only those)."""
        params: dict[str, Any] = {}
        if project_id is not None:
            params["project_id"] = int(project_id)
        if states:
            params["state"] = [str(state).upper() for state in states]
        if labels:
            params["label"] = list(labels)
        if name:
            params["name"] = name
        column = ExperimentSortBy(sort_by).column if sort_by is not None else "id"
        ascending = OrderBy(order_by).ascending if order_by is not None else sort_by is not None
        params["sort"] = column if ascending else f"-{column}"
        if archived is not None:
            params["archived"] = "true" if archived else "false"
        items = self.session.get_all("/experiments", params=params)
        wanted_ids = set(experiment_ids) if experiment_ids else None
        wanted_users = set(users) if users else None
        return [
            Experiment(self.session, item)
            for item in items
            if (wanted_ids is None or item["id"] in wanted_ids)
            and (wanted_users is None or item["owner"] in wanted_users)
        ]

    def iter_trials_metrics(self, trial_ids: Sequence[int], group: str) -> Iterator[TrialMetrics]:
        """The reports of ``group`` (``"training"`` or ``"validation"``) of every trial in
        ``trial_ids``, trial after trial, each in batch order, fetched a page at a time."""
        for trial_id in trial_ids:
            yield from iter_metrics_of(self.session, int(trial_id), group)

    def stream_trials_training_metrics(self, trial_ids: Sequence[int]) -> Iterator[TrialMetrics]:
        """``iter_trials_metrics(trial_ids, "training")``."""
        return self.iter_trials_metrics(trial_ids, "training")

    def stream_trials_validation_metrics(self, trial_ids: Sequence[int]) -> Iterator[TrialMetrics]:
        """``iter_trials_metrics(trial_ids, "validation")``."""
        return self.iter_trials_metrics(trial_ids, "validation")

    def get_trial(self, trial_id: int) -> Trial:
        """The trial with this id (:class:`NotFoundError` if none)."""
        return Trial(self.session, self.session.get(f"/trials/{int(trial_id)}"))

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        """The checkpoint with this uuid (:class:`NotFoundError` if none)."""
        return Checkpoint(self.session, self.session.get(f"/checkpoints/{uuid}"))

    def create_model(
        self,
        name: str,
        description: str = "",
        metadata: Mapping[str, Any] | None = None,
        labels: Sequence[str] | None = None,
        notes: str = "",
    ) -> Model:
        """Create a model in the registry (:class:`PEDLError` when the name is taken)."""
        body = {
            "name": name,
            "description": description,
            "metadata": dict(metadata or {}),
            "labels": list(labels or []),
            "notes": notes,
        }
        return Model(self.session, self.session.post("/models", json=body))

    def get_model(self, identifier: str | int) -> Model:
        """The model with this name or id (:class:`NotFoundError` if none)."""
        return Model(self.session, self.session.get(model_path(identifier)))

    def get_model_by_id(self, model_id: int) -> Model:
        """The model with this id (:class:`NotFoundError` if none)."""
        return self.get_model(int(model_id))

    def get_models(
        self,
        sort_by: ModelSortBy = ModelSortBy.NAME,
        order_by: OrderBy = OrderBy.ASCENDING,
        name: str = "",
        description: str = "",
        labels: Sequence[str] | None = None,
        archived: bool | None = None,
    ) -> list[Model]:
        """Every model, sorted; ``name`` matches part of the name (any case), ``description``
        part of the description, ``labels`` keeps models with all these labels."""
        params: dict[str, Any] = {
            "sort_by": ModelSortBy(sort_by).value,
            "order": "asc" if OrderBy(order_by).ascending else "desc",
        }
        if name:
            params["name"] = name
        if archived is not None:
            params["archived"] = str(archived).lower()
        models = [Model(self.session, r) for r in self.session.get_all("/models", params=params)]
        wanted = set(labels or ())
        return [
            m
            for m in models
            if description.lower() in m.description.lower() and wanted <= set(m.labels)
        ]

    def list_models(self, *args: Any, **kwargs: Any) -> list[Model]:
        """:meth:`get_models` under its older name."""
        return self.get_models(*args, **kwargs)

    def get_model_labels(self) -> list[str]:
        """Every label used on a model, the most used first (ties by name)."""
        counts: dict[str, int] = {}
        for model in self.get_models():
            for label in dict.fromkeys(model.labels):
                counts[label] = counts.get(label, 0) + 1
        return sorted(counts, key=lambda label: (-counts[label], label))

    def stream_trials_metrics(self, trial_ids: Sequence[int], group: str) -> Iterator[TrialMetrics]:
        """:meth:`iter_trials_metrics` under Determined's deprecated name."""
        return self.iter_trials_metrics(trial_ids, group)

    def login(self, username: str, password: str) -> User:
        """Sign in as ``username``; the token is saved for this master (see :class:`Session`)
        and used by this client from now on. :class:`NotSignedInError` for a wrong username
        or password."""
        self.session.login(username, password)
        return self.whoami()

    def logout(self) -> None:
        """Sign out: the session's token stops working and is no longer saved."""
        self.session.logout()

    def create_workspace(self, name: str) -> Workspace:
        """A new workspace called ``name`` (:class:`PEDLError` if one is so named)."""
        return _workspace.create_workspace(self.session, name)

    def get_workspace(self, name: str) -> Workspace:
        """The workspace called ``name`` (:class:`NotFoundError` if none)."""
        return _workspace.get_workspace(self.session, name)

    def list_workspaces(self) -> list[Workspace]:
        """Every workspace, by id."""
        return _workspace.list_workspaces(self.session)

    def delete_workspace(self, name: str) -> None:
        """Delete the workspace called ``name`` and its projects (refused while they hold
        experiments; the default workspace never)."""
        _workspace.delete_workspace(self.session, name)

    def whoami(self) -> User:
        """The signed-in user."""
        return User.from_dict(self.session.get("/me"), self.session)

    def list_users(self, active: bool | None = None) -> list[User]:
        """Every account (administrators only), by username; with ``active``, only the
        active (``True``) or the deactivated (``False``) ones."""
        users = [User.from_dict(record, self.session) for record in self.session.get("/users")]
        return [u for u in users if active is None or u.active == active]

    def create_user(
        self,
        username: str,
        admin: bool | str = False,
        password: str | None = None,
        remote: bool = False,
    ) -> User:
        """Create an account (administrators only), as Determined's ``create_user``.
        ``remote`` is refused (PEDL signs in with passwords only); a ``str`` in ``admin``'s
        place is the password (PEDL's older ``create_user(username, password)``)."""
        if isinstance(admin, str):
            if password is not None:
                raise TypeError("create_user() got the password twice")
            password, admin = admin, False
        if remote:
            raise PEDLError(
                "PEDL has no remote (SSO) accounts: give the account a password",
                field="remote",
            )
        if not password:
            raise PEDLError("a new account needs a password", field="password")
        body = {"username": username, "password": password, "admin": bool(admin)}
        return User.from_dict(self.session.post("/users", json=body), self.session)

    def get_user_by_id(self, user_id: int) -> User:
        """The account with this id (:class:`NotFoundError` if none)."""
        return User.from_dict(self.session.get(f"/users/by-id/{int(user_id)}"), self.session)

    def get_user_by_name(self, user_name: str) -> User:
        """The account named ``user_name`` (:class:`NotFoundError` if none)."""
        path = f"/users/{quote(user_name, safe='')}"
        return User.from_dict(self.session.get(path), self.session)

    def get_session_username(self) -> str:
        """The signed-in user's username."""
        return self.whoami().username

    def change_password(
        self, password: str, *, username: str | None = None, old_password: str | None = None
    ) -> None:
        """Set a password: one's own (``username`` left out or one's own; ``old_password``
        required), or another user's as an administrator. The account's other sessions end."""
        target = username or self.whoami().username
        body: dict[str, Any] = {"password": password}
        if old_password is not None:
            body["old_password"] = old_password
        self.session.post(f"/users/{target}/password", json=body)

    def deactivate_user(self, username: str) -> User:
        """Deactivate an account (administrators only): no more signing in, sessions end."""
        return User.from_dict(self.session.post(f"/users/{username}/deactivate"), self.session)

    def activate_user(self, username: str) -> User:
        """Let a deactivated account sign in again (administrators only)."""
        return User.from_dict(self.session.post(f"/users/{username}/activate"), self.session)


_default_lock = threading.Lock()
_default: Client | None = None


def default_client() -> Client:
    """The client the module-level functions use, made on first use from ``PEDL_MASTER``."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def set_master(master: str | None) -> Client:
    """Point the module-level functions at ``master`` (``None``: ``PEDL_MASTER`` again)."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
        _default = Client(master)
        return _default


def create_experiment(
    config: ConfigSource,
    model_dir: str | os.PathLike[str],
    *,
    overrides: Sequence[str] = (),
    activate: bool = True,
    template: str | None = None,
    project_id: int | None = None,
) -> Experiment:
    """:meth:`Client.create_experiment` on the default client."""
    return default_client().create_experiment(
        config,
        model_dir,
        overrides=overrides,
        activate=activate,
        template=template,
        project_id=project_id,
    )


def get_experiment(experiment_id: int) -> Experiment:
    """:meth:`Client.get_experiment` on the default client."""
    return default_client().get_experiment(experiment_id)


def list_experiments(
    sort_by: ExperimentSortBy | str | None = None,
    order_by: OrderBy | str | None = None,
    experiment_ids: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    users: Sequence[str] | None = None,
    states: Sequence[str] = (),
    name: str | None = None,
    project_id: int | None = None,
    *,
    archived: bool | None = False,
) -> list[Experiment]:
    """:meth:`Client.list_experiments` on the default client."""
    return default_client().list_experiments(
        sort_by,
        order_by,
        experiment_ids,
        labels,
        users,
        states,
        name,
        project_id,
        archived=archived,
    )


def iter_trials_metrics(trial_ids: Sequence[int], group: str) -> Iterator[TrialMetrics]:
    """:meth:`Client.iter_trials_metrics` on the default client."""
    return default_client().iter_trials_metrics(trial_ids, group)


def stream_trials_training_metrics(trial_ids: Sequence[int]) -> Iterator[TrialMetrics]:
    """:meth:`Client.stream_trials_training_metrics` on the default client."""
    return default_client().stream_trials_training_metrics(trial_ids)


def stream_trials_validation_metrics(trial_ids: Sequence[int]) -> Iterator[TrialMetrics]:
    """:meth:`Client.stream_trials_validation_metrics` on the default client."""
    return default_client().stream_trials_validation_metrics(trial_ids)


def get_trial(trial_id: int) -> Trial:
    """:meth:`Client.get_trial` on the default client."""
    return default_client().get_trial(trial_id)


def get_checkpoint(uuid: str) -> Checkpoint:
    """:meth:`Client.get_checkpoint` on the default client."""
    return default_client().get_checkpoint(uuid)


def create_model(
    name: str,
    description: str = "",
    metadata: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
    notes: str = "",
) -> Model:
    """:meth:`Client.create_model` on the default client."""
    return default_client().create_model(name, description, metadata, labels, notes)


def get_model(identifier: str | int) -> Model:
    """:meth:`Client.get_model` on the default client."""
    return default_client().get_model(identifier)


def get_model_by_id(model_id: int) -> Model:
    """:meth:`Client.get_model_by_id` on the default client."""
    return default_client().get_model_by_id(model_id)


def get_models(*args: Any, **kwargs: Any) -> list[Model]:
    """:meth:`Client.get_models` on the default client."""
    return default_client().get_models(*args, **kwargs)


def list_models(*args: Any, **kwargs: Any) -> list[Model]:
    """:meth:`Client.list_models` on the default client."""
    return default_client().list_models(*args, **kwargs)


Determined = Client
"""Determined's name of :class:`Client`: ``Determined(master, user, password)``."""


def whoami() -> User:
    """:meth:`Client.whoami` on the default client."""
    return default_client().whoami()


def logout() -> None:
    """Sign the default client out (:meth:`Client.logout`)."""
    default_client().logout()


def list_users(active: bool | None = None) -> list[User]:
    """:meth:`Client.list_users` on the default client."""
    return default_client().list_users(active)


def create_user(
    username: str, admin: bool | str = False, password: str | None = None, remote: bool = False
) -> User:
    """:meth:`Client.create_user` on the default client."""
    return default_client().create_user(username, admin, password, remote)


def get_user_by_id(user_id: int) -> User:
    """:meth:`Client.get_user_by_id` on the default client."""
    return default_client().get_user_by_id(user_id)


def get_user_by_name(user_name: str) -> User:
    """:meth:`Client.get_user_by_name` on the default client."""
    return default_client().get_user_by_name(user_name)


def get_session_username() -> str:
    """:meth:`Client.get_session_username` on the default client."""
    return default_client().get_session_username()


def stream_trials_metrics(trial_ids: Sequence[int], group: str) -> Iterator[TrialMetrics]:
    """:meth:`Client.stream_trials_metrics` on the default client."""
    return default_client().stream_trials_metrics(trial_ids, group)


def get_model_labels() -> list[str]:
    """:meth:`Client.get_model_labels` on the default client."""
    return default_client().get_model_labels()


def create_workspace(name: str) -> Workspace:
    """:meth:`Client.create_workspace` on the default client."""
    return default_client().create_workspace(name)


def get_workspace(name: str) -> Workspace:
    """:meth:`Client.get_workspace` on the default client."""
    return default_client().get_workspace(name)


def list_workspaces() -> list[Workspace]:
    """:meth:`Client.list_workspaces` on the default client."""
    return default_client().list_workspaces()


def delete_workspace(name: str) -> None:
    """:meth:`Client.delete_workspace` on the default client."""
    default_client().delete_workspace(name)
