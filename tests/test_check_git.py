"""utdebug.check.gitrepo: changed functions, snapshots and errors, on real temporary repos."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from utdebug.check.definitions import ChangedFunction
from utdebug.check.gitrepo import (
    ChangeSet,
    GitError,
    Repository,
    changed_functions,
    open_repository,
    read_text,
    relative_path,
    remove_snapshot,
    resolve,
    snapshot,
)


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or system git configuration (hooks, templates, diff drivers) in these tests."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


class Repo:
    """A small git repository in tmp_path, written and committed through gitpython."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git = git.Repo.init(root, initial_branch="main")
        with self.git.config_writer() as config:
            config.set_value("user", "name", "Test")
            config.set_value("user", "email", "test@example.com")
            config.set_value("commit", "gpgsign", "false")

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")

    def commit(self, message: str = "change", **files: str) -> str:
        for path, text in files.items():
            self.write(path, text)
        self.git.git.add("-A")
        return self.git.index.commit(message).hexsha

    def branch(self, name: str) -> None:
        self.git.git.checkout("-b", name)

    def checkout(self, name: str) -> None:
        self.git.git.checkout(name)

    def open(self) -> Repository:
        return open_repository(self.root)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    made = Repo(tmp_path / "r")
    yield made
    made.git.close()


def names(changes: ChangeSet) -> list[str]:
    return [f"{f.path}::{f.qualname}" for f in changes.functions]


def by_name(changes: ChangeSet) -> dict[str, ChangedFunction]:
    return {f.qualname: f for f in changes.functions}


BASE = """\
import os

LIMIT = 10


def edited(x):
    y = x + 1
    return y


def commented(x):
    # add one
    return x + 1


def shrunk(x):
    a = 1
    b = 2
    c = 3
    return x + a + b + c


def untouched(x):
    return x


def moved_on_main(x):
    return x * 2
"""

FEATURE = """\
import os

LIMIT = 20


def edited(x):
    y = x + 2
    return y


def commented(x):
    # add one (always)
    return x + 1


def shrunk(x):
    a = 1
    return x + a


def untouched(x):
    return x


def moved_on_main(x):
    return x * 2


def added(x):
    return -x
"""


@pytest.fixture
def feature(repo: Repo) -> Repo:
    repo.commit(**{"pkg/mod.py": BASE})
    repo.branch("feature")
    repo.commit(**{"pkg/mod.py": FEATURE})
    return repo


# --- changed functions: a branch ----------------------------------------------------------


def test_feature_branch_reports_exactly_the_touched_functions(feature: Repo) -> None:
    changes = changed_functions(feature.open(), "main", rev="feature")
    assert names(changes) == [
        "pkg/mod.py::edited",
        "pkg/mod.py::commented",
        "pkg/mod.py::shrunk",
        "pkg/mod.py::added",
    ]
    got = by_name(changes)
    assert (got["edited"].line, got["edited"].end_line) == (6, 8)
    assert (got["shrunk"].line, got["shrunk"].end_line) == (16, 18)
    assert (got["added"].line, got["added"].end_line) == (29, 30)
    assert all(f.kind == "function" and f.supported and f.reason is None for f in got.values())
    assert changes.files == ("pkg/mod.py",)
    assert changes.problems == ()
    assert changes.base_ref == "main"
    assert changes.base == feature.git.commit("main").hexsha
    assert changes.revision == feature.git.commit("feature").hexsha


def test_working_tree_of_the_branch_equals_its_commit(feature: Repo) -> None:
    changes = changed_functions(feature.open(), "main")
    assert changes.revision is None
    assert [f.qualname for f in changes.functions] == ["edited", "commented", "shrunk", "added"]


def test_merge_base_hides_changes_made_on_the_base_after_branching(feature: Repo) -> None:
    feature.checkout("main")
    feature.commit(**{"pkg/mod.py": BASE.replace("x * 2", "x * 3")})
    feature.checkout("feature")
    repo = feature.open()
    with_merge_base = changed_functions(repo, "main", rev="feature")
    assert "moved_on_main" not in by_name(with_merge_base)
    assert with_merge_base.base == feature.git.commit("main~1").hexsha
    direct = changed_functions(repo, "main", rev="feature", use_merge_base=False)
    assert "moved_on_main" in by_name(direct)
    assert direct.base == feature.git.commit("main").hexsha


def test_rev_is_diffed_against_base_and_read_at_that_commit(repo: Repo) -> None:
    first = repo.commit(**{"m.py": "def f():\n    return 1\n\n\ndef g():\n    return 1\n"})
    second = repo.commit(**{"m.py": "def f():\n    return 2\n\n\ndef g():\n    return 1\n"})
    repo.commit(**{"m.py": "def f():\n    return 2\n\n\ndef g():\n    return 3\n"})
    r = repo.open()
    changes = changed_functions(r, first, rev=second)
    assert names(changes) == ["m.py::f"]
    assert changes.revision == second
    assert "return 2" in read_text(r, "m.py", second)
    assert "return 3" not in read_text(r, "m.py", second)
    assert "return 3" in read_text(r, "m.py")
    assert "return 1" in read_text(r, "m.py", "HEAD~2")
    with pytest.raises(GitError, match=r"no file nope\.py"):
        read_text(r, "nope.py", second)
    with pytest.raises(GitError, match=r"no file nope\.py in the working tree "):
        read_text(r, "nope.py")
    (r.root / "pkg.py").mkdir()
    with pytest.raises(GitError, match=r"^pkg\.py is a folder, not a file$"):
        read_text(r, "pkg.py")


# --- changed functions: the working tree --------------------------------------------------


def test_working_tree_staged_unstaged_untracked_ignored_deleted(repo: Repo) -> None:
    one = "def a():\n    return 1\n\n\ndef b():\n    return 1\n"
    repo.commit(
        **{
            ".gitignore": "ignored.py\nbuild/\n",
            "staged.py": one,
            "unstaged.py": one,
            "gone.py": one,
            "same.py": one,
        }
    )
    repo.write("unstaged.py", one.replace("return 1\n\n", "return 2\n\n", 1))
    repo.write("staged.py", one.replace("b():\n    return 1", "b():\n    return 2"))
    repo.git.index.add(["staged.py"])
    repo.write("new.py", "def n1():\n    pass\n\n\nclass K:\n    def m(self):\n        pass\n")
    repo.write("ignored.py", "def i():\n    pass\n")
    repo.write("build/gen.py", "def i():\n    pass\n")
    repo.write("notes.txt", "def t(): pass\n")
    (repo.root / "gone.py").unlink()
    changes = changed_functions(repo.open())
    assert names(changes) == [
        "new.py::n1",
        "new.py::K.m",
        "staged.py::b",
        "unstaged.py::a",
    ]
    assert changes.files == ("new.py", "staged.py", "unstaged.py")
    assert by_name(changes)["K.m"].supported is True  # methods are targets


def test_nothing_changed(repo: Repo) -> None:
    repo.commit(**{"m.py": "def f():\n    pass\n"})
    changes = changed_functions(repo.open())
    assert changes.functions == () and changes.files == () and changes.problems == ()


def test_pure_rename_reports_nothing_and_edited_rename_the_new_path(repo: Repo) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    repo.commit(**{"old.py": body, "keep.py": body})
    repo.branch("feature")
    repo.git.git.mv("old.py", "new.py")
    repo.git.git.mv("keep.py", "kept.py")
    repo.write("kept.py", body.replace("x + 3", "x + 33"))
    repo.commit()
    changes = changed_functions(repo.open(), "main", rev="feature")
    assert names(changes) == ["kept.py::f3"]
    assert set(changes.files) == {"kept.py", "new.py"}


def test_deleting_lines_inside_a_function_counts(repo: Repo) -> None:
    repo.commit(**{"m.py": "def f():\n    a = 1\n    b = 2\n    return a\n\n\nX = 1\n"})
    repo.write("m.py", "def f():\n    a = 1\n    return a\n\n\nX = 1\n")
    assert names(changed_functions(repo.open())) == ["m.py::f"]
    repo.write("m.py", "def f():\n    a = 1\n    b = 2\n    return a\n\n")  # X deleted
    assert names(changed_functions(repo.open())) == []


# --- what a definition is -----------------------------------------------------------------

KINDS = """\
import functools


def deco(fn):
    return fn


class C:
    LIMIT = 1

    @staticmethod
    def static(x):
        return x

    def method(self):
        return 1

    @classmethod
    def klass(cls):
        return 1

    @property
    def prop(self):
        return 1

    @prop.setter
    def prop(self, value):
        pass

    @functools.cached_property
    def cached(self):
        return 1

    async def amethod(self):
        return 1

    class Inner:
        @staticmethod
        def deep(x):
            return x


async def coro():
    return 1


@deco
@deco
def decorated(x):
    return x


def outer(x):
    def inner(y):
        return y

    class Local:
        def m(self):
            return 1

    return inner(x)


if os_name := "posix":
    def conditional():
        return 1
"""


def _touch_all(text: str) -> str:
    """Change every `return`/`pass` line (a change in every function body)."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.strip().startswith(("return", "pass")):
            line = line.rstrip("\n") + "  # touched\n"
        out.append(line)
    return "".join(out)


def test_kinds_supported_and_reasons(repo: Repo) -> None:
    repo.commit(**{"k.py": KINDS})
    repo.write("k.py", _touch_all(KINDS))
    got = by_name(changed_functions(repo.open()))
    expected = {
        "deco": ("function", True),
        "C.static": ("staticmethod", True),
        "C.method": ("method", True),
        "C.klass": ("classmethod", True),
        "C.prop": ("property", True),
        "C.cached": ("property", True),
        "C.amethod": ("async", True),
        "C.Inner.deep": ("staticmethod", False),
        "coro": ("async", True),
        "decorated": ("function", True),
        "outer": ("function", True),
        "conditional": ("function", False),
    }
    assert {q: (f.kind, f.supported) for q, f in got.items()} == expected
    assert "nested classes" in (got["C.Inner.deep"].reason or "")
    assert "module-level `if` block" in (got["conditional"].reason or "")
    # The property's setter (defined later under the same name) is the one reported.
    assert got["C.prop"].line == KINDS.splitlines().index("    @prop.setter") + 1
    assert all(f.reason is None for f in got.values() if f.supported)


def test_decorator_lines_belong_to_the_function(repo: Repo) -> None:
    repo.commit(**{"k.py": KINDS})
    repo.write("k.py", KINDS.replace("@deco\n@deco\n", "@deco\n@functools.wraps(deco)\n"))
    changes = changed_functions(repo.open())
    assert names(changes) == ["k.py::decorated"]
    lines = KINDS.splitlines()
    decorated = changes.functions[0]
    assert decorated.line == lines.index("@deco") + 1
    assert decorated.end_line == lines.index("def decorated(x):") + 2


def test_nested_function_and_local_class_report_the_outer_function(repo: Repo) -> None:
    repo.commit(**{"k.py": KINDS})
    repo.write("k.py", KINDS.replace("        return y\n", "        return -y\n"))
    assert names(changed_functions(repo.open())) == ["k.py::outer"]
    repo.write(
        "k.py",
        KINDS.replace(
            "        def m(self):\n            return 1",
            "        def m(self):\n            return 2",
        ),
    )
    assert names(changed_functions(repo.open())) == ["k.py::outer"]


def test_class_attribute_and_imports_report_nothing(repo: Repo) -> None:
    repo.commit(**{"k.py": KINDS})
    repo.write("k.py", KINDS.replace("LIMIT = 1", "LIMIT = 2").replace("functools\n", "os\n"))
    assert names(changed_functions(repo.open())) == []


def test_a_redefined_function_reports_the_definition_python_keeps(repo: Repo) -> None:
    text = "def f():\n    return 1\n\n\ndef f():\n    return 2\n"
    repo.commit(**{"m.py": text})
    repo.write("m.py", text.replace("return 1", "return 10"))  # dead code
    assert names(changed_functions(repo.open())) == []
    repo.write("m.py", text.replace("return 2", "return 20"))
    assert [(f.qualname, f.line) for f in changed_functions(repo.open()).functions] == [("f", 5)]


# --- problems, names and filters ----------------------------------------------------------


def test_syntax_error_and_non_utf8_are_problems_other_files_go_on(repo: Repo) -> None:
    repo.commit(**{"good.py": "def f():\n    return 1\n", "bad.py": "X = 1\n"})
    repo.write("good.py", "def f():\n    return 2\n")
    repo.write("bad.py", "X = 1\n\ndef broken(:\n    pass\n")
    (repo.root / "latin.py").write_bytes(b"def f():\n    return '\xe9'\n")
    changes = changed_functions(repo.open())
    assert names(changes) == ["good.py::f"]
    assert changes.files == ("bad.py", "good.py", "latin.py")
    problems = {p.path: p.message for p in changes.problems}
    assert problems["bad.py"].startswith("cannot parse bad.py: line 3, column ")
    assert "not UTF-8 text" in problems["latin.py"]
    with pytest.raises(GitError, match="not UTF-8"):
        read_text(repo.open(), "latin.py")


def test_file_names_with_spaces_and_non_ascii(repo: Repo) -> None:
    names_ = ["my dir/a file.py", "pkg/ünïcödé.py", 'odd"quote\\.py', "tab\tname.py"]
    repo.commit(**{n: "def f():\n    return 1\n" for n in names_})
    for n in names_:
        repo.write(n, "def f():\n    return 2\n")
    repo.write("日本/新しい.py", "def g():\n    pass\n")
    changes = changed_functions(repo.open())
    assert names(changes) == sorted([f"{n}::f" for n in names_] + ["日本/新しい.py::g"])
    rev = repo.commit()
    assert names(changed_functions(repo.open(), "HEAD~1", rev=rev)) == names(changes)
    assert read_text(repo.open(), "pkg/ünïcödé.py", "HEAD~1") == "def f():\n    return 1\n"


def test_every_name_git_stores_is_read_with_its_changed_lines(repo: Repo) -> None:
    """Names git quotes in a patch (a quote and a space, a newline, a tab, UTF-8) and names
    that look like pathspec magic or globs: each file's own hunks, none skipped or mixed up."""
    odd = ['we "ird" name.py', "new\nline.py", "tab\tné.py", "[ab].py", ":(top)x.py", "*.py"]
    plain = ["a.py", "b.py"]
    body = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"
    repo.commit(**{n: body for n in odd + plain})
    for n in odd:
        repo.write(n, body.replace("return 1\n\n", "return 2\n\n"))  # f only
    rev = repo.commit()
    changes = changed_functions(repo.open(), "HEAD~1", rev=rev)
    assert names(changes) == sorted(f"{n}::f" for n in odd)
    assert changes.problems == ()
    repo.git.git.mv("--", 'we "ird" name.py', 'moved "ird" name.py')
    moved = body.replace("return 1\n\n", "return 2\n\n")
    repo.write('moved "ird" name.py', moved[: moved.rindex("return 1")] + "return 3\n")
    rev = repo.commit()
    renamed = changed_functions(repo.open(), "HEAD~1", rev=rev)
    assert names(renamed) == ['moved "ird" name.py::g']  # a rename: only g's lines changed


def test_paths_filter(repo: Repo) -> None:
    text = "def f():\n    return 1\n"
    repo.commit(**{"a/x.py": text, "a/y.py": text, "ab/z.py": text, "top.py": text})
    for n in ("a/x.py", "a/y.py", "ab/z.py", "top.py"):
        repo.write(n, text.replace("1", "2"))
    r = repo.open()
    assert names(changed_functions(r, paths=["a"])) == ["a/x.py::f", "a/y.py::f"]
    assert names(changed_functions(r, paths=["./a/", "top.py"])) == [
        "a/x.py::f",
        "a/y.py::f",
        "top.py::f",
    ]
    assert names(changed_functions(r, paths=["a/y.py"])) == ["a/y.py::f"]
    assert len(changed_functions(r, paths=["."]).functions) == 4


# --- errors -------------------------------------------------------------------------------


def test_not_a_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(GitError, match="not a git repository") as info:
        open_repository(folder)
    assert str(folder) in str(info.value)


def test_open_from_a_file_in_a_subfolder(repo: Repo) -> None:
    repo.commit(**{"pkg/sub/m.py": "X = 1\n"})
    r = open_repository(repo.root / "pkg" / "sub" / "m.py")
    assert r.root == repo.root.resolve()


def test_bare_repository(tmp_path: Path) -> None:
    bare = git.Repo.init(tmp_path / "bare.git", bare=True)
    bare.close()
    with pytest.raises(GitError, match="bare"):
        open_repository(tmp_path / "bare.git")


def test_unknown_revision_and_empty_repository(repo: Repo) -> None:
    r = repo.open()
    with pytest.raises(GitError, match="no commits yet"):
        resolve(r, "HEAD")
    with pytest.raises(GitError, match="no commits yet"):
        changed_functions(r)
    sha = repo.commit(**{"m.py": "X = 1\n"})
    assert resolve(r, "HEAD") == sha == resolve(r, "main") == resolve(r, sha[:8])
    with pytest.raises(GitError, match="unknown revision 'no-such-branch'"):
        resolve(r, "no-such-branch")
    with pytest.raises(GitError, match="unknown revision '--all'"):
        resolve(r, "--all")
    with pytest.raises(GitError, match="unknown revision 'nope'"):
        changed_functions(r, "nope")


def test_unrelated_histories(repo: Repo) -> None:
    repo.commit(**{"m.py": "def f():\n    return 1\n"})
    repo.git.git.checkout("--orphan", "other")
    repo.commit(**{"m.py": "def f():\n    return 2\n"})
    r = repo.open()
    with pytest.raises(GitError, match="no common ancestor"):
        changed_functions(r, "main")
    direct = changed_functions(r, "main", use_merge_base=False)
    assert names(direct) == ["m.py::f"]


def test_git_not_installed(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_PYTHON")}
    env["PATH"] = str(empty)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from utdebug.check.gitrepo import GitError, open_repository\n"
        "try:\n"
        "    open_repository(Path(sys.argv[1]))\n"
        "except GitError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "git is not installed" in done.stdout, done.stderr


# --- snapshots and paths ------------------------------------------------------------------


def _is_read_only(path: Path) -> bool:
    return stat.S_IMODE(path.lstat().st_mode) & 0o222 == 0


def test_snapshot_of_the_working_tree(repo: Repo, tmp_path: Path) -> None:
    repo.commit(
        **{
            ".gitignore": ".venv/\n__pycache__/\n*.log\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": "X = 1\n",
            "tool.sh": "#!/bin/sh\n",
            "gone.py": "X = 1\n",
        }
    )
    (repo.root / "tool.sh").chmod(0o755)
    os.symlink("pkg/mod.py", repo.root / "link.py")
    repo.commit()
    repo.write("pkg/mod.py", "X = 2\n")  # unstaged edit
    repo.write("pkg/new.py", "Y = 1\n")  # untracked
    repo.write(".venv/lib/site.py", "Z = 1\n")  # ignored
    repo.write("pkg/__pycache__/mod.cpython-311.pyc", "junk")
    repo.write("run.log", "log")
    (repo.root / "gone.py").unlink()
    dest = tmp_path / "snap"
    dest.mkdir()
    root = snapshot(repo.open(), dest)
    assert root == dest
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())
    assert files == [
        ".gitignore",
        "link.py",
        "pkg/__init__.py",
        "pkg/mod.py",
        "pkg/new.py",
        "tool.sh",
    ]
    assert (root / "pkg/mod.py").read_text() == "X = 2\n"
    assert (root / "link.py").is_symlink() and os.readlink(root / "link.py") == "pkg/mod.py"
    assert not (root / ".git").exists()
    assert stat.S_IMODE((root / "pkg/mod.py").stat().st_mode) == 0o444
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == 0o555
    assert stat.S_IMODE((root / "pkg").stat().st_mode) == 0o555
    assert all(_is_read_only(p) for p in [root, *root.rglob("*")] if not p.is_symlink())
    with pytest.raises(GitError, match="not empty"):
        snapshot(repo.open(), root)
    remove_snapshot(root)
    assert not root.exists()
    remove_snapshot(root)  # already gone: nothing to do


def test_snapshot_of_a_commit(repo: Repo, tmp_path: Path) -> None:
    first = repo.commit(**{"pkg/mod.py": "X = 1\n", "old.py": "A = 1\n", "run.sh": "true\n"})
    (repo.root / "run.sh").chmod(0o755)
    repo.commit(**{"pkg/mod.py": "X = 2\n", "later.py": "B = 1\n"})
    repo.write("pkg/mod.py", "X = 3\n")
    root = snapshot(repo.open(), tmp_path / "a" / "b", rev=first)
    assert (root / "pkg/mod.py").read_text() == "X = 1\n"
    assert (root / "old.py").exists() and not (root / "later.py").exists()
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o444  # not executable then
    assert all(_is_read_only(p) for p in [root, *root.rglob("*")])
    head = snapshot(repo.open(), tmp_path / "head", rev="HEAD")
    assert (head / "pkg/mod.py").read_text() == "X = 2\n"
    assert stat.S_IMODE((head / "run.sh").stat().st_mode) == 0o555
    remove_snapshot(root)
    remove_snapshot(head)
    assert not root.exists() and not head.exists()
    with pytest.raises(GitError, match="unknown revision"):
        snapshot(repo.open(), tmp_path / "x", rev="nope")


def test_relative_path(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit(**{"pkg/sub/m.py": "X = 1\n"})
    r = repo.open()
    monkeypatch.chdir(repo.root / "pkg")
    assert relative_path(r, Path("sub/m.py")) == "pkg/sub/m.py"
    assert relative_path(r, Path("../pkg/./sub/m.py")) == "pkg/sub/m.py"
    assert relative_path(r, repo.root / "pkg/sub/m.py") == "pkg/sub/m.py"
    outside = tmp_path / "elsewhere.py"
    with pytest.raises(GitError, match="outside the git working tree"):
        relative_path(r, outside)
    with pytest.raises(GitError, match="outside"):
        relative_path(r, Path("../../elsewhere.py"))
