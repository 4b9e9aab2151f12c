"""The interactive front end: a Textual app over one engine :class:`~utdebug.engine.Session`.

``utdebug.tui.app.DebugApp`` is the app; this package is the only part of utdebug that imports
Textual, and it never imports litellm (the model is built by the caller and passed in).

What the app shows is one :class:`~utdebug.tui.state.AppState` (with the one phase machine,
:class:`~utdebug.tui.state.Phase`); the panels are drawn from it through the table in
:mod:`utdebug.tui.panels`, and the session file is written from it. ``DebugApp`` (``app``: the
session's driving, review, search, the keys) stands on ``base.AppBase`` (state, layout,
drawing) and holds plain objects: ``engine_events.EngineEvents`` (one handler per event
type), ``changes.PersonChanges`` (a person's changes) and ``driver.SessionDriver`` (run, pause,
step, cancel); the app's keys hand over to them.

Message flow (workers never touch widgets):

- the session runs in an async worker (group ``session``); its listener posts every engine
  event as an :class:`~utdebug.tui.messages.EngineEvent`; its handler folds it into the state
  and redraws the panels;
- a person's changes (edit / add / delete a test, roll back) run engine coroutines in workers
  (group ``person``) and post :class:`~utdebug.tui.messages.PersonDone` or
  :class:`~utdebug.tui.messages.PersonFailed`; the engine's own events redraw the panels;
- reviewing an edit by hand: the session's reviewer posts a
  :class:`~utdebug.tui.messages.ReviewRequested` with a future and waits on it; the handler
  opens the review dialog, and ``y``/``n`` resolve the future.
"""
