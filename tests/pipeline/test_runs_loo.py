"""Leave one out on the published measurements, each source one user (bench/runs_loo.py prints
the table): the correction lowers the held-back rows' error on their own stack and leaves the
rows of other stacks exactly as they were."""

from __future__ import annotations

import statistics

from gpuscout.pipeline.measured.loo import hold_back, publication, rows, table

HELD = hold_back(rows())
LINES = {line.user: line for line in table(HELD)}


def test_sources_are_publications() -> None:
    assert publication("modelscope/ms-swift docs/source_en/LLM/Benchmark.md section 'Tuners'") \
        == "modelscope/ms-swift docs/source_en/LLM/Benchmark.md"
    assert publication("huggingface/peft@5d602fdb method_comparison/MetaMathQA/results/"
                       "lora--llama-3.2-3B-rank32.json (train_info...)") \
        == "huggingface/peft@5d602fdb method_comparison/MetaMathQA"
    assert len(LINES) == 8  # seven sources with tokens/s, and all of them


def test_held_back_rows_of_the_same_stack_get_closer() -> None:
    same = [h for h in HELD if h.runs]
    assert len(same) == 56
    assert statistics.median(h.error_after for h in same) < \
        0.6 * statistics.median(h.error_before for h in same)
    assert statistics.fmean(h.error_after for h in same) < \
        0.2 * statistics.fmean(h.error_before for h in same)
    for line in LINES.values():  # every source with evidence: lower mean error
        if line.corrected:
            assert line.mean_after is not None and line.mean_before is not None
            assert line.mean_after < line.mean_before, line.user


def test_rows_of_other_stacks_are_never_changed() -> None:
    others = [h for h in HELD if not h.runs]
    assert len(others) == 20
    assert all(h.factor == 1.0 and h.error_after == h.error_before for h in others)
    assert LINES["all sources"].others_changed == 0
