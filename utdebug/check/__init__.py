"""``utdebug check``: generated tests against the functions a git change touches, for CI.

- :mod:`utdebug.check.report`: the report (functions, their tests, findings) and exit codes.
- :mod:`utdebug.check.gitrepo`: the repository (gitpython): changed functions, snapshots.
- :mod:`utdebug.check.formats`: human, JSON, JUnit XML, GitHub annotations and SARIF output.
- :mod:`utdebug.check.runner`: the run: sandbox with the module's context, engine, cache, fixes.

See ``docs/check.md``.
"""
