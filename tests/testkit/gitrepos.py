"""Small git repositories built in a test's temporary folder."""

from __future__ import annotations

from pathlib import Path

import git


def commit(repo: git.Repo, files: dict[str, str], message: str) -> str:
    """Write ``files`` (relative path -> text) into the work tree and commit them."""
    root = Path(repo.working_tree_dir or ".")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    repo.index.add(list(files))
    return repo.index.commit(message).hexsha


def new_repo(tmp_path: Path, files: dict[str, str]) -> git.Repo:
    """A repository at ``tmp_path/project`` on ``main`` with ``files`` as its first commit."""
    repo = git.Repo.init(tmp_path / "project", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    commit(repo, files, "base")
    return repo
