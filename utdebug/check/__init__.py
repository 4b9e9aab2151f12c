"""``utdebug check``: generated tests against the functions a git change touches, for CI.

- :mod:`utdebug.check.report`: the report (functions, their tests, findings) and exit codes.
- :mod:`utdebug.check.gitrepo`: the repository (gitpython): changed functions, snapshots.
- :mod:`utdebug.check.formats`: human, JSON, JUnit XML, GitHub annotations and SARIF output.
- :mod:`utdebug.check.options`: what a run is asked to do, its model, and :class:`CheckError`.
- :mod:`utdebug.check.targets`: the functions to check (named, or touched by a change).
- :mod:`utdebug.check.review`: the run: sandbox with the module's context, engine, cache, fixes.
- :mod:`utdebug.check.results`: a function's session (or cache entry) as its report.
- :mod:`utdebug.check.differ`: each function against its base version on synthesised inputs
  (the whole check without a model), and the accept file.

See ``docs/check.md``.
"""
