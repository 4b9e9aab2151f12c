"""The interactive front end: a Textual app over one engine :class:`~utdebug.engine.Session`.

``utdebug.tui.app.DebugApp`` is the app; this package is the only part of utdebug that imports
Textual, and it never imports litellm (the model is built by the caller and passed in).

Message flow (workers never touch widgets):

- the session runs in an async worker (group ``session``); its listener posts every engine
  event as an :class:`~utdebug.tui.messages.EngineEvent`; the app's handler updates its state
  and the panels;
- a person's changes (edit / add / delete a test, roll back) run engine coroutines in workers
  (group ``person``) and post :class:`~utdebug.tui.messages.PersonDone` or
  :class:`~utdebug.tui.messages.PersonFailed`; the engine's own events redraw the panels;
- reviewing an edit by hand: the session's reviewer posts a
  :class:`~utdebug.tui.messages.ReviewRequested` with a future and waits on it; the handler
  opens the review dialog, and ``y``/``n`` resolve the future.
"""
