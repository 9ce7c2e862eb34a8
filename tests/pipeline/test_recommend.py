"""Recommendations on fixed warehouse data: the memory wall, NVLink, billing, spot."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from offer_factory import make_offer

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.core.models import Interconnect, PricingModel
from gpuscout.pipeline.recommend import RecommendRequest, recommend, tokens_from_options
from gpuscout.pipeline.recommend.rank import CHECKPOINT_WRITE_GBPS
from gpuscout.pipeline.recommend.request import RESTART_S
from gpuscout.sizing.job import Job
from gpuscout.sizing.plan import NodeShape, plan_node
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, replace_provider_profiles, transaction

NOW = datetime(2026, 1, 2, tzinfo=UTC)
CAT = load_catalog()


def _offer(provider: str, key: str, gpu_id: str, n: int, price: float, **kw):
    spec = CAT.gpu(gpu_id)
    link = Interconnect.SINGLE if n == 1 else spec.node_interconnect
    return make_offer(key, provider=provider, price=price, gpu_count=n, gpu_id=gpu_id,
                      gpu_label=gpu_id, vram_gb=spec.vram_gb, memory_type=spec.memory_type,
                      form_factor=spec.form_factor, interconnect=link,
                      interconnect_gbps=spec.nvlink_gbps if n > 1 else None, **kw)


def _warehouse(path: Path, offers: list, profiles: list[dict]) -> None:
    with connect(path) as con:
        for provider in sorted({o.provider for o in offers}):
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in offers if o.provider == provider]),
                             provider=provider, run_id="fixture", complete=True)
        replace_provider_profiles(con, pa.Table.from_pylist(profiles))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "w.duckdb"


def _recommend(db: Path, model: str, method: str, tokens: int, *, batch_size: int = 1,
               **req):
    arch, job, _ = Job(model=model, method=method, batch_size=batch_size).resolve()
    with connect(db, read_only=True) as con:
        return recommend(con, arch, job, RecommendRequest(tokens=tokens, now=NOW, **req))


PER_SECOND = {"provider": "persec", "billing_increment_s": 1}
PER_HOUR = {"provider": "perhour", "billing_increment_s": 3600}


def test_70b_full_never_gets_a_single_gpu_and_nvlink_beats_pcie(db: Path) -> None:
    offers = [
        _offer("persec", "1x-b300", "b300-sxm-288gb", 1, 6.0),
        _offer("persec", "1x-h200", "h200-sxm-141gb", 1, 3.5),
        _offer("persec", "8x-b200", "b200-sxm-180gb", 8, 48.0),
        _offer("persec", "8x-a100-sxm", "a100-sxm-80gb", 8, 14.0),
        _offer("persec", "8x-a100-pcie", "a100-pcie-80gb", 8, 14.0),
    ]
    _warehouse(db, offers, [PER_SECOND])
    rec = _recommend(db, "meta-llama/Llama-3.1-70B", "full", 10**8)
    assert rec.ranked, "an 8x B200 node holds a 70B full fine-tune with ZeRO-3"
    assert all(r.gpus_per_node * r.nodes > 1 for r in rec.ranked)
    singles = {r.offer_key: r.rejected_because for r in rec.rejected_cheaper}
    assert singles["1x-h200"].startswith("memory wall")
    # equal price, same A100 chips: the NVSwitch node finishes sooner, so it ranks higher
    rec13 = _recommend(db, "meta-llama/Llama-2-13b-hf", "full", 10**8, objective="time")
    order = [r.offer_key for r in rec13.ranked]
    assert order.index("8x-a100-sxm") < order.index("8x-a100-pcie")
    by_key = {r.offer_key: r for r in rec13.ranked}
    assert by_key["8x-a100-sxm"].expected_hours < by_key["8x-a100-pcie"].expected_hours
    assert by_key["8x-a100-sxm"].total_usd < by_key["8x-a100-pcie"].total_usd
    assert any("PCIe between GPUs" in reason for reason in by_key["8x-a100-pcie"].reasons)


def test_7b_qlora_ranks_a_single_24_to_48_gb_card_first_on_cost(db: Path) -> None:
    # prices as listed in the bundled snapshots (RunPod community RTX 4090 and L40S, Lambda-era
    # A100/H100) and AWS's g4dn.xlarge on-demand list price for the T4
    offers = [
        _offer("persec", "1x-4090", "rtx-4090-24gb", 1, 0.34),
        _offer("persec", "1x-l40s", "l40s-48gb", 1, 0.79),
        _offer("persec", "1x-a100", "a100-sxm-80gb", 1, 1.64),
        _offer("persec", "1x-h100", "h100-sxm-80gb", 1, 2.99),
        _offer("persec", "8x-h100", "h100-sxm-80gb", 8, 23.92),
        _offer("persec", "1x-t4", "t4-16gb", 1, 0.526),
    ]
    _warehouse(db, offers, [PER_SECOND])
    rec = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**8)
    first = rec.ranked[0]
    assert first.gpus_per_node == 1 and 24 <= CAT.gpu(first.gpu_id).vram_gb <= 48
    assert first.offer_key == "1x-4090"
    totals = [r.total_usd for r in rec.ranked]
    assert totals == sorted(totals)
    by = {r.offer_key: r for r in rec.ranked}
    # the 16 GB T4 holds the job too, but it is slow enough (fp16 on Turing) to cost more
    assert by["1x-t4"].total_usd > first.total_usd
    assert by["1x-t4"].expected_hours > 2 * first.expected_hours
    assert by["8x-h100"].total_usd > first.total_usd


def test_per_second_billing_beats_per_hour_on_a_20_minute_job(db: Path) -> None:
    arch, job, _ = Job(model="mistralai/Mistral-7B-v0.1", method="qlora").resolve()
    gpu = CAT.gpu("h100-sxm-80gb")
    per_token_h = plan_node(arch, job, gpu, NodeShape(gpu_id=gpu.canonical_id,
                                                      gpus_per_node=1), 10**7).hours / 10**7
    tokens = int(1 / 3 / per_token_h)  # a 20-minute run on one H100
    offers = [_offer("persec", "h100", "h100-sxm-80gb", 1, 3.00),
              _offer("perhour", "h100", "h100-sxm-80gb", 1, 2.50)]
    _warehouse(db, offers, [PER_SECOND, PER_HOUR])
    rec = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", tokens, checkpoint_every_min=60)
    by = {r.provider: r for r in rec.ranked}
    hours = by["persec"].expected_hours
    assert 0.3 < hours < 0.4
    assert by["persec"].billed_hours == pytest.approx(hours, abs=1e-3)
    assert by["perhour"].billed_hours == 1.0
    assert by["persec"].compute_usd == pytest.approx(3.00 * hours, abs=0.01)
    assert by["perhour"].compute_usd == pytest.approx(2.50, abs=0.01)
    # cheaper by the hour, dearer for the run: per-second billing ranks first
    assert [r.provider for r in rec.ranked] == ["persec", "perhour"]
    assert any(r.startswith("pays 1.00 h") for r in by["perhour"].reasons)


def test_spot_prefer_with_checkpoints_follows_the_interruption_model(db: Path) -> None:
    band = {"interruption_band": ">20%"}
    offers = [_offer("persec", "od", "a100-sxm-80gb", 1, 2.00),
              _offer("persec", "spot", "a100-sxm-80gb", 1, 1.90,
                     pricing_model=PricingModel.SPOT, provider_data=band)]
    _warehouse(db, offers, [{**PER_SECOND, "spot_pricing": "market"}])
    tokens = 10**9
    prefer = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", tokens, spot="prefer",
                        checkpoint_every_min=30, storage_gb=0)
    allow = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", tokens, spot="allow",
                       checkpoint_every_min=30, storage_gb=0)
    forbid = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", tokens, spot="forbid",
                        checkpoint_every_min=30, storage_gb=0)
    assert prefer.ranked[0].pricing_model == "spot"
    assert [r.pricing_model for r in forbid.ranked] == ["on_demand"]
    spot = next(r for r in allow.ranked if r.pricing_model == "spot")
    od = next(r for r in allow.ranked if r.pricing_model == "on_demand")
    # the model by hand: checkpoint pauses, then lost half-intervals and restarts
    lam = -math.log(1 - 0.25) / 730 / 3600  # per second, AWS band ">20%" midpoint
    c = 30 * 60
    run = od.compute_hours * 3600 * (1 + prefer.checkpoint_gb / CHECKPOINT_WRITE_GBPS / c)
    expected = run / (1 - lam * (c / 2 + RESTART_S))
    assert spot.expected_hours == pytest.approx(expected / 3600, abs=2e-3)
    assert od.expected_hours == pytest.approx(run / 3600, abs=2e-3)
    assert spot.expected_hours > od.expected_hours
    assert spot.total_usd == pytest.approx(1.90 * expected / 3600, abs=0.02)
    assert spot.expected_interruptions == pytest.approx(lam * expected, abs=0.01)
    # a shorter checkpoint interval loses less work per interruption
    short = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", tokens, spot="prefer",
                       checkpoint_every_min=5, storage_gb=0)
    s5 = next(r for r in short.ranked if r.pricing_model == "spot")
    lost30 = spot.expected_hours - od.expected_hours
    od5 = next(r for r in short.ranked if r.pricing_model == "on_demand")
    assert s5.expected_hours - od5.expected_hours < lost30


def test_max_hours_rejects_and_explains(db: Path) -> None:
    offers = [_offer("persec", "4090", "rtx-4090-24gb", 1, 0.34),
              _offer("persec", "h100", "h100-sxm-80gb", 1, 2.99)]
    _warehouse(db, offers, [PER_SECOND])
    rec = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**8, max_hours=8)
    assert [r.offer_key for r in rec.ranked] == ["h100"]
    assert "over --max-hours 8.0" in rec.rejected_cheaper[0].rejected_because


def test_unknown_billing_is_assumed_hourly_and_said(db: Path) -> None:
    _warehouse(db, [_offer("mystery", "h100", "h100-sxm-80gb", 1, 2.0)],
               [{"provider": "mystery"}])
    (row,) = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**7).ranked
    assert "billing granularity unknown: assumed hourly; the cost range's low end bills per " \
        "second" in row.reasons
    assert row.billed_hours == math.ceil(row.expected_hours)
    # the range's low end bills the fast end of the hours per second, its high end the slow end
    # hourly: an unknown increment widens the range both ways
    assert row.range is not None
    fast, slow = row.range.expected_hours.low, row.range.expected_hours.high
    extras = row.storage_usd + row.egress_usd
    assert row.range.total_usd.low == pytest.approx(2.0 * fast + extras, abs=0.01)
    assert row.range.total_usd.high >= 2.0 * math.ceil(slow) + extras


def test_storage_and_egress_are_priced_from_the_profile(db: Path) -> None:
    profile = {**PER_SECOND, "storage_usd_per_gb_month": 0.10, "egress_usd_per_gb": 0.09}
    _warehouse(db, [_offer("persec", "h100", "h100-sxm-80gb", 1, 2.0)], [profile])
    rec = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**8, storage_gb=100)
    (row,) = rec.ranked
    assert row.storage_usd == pytest.approx(100 * 0.10 * row.expected_hours / 730,
                                               abs=0.01)
    assert row.egress_usd == pytest.approx(rec.egress_gb * 0.09, abs=0.01)


def test_training_volume_options() -> None:
    assert tokens_from_options(1e6, None, None) == 1_000_000
    assert tokens_from_options(None, 2e6, 3) == 6_000_000
    with pytest.raises(UserInputError, match="not both"):
        tokens_from_options(1e6, 1e6, 1)
    with pytest.raises(UserInputError, match="training volume"):
        tokens_from_options(None, None, None)


def test_empty_warehouse_is_a_clear_error(db: Path) -> None:
    from gpuscout.core.errors import DataError

    _warehouse(db, [], [PER_SECOND])
    with pytest.raises(DataError, match="no current offers"):
        _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**6)


def test_recommend_sql_is_one_query_over_all_offers(db: Path) -> None:
    """Set-wise: the sizing runs per shape, so 300 offers of 3 shapes cost 3 plans."""
    offers = [_offer("persec", f"k{i}", gpu, 1, 0.3 + i / 1000)
              for i, gpu in enumerate(["rtx-4090-24gb", "l40s-48gb", "h100-sxm-80gb"] * 100)]
    _warehouse(db, offers, [PER_SECOND])
    rec = _recommend(db, "mistralai/Mistral-7B-v0.1", "qlora", 10**7, limit=5)
    assert (rec.shapes_evaluated, rec.offers_evaluated, len(rec.ranked)) == (3, 300, 5)
