"""Benchmarks: datasets, the evaluator on private tests, and run records.

``utdebug.data.datasets`` loads MBPP+Fix (Hard), MBPP+Fix and HE+Fix;
``utdebug.benchmarks.evaluator`` runs a program on a problem's private tests in the sandbox;
``utdebug.runs.records`` writes ``samples.jsonl`` and recomputes ``summary.json``.
Speed benchmarks are scripts under ``benchmarks/perf/``.
"""
