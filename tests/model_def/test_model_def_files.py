"""list_files: .pedlignore semantics, built-in exclusions, symlinks, determinism."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pedl.model_def import ModelDefError, list_files


def write(root: Path, relpath: str, content: str = "x") -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def test_lists_all_files_sorted_with_posix_paths(tmp_path: Path) -> None:
    for rel in ["z.py", "a/b/c.txt", "a/a.py", "__init__.py"]:
        write(tmp_path, rel)
    assert list_files(tmp_path) == ["__init__.py", "a/a.py", "a/b/c.txt", "z.py"]


def test_pyc_and_pycache_always_dropped(tmp_path: Path) -> None:
    write(tmp_path, "model.py")
    write(tmp_path, "model.pyc")
    write(tmp_path, "__pycache__/model.cpython-311.pyc")
    write(tmp_path, "sub/__pycache__/x.txt")
    write(tmp_path, "sub/keep.py")
    # A negation in .pedlignore cannot bring byte code back.
    write(tmp_path, ".pedlignore", "!*.pyc\n!__pycache__/\n")
    assert list_files(tmp_path) == [".pedlignore", "model.py", "sub/keep.py"]


def test_pedlignore_globs_directories_and_negation(tmp_path: Path) -> None:
    for rel in [
        "model.py",
        "data/train.csv",
        "data/test.csv",
        "nested/data/deep.csv",
        "logs/run.log",
        "notes.log",
        "keep.log",
        "build/out.bin",
        "build/keep.txt",
    ]:
        write(tmp_path, rel)
    write(
        tmp_path,
        ".pedlignore",
        "# comment\n\n/data/\n*.log\n!keep.log\nbuild/*\n!build/keep.txt\n",
    )
    assert list_files(tmp_path) == [
        ".pedlignore",
        "build/keep.txt",
        "keep.log",
        "model.py",
        "nested/data/deep.csv",  # /data/ is anchored at the top
    ]


def test_unanchored_directory_pattern_matches_at_any_depth(tmp_path: Path) -> None:
    write(tmp_path, "model.py")
    write(tmp_path, "checkpoints/a.h5")
    write(tmp_path, "x/y/checkpoints/b.h5")
    write(tmp_path, "x/y/checkpoints.py")
    write(tmp_path, ".pedlignore", "checkpoints/\n")
    assert list_files(tmp_path) == [".pedlignore", "model.py", "x/y/checkpoints.py"]


def test_nested_path_and_double_star_patterns(tmp_path: Path) -> None:
    write(tmp_path, "model.py")
    write(tmp_path, "a/b/c/weights.h5")
    write(tmp_path, "a/weights.h5")
    write(tmp_path, "a/b/readme.md")
    write(tmp_path, "a/b/c/readme.md")
    write(tmp_path, ".pedlignore", "**/weights.h5\na/b/c/readme.md\n")
    assert list_files(tmp_path) == [".pedlignore", "a/b/readme.md", "model.py"]


def test_file_inside_excluded_directory_cannot_be_reincluded(tmp_path: Path) -> None:
    # gitignore semantics: "It is not possible to re-include a file if a parent directory
    # of that file is excluded."
    write(tmp_path, "model.py")
    write(tmp_path, "data/keep.csv")
    write(tmp_path, ".pedlignore", "data/\n!data/keep.csv\n")
    assert list_files(tmp_path) == [".pedlignore", "model.py"]


def test_single_file_lists_as_its_name(tmp_path: Path) -> None:
    path = write(tmp_path, "dir/model.py")
    write(tmp_path, "dir/other.py")
    assert list_files(path) == ["model.py"]


def test_non_python_single_file_and_missing_dir_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "data.csv")
    with pytest.raises(ModelDefError, match=r"data\.csv"):
        list_files(path)
    with pytest.raises(ModelDefError, match="does not exist"):
        list_files(tmp_path / "missing")


def test_symlink_inside_is_followed(tmp_path: Path) -> None:
    write(tmp_path, "lib/util.py", "u")
    os.symlink("lib/util.py", tmp_path / "util_link.py")
    os.symlink("lib", tmp_path / "lib_link")
    assert list_files(tmp_path) == ["lib/util.py", "lib_link/util.py", "util_link.py"]


def test_symlink_escaping_is_refused_unless_ignored(tmp_path: Path) -> None:
    outside = write(tmp_path, "outside/secret.txt")
    model = tmp_path / "model"
    write(model, "model.py")
    os.symlink(outside, model / "secret.txt")
    with pytest.raises(ModelDefError, match=r"'secret\.txt'.*outside"):
        list_files(model)
    write(model, ".pedlignore", "secret.txt\n")
    assert list_files(model) == [".pedlignore", "model.py"]


def test_dangling_symlink_and_cycle_refused(tmp_path: Path) -> None:
    write(tmp_path, "model.py")
    os.symlink("nowhere.py", tmp_path / "dangling.py")
    with pytest.raises(ModelDefError, match=r"'dangling\.py'.*dangles"):
        list_files(tmp_path)
    os.unlink(tmp_path / "dangling.py")
    (tmp_path / "sub").mkdir()
    os.symlink("..", tmp_path / "sub" / "up")
    with pytest.raises(ModelDefError, match=r"'sub/up'.*cycle"):
        list_files(tmp_path)
