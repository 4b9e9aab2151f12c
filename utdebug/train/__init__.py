"""UTGen's training data: failing unit tests with rationales, built from gold code.

``utdebug train data`` (:mod:`utdebug.train_cmd`) runs the pipeline:

- :mod:`~utdebug.train.sources`: problems with a description and gold code (MBPP+,
  HumanEval+, Tulu-3, any JSONL/Parquet table), :mod:`~utdebug.train.tulu` the Tulu-3 filter;
- :mod:`~utdebug.train.decontam`: problems that overlap an evaluation split are dropped;
- :mod:`~utdebug.train.pipeline`: per problem, stage I (corrupted versions of the gold code),
  stage II (failing unit-test inputs, labelled by the gold code in the sandbox), stage III
  (post-hoc rationales) and the SFT target; :mod:`~utdebug.train.settings` what determines a
  problem's record, :mod:`~utdebug.train.texts` the text (literals, targets read back);
- :mod:`~utdebug.train.output`: SFT shards, the validation file, the dataset card,
  :mod:`~utdebug.train.trl_config` the training configurations;
- :mod:`~utdebug.train.driver`: the run (resumable records, progress, counts).

Nothing here imports Textual; models are reached only through :mod:`utdebug.agents`.
"""

from __future__ import annotations
