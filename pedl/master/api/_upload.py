"""The body of ``POST /experiments``, in either of its two forms.

- ``multipart/form-data`` (what the SDK and the CLI send): a ``config`` part, YAML or JSON
  text (a plain field, or a file part; a file part of type ``application/json`` is the
  config as a JSON object), a ``model_definition`` file part, the ``.tar.gz`` archive's own
  bytes, an optional ``activate`` field (``true``/``false``) and an optional ``template``
  field (a template's name, merged under the config by the master) and an optional
  ``project_id`` (the project to create the experiment in). The archive is spooled to
  a temporary file as it arrives (1 MiB in memory at most), never held whole in memory
  while the body is received, and checked from there; ``curl -F config=@exp.yaml -F
  model_definition=@model.tar.gz`` sends it.
- ``application/json`` (:class:`~._schemas.ExperimentCreate`; kept for compatibility, fine
  for small model definitions): ``{"config", "model_definition": <base64>, "activate",
  "template", "project_id"}``, parsed whole.

Either is refused as FastAPI refuses a body: 422 naming each field (``body.config``, ...),
400 for a malformed multipart body, 400 for a JSON ``config`` part nested too deeply. JSON
integers are read with :func:`~pedl.config._limits.parse_integer`: one with more digits than
Python converts reaches the config's checks, which refuse it naming its field (422).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Annotated, Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import Field, TypeAdapter, ValidationError
from starlette.datastructures import UploadFile

from pedl.config._limits import parse_integer
from pedl.master.api._errors import ApiError
from pedl.master.api._limits import json_body_problem
from pedl.master.api._schemas import ConfigSource, ExperimentCreate, TemplateRef

_CONFIG: TypeAdapter[str | dict[str, Any]] = TypeAdapter(ConfigSource)
_ACTIVATE: TypeAdapter[bool] = TypeAdapter(bool)
_TEMPLATE: TypeAdapter[str] = TypeAdapter(TemplateRef)
_PROJECT_ID: TypeAdapter[int] = TypeAdapter(Annotated[int, Field(ge=1, le=2**31 - 1)])
_FIELDS = ("config", "model_definition", "activate", "template", "project_id")


@dataclass
class ExperimentUpload:
    """A validated ``POST /experiments`` body: the config, whether to start ACTIVE, the
    template to merge under the config, if any, and the model definition, as base64 text
    (the JSON form) or as a spooled file (multipart; the route checks it from there and reads
    it only to store it). :meth:`close` removes the file."""

    config: str | dict[str, Any]
    activate: bool
    template: str | None = None
    project_id: int | None = None
    base64_archive: str | None = None
    archive_file: IO[bytes] | None = None
    _form: Any = None

    async def close(self) -> None:
        if self._form is not None:
            await self._form.close()


def _is_multipart(request: Request) -> bool:
    return request.headers.get("content-type", "")[:19].lower() == "multipart/form-data"


async def read_experiment_upload(
    request: Request, *, max_part_bytes: int, max_json_depth: int
) -> ExperimentUpload:
    """The body of ``request`` in either form (see the module's docstring). A multipart
    text field may hold ``max_part_bytes`` (the body's own limit); a JSON ``config`` part
    nests at most ``max_json_depth`` levels."""
    if _is_multipart(request):
        return await _multipart(request, max_part_bytes, max_json_depth)
    return _json(await request.body())


def _json(raw: bytes) -> ExperimentUpload:
    """The JSON form, validated as FastAPI validates a body model."""
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    try:
        document = json.loads(raw, parse_int=parse_integer)
    except json.JSONDecodeError as err:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", err.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": err.msg},
                }
            ]
        ) from None
    except UnicodeDecodeError:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error", "input": {}}]
        ) from None
    try:
        body = ExperimentCreate.model_validate(document)
    except ValidationError as err:
        raise _in_body(err) from None
    return ExperimentUpload(
        config=body.config,
        activate=body.activate,
        template=body.template,
        project_id=body.project_id,
        base64_archive=body.model_definition,
    )


def _in_body(err: ValidationError, *field: str) -> RequestValidationError:
    return RequestValidationError(
        [{**e, "loc": ("body", *field, *e["loc"])} for e in err.errors(include_url=False)]
    )


async def _multipart(
    request: Request, max_part_bytes: int, max_json_depth: int
) -> ExperimentUpload:
    form = await request.form(max_files=2, max_fields=len(_FIELDS), max_part_size=max_part_bytes)
    try:
        errors: list[dict[str, Any]] = []
        for name in dict.fromkeys(form.keys()):
            if name not in _FIELDS:
                errors.append(_error("extra_forbidden", name, "Extra inputs are not permitted"))
            elif len(form.getlist(name)) > 1:
                errors.append(_error("value_error", name, "given more than once"))
        archive = form.get("model_definition")
        if archive is None:
            errors.append(_error("missing", "model_definition", "Field required"))
        elif not isinstance(archive, UploadFile):
            errors.append(
                _error(
                    "value_error",
                    "model_definition",
                    "must be a file part holding the .tar.gz archive",
                )
            )
        config = await _config(form.get("config"), max_json_depth, errors)
        activate = True
        if isinstance(form.get("activate"), str):
            try:
                activate = _ACTIVATE.validate_python(form.get("activate"))
            except ValidationError as err:
                errors.extend(_in_body(err, "activate").errors())
        elif form.get("activate") is not None:
            errors.append(_error("bool_type", "activate", "Input should be true or false"))
        template = None
        if form.get("template") is not None:
            try:
                template = _TEMPLATE.validate_python(form.get("template"))
            except ValidationError as err:
                errors.extend(_in_body(err, "template").errors())
        project_id = None
        if form.get("project_id") is not None:
            try:
                project_id = _PROJECT_ID.validate_python(form.get("project_id"))
            except ValidationError as err:
                errors.extend(_in_body(err, "project_id").errors())
        if errors:
            raise RequestValidationError(errors)
        assert isinstance(archive, UploadFile) and config is not None
        return ExperimentUpload(
            config=config,
            activate=activate,
            template=template,
            project_id=project_id,
            archive_file=archive.file,
            _form=form,
        )
    except BaseException:
        await form.close()
        raise


async def _config(
    part: str | UploadFile | None, max_json_depth: int, errors: list[dict[str, Any]]
) -> str | dict[str, Any] | None:
    """The ``config`` part: text, or a JSON object (a file part of a JSON type)."""
    if part is None:
        errors.append(_error("missing", "config", "Field required"))
        return None
    value: Any = part
    if isinstance(part, UploadFile):
        data = await part.read()
        if "json" in (part.content_type or "").lower():
            problem = json_body_problem(data, max_json_depth)
            if problem is not None:
                raise ApiError(400, f"invalid config part: {problem}", field="body.config")
            try:
                value = json.loads(data, parse_int=parse_integer)
            except ValueError:
                errors.append(_error("json_invalid", "config", "the config part is not JSON"))
                return None
        else:
            try:
                value = data.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(_error("string_unicode", "config", "the config is not UTF-8 text"))
                return None
    try:
        return _CONFIG.validate_python(value)
    except ValidationError as err:
        errors.extend(_in_body(err, "config").errors())
        return None


def _error(kind: str, field: str, message: str) -> dict[str, Any]:
    return {"type": kind, "loc": ("body", field), "msg": message, "input": None}


CREATE_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["config", "model_definition"],
                "properties": {
                    "config": {
                        "type": "string",
                        "description": "The experiment config: YAML or JSON text (a file part "
                        "of type application/json: a JSON object).",
                    },
                    "model_definition": {
                        "type": "string",
                        "format": "binary",
                        "description": "The model definition directory as a .tar.gz archive "
                        "(within the limits of GET /master), spooled to a file as it arrives.",
                    },
                    "activate": {
                        "type": "boolean",
                        "default": True,
                        "description": "Start ACTIVE (true) or PAUSED (false).",
                    },
                    "template": {
                        "type": "string",
                        "description": "A template (GET /templates) the master merges under "
                        "the config before validating it (the config's own values win).",
                    },
                    "project_id": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "The project to create the experiment in (GET "
                        "/projects); left out: the config's workspace and project, else the "
                        "default project, Uncategorized.",
                    },
                },
                "additionalProperties": False,
            },
            "encoding": {"model_definition": {"contentType": "application/gzip"}},
        },
        "application/json": {"schema": ExperimentCreate.model_json_schema()},
    },
}
"""The OpenAPI ``requestBody`` of ``POST /experiments`` (the route reads its body itself)."""
