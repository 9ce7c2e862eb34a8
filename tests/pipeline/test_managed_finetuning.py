"""Managed fine-tuning quotes: recorded per-token prices × the job's training tokens."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.pipeline.recommend.managed import (
    COLUMNS,
    MANAGED_CSV,
    managed_prices,
    managed_quotes,
    read_managed,
)

PROVENANCE = MANAGED_CSV.parent / "managed_finetuning" / "PROVENANCE.md"


def test_every_row_has_a_source_and_a_date() -> None:
    rows = managed_prices()
    assert len(rows) == 4
    provenance = PROVENANCE.read_text(encoding="utf-8")
    for r in rows:
        assert r.source_url.startswith("https://")
        assert r.source_url in provenance
        assert isinstance(r.read_on, date)
        if r.source_date is None:
            assert "undated" in r.note


def test_llama_8b_lora_by_size_band_two_services() -> None:
    # 100M training tokens: Ori $0.46/1M (up to 10B) = $46.00; Fireworks $0.50/1M (up to 16B)
    # = $50.00. Cheapest first.
    q = managed_quotes("meta-llama/Llama-3.1-8B", 8.03, "lora", 100e6)
    assert [(x.service, x.matched_by) for x in q] == [("ori", "size_band"),
                                                      ("fireworks", "size_band")]
    assert q[0].cost_usd == pytest.approx(46.00)
    assert q[1].cost_usd == pytest.approx(50.00)
    assert q[0].source_url == "https://docs.ori.co/fine-tuning/billing"
    assert q[1].source_url == "https://fireworks.ai/pricing"
    assert any("validation tokens" in n for n in q[0].notes)
    assert not any("validation tokens" in n for n in q[1].notes)


def test_qlora_is_priced_as_lora() -> None:
    q = managed_quotes("meta-llama/Llama-3.1-8B", 8.03, "qlora", 100e6)
    assert [x.cost_usd for x in q] == pytest.approx([46.00, 50.00])
    assert all(x.method == "lora" for x in q)
    assert any("priced as the service's lora" in n for n in q[0].notes)


def test_the_model_row_wins_over_the_size_band() -> None:
    # Mixtral 8x7B (46.7B) sits in Fireworks' 16.1-80B band ($3.00) but the page prices it
    # apart at $2.00/1M: 10M tokens = $20.00, not $30.00. Ori's band stops at 10B.
    q = managed_quotes("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, "lora", 10e6)
    assert len(q) == 1
    assert (q[0].service, q[0].matched_by, q[0].row.label) == (
        "fireworks", "model_id", "mistralai/Mixtral-8x7B*")
    assert q[0].cost_usd == pytest.approx(20.00)


def test_the_middle_band() -> None:
    q = managed_quotes("Qwen/Qwen2.5-32B", 32.8, "lora", 50e6)
    assert [(x.service, x.row.label) for x in q] == [("fireworks", "16.1-80B")]
    assert q[0].cost_usd == pytest.approx(150.00)


@pytest.mark.parametrize(("model", "params_b", "method"), [
    ("meta-llama/Llama-3.1-8B", 8.03, "full"),    # no full fine-tuning price recorded
    ("meta-llama/Llama-3.1-8B", 8.03, "dora"),    # a method no service sells
    ("meta-llama/Llama-3.1-405B", 405.0, "lora"),  # above every band
    ("some/model-16.05B", 16.05, "lora"),          # between Fireworks' printed bands
])
def test_no_match_is_an_empty_list(model: str, params_b: float, method: str) -> None:
    assert managed_quotes(model, params_b, method, 1e6) == []


def test_bad_job_inputs_are_refused() -> None:
    with pytest.raises(UserInputError):
        managed_quotes("m", 0.0, "lora", 1e6)
    with pytest.raises(UserInputError):
        managed_quotes("m", 8.0, "lora", float("nan"))


def _csv(tmp_path: Path, *rows: str) -> Path:
    p = tmp_path / "managed.csv"
    p.write_text("\n".join([",".join(COLUMNS), *rows]) + "\n", encoding="utf-8")
    return p


def test_the_minimum_charge_applies(tmp_path: Path) -> None:
    # Test data, not a recorded price: $1/1M with a $4 minimum. 1M tokens -> $4; 10M -> $10.
    prices = tuple(read_managed(_csv(
        tmp_path, "svc,,,20,lora,1.00,4,yes,,https://example.com/p,,2026-12-02,undated")))
    small = managed_quotes("x/y", 7.0, "lora", 1e6, prices)
    assert (small[0].token_cost_usd, small[0].cost_usd) == pytest.approx((1.0, 4.0))
    assert any("minimum charge" in n for n in small[0].notes)
    assert managed_quotes("x/y", 7.0, "lora", 10e6, prices)[0].cost_usd == pytest.approx(10.0)


@pytest.mark.parametrize("row", [
    "svc,a/b*,,20,lora,1,,yes,,https://example.com,,2026-12-02,both pattern and band",
    "svc,,,,lora,1,,yes,,https://example.com,,2026-12-02,neither",
    "svc,,,20,qlora,1,,yes,,https://example.com,,2026-12-02,unknown method",
    "svc,,,20,lora,-1,,yes,,https://example.com,,2026-12-02,negative price",
    "svc,,,20,lora,1,,no,,https://example.com,,2026-12-02,dataset tokens once",
    "svc,,,20,lora,1,,yes,,,,2026-12-02,no source",
    "svc,,,20,lora,1,,yes,,https://example.com,,,no date",
])
def test_bad_rows_are_refused(tmp_path: Path, row: str) -> None:
    with pytest.raises(DataError, match=r"managed\.csv:2"):
        read_managed(_csv(tmp_path, row))
