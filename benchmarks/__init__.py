"""The benchmark front end (``utdebug bench``): one module per mode, listed in ``modes.MODES``.

Splits and private tests are the data layer's (:mod:`utdebug.data`); run folders, records and
summaries the run layer's (:mod:`utdebug.runs`); tables are printed by ``report``. Speed
benchmarks are scripts under ``benchmarks/perf/``. See docs/architecture.md.
"""
