"""A person's changes to the session (edit, add, delete a test, roll back, undo) and what the
app writes from it (write back, patch, pytest file, the clipboard)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.widgets import DataTable

from utdebug.engine.execution import TestRun
from utdebug.engine.model import UnitTest, code_id
from utdebug.engine.program import Raises
from utdebug.engine.session import Session
from utdebug.pytest_export import export_pytest, render_pytest
from utdebug.sandbox.values import Opaque
from utdebug.tui.details import TestDetail, TestDetailScreen
from utdebug.tui.format import actual_text, passing, plural, safe_repr, verdict_status
from utdebug.tui.messages import PersonDone, PersonFailed
from utdebug.tui.screens import (
    AddTestScreen,
    Edited,
    EditExpectedScreen,
    NewProgram,
    NewTest,
    ProgramTestScreen,
    RollbackScreen,
    WriteBackScreen,
)
from utdebug.tui.synth import SynthRow
from utdebug.tui.transcript import Transcript
from utdebug.tui.widgets import InputsPanel, TestsPanel
from utdebug.workspace import LoadedFunction, WorkspaceError
from utdebug.writeback import changed_on_disk, export_patch, function_diff, write_back

if TYPE_CHECKING:
    from utdebug.tui.base import AppBase


@dataclass(frozen=True, slots=True)
class Undo:
    """A person's change that can be undone: what it was, and how to undo it."""

    what: str
    revert: Callable[[Session], Awaitable[TestRun]]


class PersonChanges:
    """A person's changes: each runs an engine coroutine in a worker of the app. A plain
    object the app holds (:attr:`~utdebug.tui.app.DebugApp.changes`); the app's ``action_*``
    methods and message handlers hand their work to it."""

    def __init__(self, app: AppBase) -> None:
        self.app = app

    def _idle_session(self) -> Session | None:
        """The session, when a person may change it now (else say why and return None)."""
        session = self.app.session
        if session is None:
            self.app._tell("no session yet", "warning")
            return None
        if not session.idle or self.app.pending_review is not None:
            self.app._tell("pause first (p)", "warning")
            return None
        if self.app.person_busy:
            self.app._tell("wait: the last change is still being applied", "warning")
            return None
        return session

    def _selected_test(self, originals: bool = True) -> UnitTest | None:
        """The selected test (an original one only when ``originals``: it can be read,
        copied and run, not changed)."""
        test_id = self.app.query_one(TestsPanel).selected_id()
        for t in self.app.state.tests:
            if t.id == test_id:
                return t
        for t in self.app.state.originals:
            if t.id == test_id:
                if originals:
                    return t
                self.app._tell(
                    f"test #{t.id} is an original test (one of the first, kept to show whether "
                    "the fix holds): it is not among the session's tests now; a adds a test",
                    "warning",
                )
                return None
        self.app._tell("no test selected", "warning")
        return None

    def _test_to_change(self) -> UnitTest | None:
        """The selected session test, when a person may change it now (else say why)."""
        if self._idle_session() is None:
            return None
        return self._selected_test(originals=False)

    def _person(
        self,
        what: str,
        work: Callable[[Session], Awaitable[TestRun]],
        undo: Callable[[Session], Undo | None] | None = None,
    ) -> None:
        """Run a person's change in a worker; the engine's events redraw the panels.

        ``undo`` is called with the session once the change is made and returns how to undo
        it (pushed on :attr:`undo_stack`; ``u`` pops it)."""
        session = self._idle_session()
        if session is None:
            return
        self.app.person_busy += 1

        async def apply() -> None:
            try:
                run = await work(session)
            except Exception as exc:  # SessionBusy, a gone test or version, a sandbox failure
                reason = exc.args[0] if len(exc.args) == 1 else str(exc)
                self.app.post_message(PersonFailed(what, str(reason)))
            else:
                step = undo(session) if undo is not None else None
                if step is not None:
                    self.app.undo_stack.append(step)
                self.app.post_message(PersonDone(what, run.passed, run.total))

        self.app.run_worker(apply(), name=what, group="person", exit_on_error=False)

    def person_done(self, message: PersonDone) -> None:
        self.app.person_busy = max(self.app.person_busy - 1, 0)
        self.app._save()
        if message.total == 0 and message.what.startswith("test #"):  # a re-run: said as is
            self.app._tell(message.what)
            return
        again = " (u undoes)" if self.app.undo_stack and not message.what.startswith("undo") else ""
        self.app._tell(f"{message.what}: {passing(message.passed, message.total)} now{again}")

    def person_failed(self, message: PersonFailed) -> None:
        self.app.person_busy = max(self.app.person_busy - 1, 0)
        self.app._tell(f"{message.what} failed: {message.error}", "error")

    def edit_test(self) -> None:
        test = self._test_to_change()
        if test is None:
            return
        test_id = test.id

        before = test
        if test.program:
            self._edit_program(test)
            return

        def edited(result: Edited | None) -> None:
            if result is not None:
                value = result.value
                self._person(
                    f"test #{test_id} edited",
                    lambda s: s.set_expected(test_id, value),
                    lambda s: Undo(
                        f"the edit of test #{test_id}", lambda s2: s2.restore_test(before)
                    ),
                )

        self.app.push_screen(
            EditExpectedScreen(test_id, test.call, test.expected, self.app.state.code), edited
        )

    def _edit_program(self, test: UnitTest) -> None:
        """A person edits a test with setup: its setup, call, expected outcome and follow-up."""
        test_id, before = test.id, test

        def edited(result: NewProgram | None) -> None:
            if result is not None:
                r = result
                self._person(
                    f"test #{test_id} edited",
                    lambda s: s.set_program(test_id, r.setup, r.call, r.expected, r.then),
                    lambda s: Undo(
                        f"the edit of test #{test_id}", lambda s2: s2.restore_test(before)
                    ),
                )

        shown = NewProgram(test.setup or "", test.call, test.expected, test.then)
        title = f"Test #{test_id}: setup, call and expected outcome"
        self.app.push_screen(
            ProgramTestScreen(title, self._target_name(), shown, self.app.state.code), edited
        )

    def _target_name(self) -> str:
        task = self.app.debug_task
        return f"{task.class_name}.{task.entry_point}" if task.class_name else task.entry_point

    def _add_program(self) -> None:
        def added(result: NewProgram | None) -> None:
            if result is not None:
                r = result

                def undo(s: Session) -> Undo | None:
                    added = s.tests[-1].id if s.tests else None
                    if added is None:
                        return None
                    return Undo(f"adding test #{added}", lambda s2: s2.delete_test(added))

                self._person(
                    "test added",
                    lambda s: s.add_program_test(r.setup, r.call, r.expected, r.then),
                    undo,
                )

        title = f"Add a test of {self._target_name()}"
        self.app.push_screen(
            ProgramTestScreen(title, self._target_name(), None, self.app.state.code), added
        )

    def add_test(self) -> None:
        if self._idle_session() is None:
            return
        if self.app.debug_task.program:
            self._add_program()
            return

        def added(result: NewTest | None) -> None:
            if result is not None:
                args, expected = result.args, result.expected

                def undo(s: Session) -> Undo | None:
                    added = s.tests[-1].id if s.tests else None
                    if added is None:
                        return None
                    return Undo(f"adding test #{added}", lambda s2: s2.delete_test(added))

                self._person("test added", lambda s: _add(s, args, expected, "person"), undo)

        self.app.push_screen(
            AddTestScreen(self.app.debug_task.entry_point, self.app.state.code), added
        )

    def _synth_row(self) -> SynthRow | None:
        """The selected synthesised input, when a person may make a test of it now (else
        say why and return None)."""
        if not self.app.model_free:
            self.app._tell(
                "only a session without a model lists synthesised inputs (utdebug debug "
                "FILE::FUNCTION --model none)",
                "warning",
            )
            return None
        if self.app.state.synth is None:
            self.app._tell("the inputs are being synthesised: a moment", "warning")
            return None
        row = self.app.query_one(InputsPanel).selected()
        if row is None:
            self.app._tell("no synthesised input to judge: a adds a test by hand", "warning")
            return None
        made = self.app.state.synth_tests.get(row.number)
        if made is not None and any(t.id == made for t in self.app.state.tests):
            self.app._tell(f"input {row.number} is test #{made} already (e edits it)", "warning")
            return None
        if self._idle_session() is None:
            return None
        return row

    def _test_of(self, row: SynthRow, expected: Any, what: str) -> None:
        """Make a session test of the synthesised input ``row`` expecting ``expected``."""

        def undo(s: Session) -> Undo | None:
            added = s.tests[-1].id if s.tests else None
            if added is None:
                return None
            self.app.state.synth_tests[row.number] = added
            self.app.call_later(self.app._draw, "inputs")
            return Undo(f"adding test #{added}", lambda s2: s2.delete_test(added))

        self._person(what, lambda s: _add(s, row.args, expected, row.input_source), undo)

    def mark_wrong(self) -> None:
        """The selected synthesised input's outcome is wrong: a person writes the expected
        value, and the input becomes a test (``input_source`` ``synth:<source>``)."""
        row = self._synth_row()
        if row is None:
            return

        def edited(result: Edited | None) -> None:
            if result is not None:
                self._test_of(row, result.value, f"input {row.number} marked wrong: test added")

        self.app.push_screen(
            EditExpectedScreen(
                0,
                row.call,
                row.value,
                self.app.state.code,
                title=f"What should synthesised input {row.number} give?",
                now=("the code in force gives: ", row.outcome),
                prefill=safe_repr(row.value) if row.status == "ok" else "",
                raises=True,
            ),
            edited,
        )

    def keep_test(self) -> None:
        """The selected synthesised input's outcome is right: keep it as a test."""
        row = self._synth_row()
        if row is None:
            return
        if row.status != "ok" or isinstance(row.value, Opaque):
            self.app._tell(
                f"input {row.number}: the code {row.outcome}, not a value a test can expect; "
                "m writes what it should give",
                "warning",
            )
            return
        self._test_of(row, row.value, f"input {row.number} kept as a test")

    def delete_test(self) -> None:
        test = self._test_to_change()
        if test is None:
            return
        test_id = test.id
        index = next(i for i, t in enumerate(self.app.state.tests) if t.id == test_id)
        self._person(
            f"test #{test_id} deleted",
            lambda s: s.delete_test(test_id),
            lambda s: Undo(f"deleting test #{test_id}", lambda s2: s2.restore_test(test, index)),
        )

    def copy(self, what: str) -> None:
        """Copy the selected test's ``call``, ``expected`` value or the whole ``test`` as
        pytest to the terminal's clipboard (OSC 52); with the transcript focused, the entry
        under its cursor (whichever copy key)."""
        transcript = self.app.query_one(Transcript)
        if self.app.focused is transcript:
            text = transcript.cursor_text()
            if text is None:
                self.app._tell("the transcript is empty: nothing to copy", "warning")
                return
            self.app.copy_to_clipboard(text)
            self.app.copied = text
            lines = text.count("\n") + 1
            self.app._tell(
                f"copied the transcript entry under the cursor ({plural(lines, 'line')})"
            )
            return
        test = self._selected_test()
        if test is None:
            return
        if what == "call":
            text = test.call
        elif what == "expected":
            text = safe_repr(test.expected)
        else:
            text = self._pytest_text(test)
        self.app.copy_to_clipboard(text)
        self.app.copied = text
        self.app._tell(f"copied the {'test' if what == 'test' else what} of test #{test.id}")

    def _pytest_text(self, test: UnitTest) -> str:
        if self.app.loaded is not None:
            try:
                return render_pytest(self.app.loaded, [test]).text
            except (WorkspaceError, OSError):
                pass
        entry = self.app.debug_task.entry_point
        return (
            f"def test_{entry}_{test.id}():\n    assert {test.call} == {safe_repr(test.expected)}\n"
        )

    def rerun_test(self) -> None:
        """Run the selected test again on the code in force and say what it does."""
        test = self._selected_test()
        if test is None:
            return
        code, task, settings = self.app.state.code, self.app.debug_task, self.app.settings

        async def rerun() -> None:
            try:
                run = await self.app.executor.run_tests(
                    task, code, [test], settings.variant, settings.limits
                )
            except Exception as exc:  # the sandbox failed: say it, the app stays
                self.app.post_message(PersonFailed(f"re-running test #{test.id}", str(exc)))
                return
            (result,) = run.results
            status = verdict_status(result.verdict.value, result.detail)
            said = actual_text(status, result.detail)
            self.app.post_message(PersonDone(f"test #{test.id} on the code in force: {said}", 0, 0))

        self.app.person_busy += 1
        self.app.run_worker(rerun(), name="rerun", group="person", exit_on_error=False)

    def rollback(self) -> None:
        session = self._idle_session()
        if session is None:
            return
        versions = list(session.versions)
        labels = []
        current: int | None = None
        for i, v in enumerate(versions):
            label = f"version {i}: round {v.round}, code {code_id(v.code)}"
            if i == 0:
                label += " (the given code)"
            if v.code == self.app.state.code:
                label += "  ← in force"
                current = i
            labels.append((label, v.code))

        def chosen(index: int | None) -> None:
            if index is not None and current is not None and index != current:
                back = current
                self._person(
                    f"rolled back to version {index}",
                    lambda s: s.rollback(index),
                    lambda s: Undo(
                        f"the roll back to version {index}", lambda s2: s2.rollback(back)
                    ),
                )
            elif index is not None:
                self._person(f"rolled back to version {index}", lambda s: s.rollback(index))

        self.app.push_screen(RollbackScreen(labels, current), chosen)

    def undo(self) -> None:
        if not self.app.undo_stack:
            self.app._tell("nothing to undo", "warning")
            return
        if self._idle_session() is None:
            return
        step = self.app.undo_stack.pop()
        self._person(f"undo {step.what}", step.revert)

    def row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.app.query_one(TestsPanel).table:
            self.show_test()

    def test_detail(self, test: UnitTest) -> TestDetail:
        """Everything the detail view shows about ``test``."""
        r = self.app.state.records
        return TestDetail(
            test, r.actual.get(test.id), r.votes.get(test.id), r.history.get(test.id, [])
        )

    def show_test(self) -> None:
        test = self._selected_test()
        if test is None:
            return

        def chosen(what: str | None) -> None:
            if what == "edit":
                self.edit_test()
            elif what == "delete":
                self.delete_test()

        editable = any(t.id == test.id for t in self.app.state.tests)
        self.app.push_screen(TestDetailScreen(self.test_detail(test), editable=editable), chosen)

    def _fix_diff(self) -> tuple[LoadedFunction, str] | None:
        """The source file and the diff the fix makes to it (else say why and return None)."""
        loaded = self.app.loaded
        if loaded is None:
            self.app._tell(
                "no source file: debug a function from a file (utdebug debug file.py::name)",
                "warning",
            )
            return None
        if self.app.state.code.strip() == self.app.debug_task.code.strip():
            self.app._tell("nothing to write: the code in force is the given code", "warning")
            return None
        from utdebug.agents.sim import SIM_HELPER

        if SIM_HELPER.search(self.app.state.code):
            self.app._tell(
                "the code in force holds the simulated model's stand-ins (SIMULATED edits, "
                "not code): it is never written back",
                "warning",
            )
            return None
        changed = changed_on_disk(loaded)
        if changed is not None:  # said before a diff against the old text is shown
            self.app._tell(changed, "error")
            return None
        try:
            diff = function_diff(loaded, self.app.state.code)
        except WorkspaceError as exc:
            self.app._tell(str(exc), "error")
            return None
        if not diff:
            self.app._tell(
                f"nothing to write: {loaded.path.name} already holds this code", "warning"
            )
            return None
        return loaded, diff

    def write_back(self) -> None:
        found = self._fix_diff()
        if found is None:
            return
        loaded, diff = found
        code = self.app.state.code

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self.app._tell("not written")
                return
            try:
                result = write_back(loaded, code, backup=True)
            except WorkspaceError as exc:
                self.app._tell(str(exc), "error")
                return
            self.app.loaded = result.loaded
            self.app._tell(f"wrote the fix to {result.path}; the original is in {result.backup}")

        self.app.push_screen(WriteBackScreen(str(loaded.path), diff), confirmed)

    def export_patch(self) -> None:
        found = self._fix_diff()
        if found is None:
            return
        loaded, _diff = found
        out = loaded.path.with_name(loaded.path.name + ".utdebug.patch")
        try:
            export_patch(loaded, self.app.state.code, out)
        except (WorkspaceError, OSError) as exc:
            self.app._tell(f"cannot write {out}: {exc}", "error")
            return
        self.app._tell(f"wrote the patch to {out}")

    def export_tests(self) -> None:
        loaded = self.app.loaded
        if loaded is None:
            self.app._tell(
                "no source file: the exported tests import the function from it", "warning"
            )
            return
        # Every test the table shows: the first tests that new ones replaced (those that
        # showed the bug) as well as the session's.
        tests = [*self.app.state.originals, *self.app.state.tests]
        if not tests:
            self.app._tell("no tests to export yet", "warning")
            return
        out = loaded.path.with_name(f"test_{loaded.entry_point}_utdebug.py")
        try:
            rendered = render_pytest(loaded, tests)
            export_pytest(loaded, tests, out)
        except (WorkspaceError, OSError) as exc:
            self.app._tell(f"cannot write {out}: {exc}", "error")
            return
        skipped = f", {rendered.skipped} skipped (not literals)" if rendered.skipped else ""
        self.app._tell(f"exported {plural(rendered.exported, 'test')} to {out}{skipped}")


def _add(session: Session, args: tuple[Any, ...], expected: Any, source: str) -> Awaitable[TestRun]:
    """A person's test of literal arguments: a value to expect, or an exception the call
    should raise (a :class:`Raises`: a test with no setup, as the engine runs those)."""
    if isinstance(expected, Raises):
        call = f"{session.task.entry_point}({', '.join(repr(a) for a in args)})"
        return session.add_program_test("", call, expected, input_source=source)
    return session.add_test(args, expected, input_source=source)
