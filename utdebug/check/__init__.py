"""``utdebug check``: generated tests against the functions a git change touches, for CI.

The run, stage by stage (each stage's value is frozen):

- :mod:`utdebug.check.targets`: the functions to check (named, or touched by a change:
  :mod:`utdebug.check.gitrepo` and :mod:`utdebug.check.definitions`, with the functions that
  read a changed module constant).
- :mod:`utdebug.check.loading`: the repository's read-only copies at both revisions, and how a
  version is loaded (imported by its name, at one path for both versions).
- :mod:`utdebug.check.session`: with a model, the function's generated tests
  (:mod:`utdebug.check.results`, :mod:`utdebug.check.cache`, :mod:`utdebug.check.fixes`).
- :mod:`utdebug.check.differ`: the comparison with the base version: both versions
  (:mod:`utdebug.check.versions`), seeds and inputs, two runs of each
  (:mod:`utdebug.check.runs`), the comparison (:mod:`utdebug.check.comparison`).
- :mod:`utdebug.check.review`: the run that chains them; :mod:`utdebug.check.report` the
  report and exit codes, :mod:`utdebug.check.formats` human, JSON, JUnit, GitHub and SARIF
  output; :mod:`utdebug.check.options` what a run is asked to do, its model, ``CheckError``.

See ``docs/check.md``.
"""
