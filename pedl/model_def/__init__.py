"""Model definitions: packaging a model directory, unpacking it safely, loading its Trial."""

from pedl.model_def._archive import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_PATH_CHARS,
    DEFAULT_MAX_UNPACKED_BYTES,
    ArchiveSource,
    check_archive,
    copy_tree,
    extract,
    package,
)
from pedl.model_def._errors import ArchiveLimitError, ModelDefError, UnsafeArchiveError
from pedl.model_def._files import IGNORE_FILE, list_files
from pedl.model_def._loader import PACKAGE_NAME, ModelDefinition, load, unload

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_MEMBERS",
    "DEFAULT_MAX_PATH_CHARS",
    "DEFAULT_MAX_UNPACKED_BYTES",
    "IGNORE_FILE",
    "PACKAGE_NAME",
    "ArchiveLimitError",
    "ArchiveSource",
    "ModelDefError",
    "ModelDefinition",
    "UnsafeArchiveError",
    "check_archive",
    "copy_tree",
    "extract",
    "list_files",
    "load",
    "package",
    "unload",
]
