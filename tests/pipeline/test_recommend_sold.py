"""What can be bought, at the price paid: committed terms, orders of several machines, the market
behind an ask, host duplicates, the request's rules and the count of offers set aside, each
pinned against a hand computation on a small synthetic warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from offer_factory import make_offer

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.core.models import Interconnect, NetworkFabric, PricingModel, TermKind
from gpuscout.pipeline.recommend import (
    Recommendation,
    RecommendRequest,
    commitment_from_option,
    recommend,
)
from gpuscout.pipeline.recommend.plans import node_counts, nvlink_fabric_gbps, sized_gpu
from gpuscout.pipeline.recommend.result import set_aside_line, sold_as
from gpuscout.sizing.collectives import bus_gbs, topology
from gpuscout.sizing.job import Job
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, replace_provider_profiles, transaction

NOW = datetime(2026, 1, 2, tzinfo=UTC)
CAT = load_catalog()
H100, B300, GB200, A100 = "h100-sxm-80gb", "b300-sxm-288gb", "gb200-186gb", "a100-sxm-40gb"
# every provider bills by the second, prices no storage or egress: totals are price × hours
PROFILE = {"billing_increment_s": 1}
COMMITTED = {"pricing_model": PricingModel.RESERVED, "term_kind": TermKind.COMMITTED}


def _offer(provider: str, key: str, gpu_id: str, n: int, price: float, **kw: Any):
    spec = CAT.gpu(gpu_id)
    link = Interconnect.SINGLE if n == 1 else spec.node_interconnect
    return make_offer(key, provider=provider, price=price, gpu_count=n, gpu_id=gpu_id,
                      gpu_label=gpu_id, vram_gb=spec.vram_gb, memory_type=spec.memory_type,
                      form_factor=spec.form_factor, interconnect=link,
                      interconnect_gbps=spec.nvlink_gbps if n > 1 else None, **kw)


def _warehouse(path: Path, offers: list) -> None:
    providers = sorted({o.provider for o in offers})
    with connect(path) as con:
        for provider in providers:
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in offers if o.provider == provider]),
                             provider=provider, run_id="fixture", complete=True)
        replace_provider_profiles(con, pa.Table.from_pylist(
            [{"provider": p, **PROFILE} for p in providers]))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "w.duckdb"


def _recommend(db: Path, model: str = "meta-llama/Llama-3.1-8B", method: str = "lora",
               tokens: int = 10**8, **req: Any) -> Recommendation:
    arch, job, _ = Job(model=model, method=method).resolve_per_offer()
    with connect(db, read_only=True) as con:
        return recommend(con, arch, job, RecommendRequest(tokens=tokens, now=NOW, limit=20,
                                                          **req))


def _ranked(rec: Recommendation) -> dict[str, Any]:
    return {r.offer_key: r for r in rec.ranked}


def _rejected(rec: Recommendation) -> dict[str, Any]:
    return {r.offer_key: r for r in rec.rejected_cheaper}


def _hours_priced(price: float) -> float:
    """The tolerance of price × billed hours as a RankedOffer shows them (hours to 3 places)."""
    return price * 0.0006 + 0.005  # and the total to the cent


# --- terms ------------------------------------------------------------------------------------

def test_a_term_longer_than_the_job_costs_the_whole_term_and_is_set_aside_unless_allowed(
        db: Path) -> None:
    _warehouse(db, [
        _offer("p", "od", H100, 8, 24.0),
        # 36 months of 730 h: 26,280 h at $10/h = $262,800, whatever the job
        _offer("p", "36mo", H100, 8, 10.0, **COMMITTED, min_term=36.0, min_term_unit="month",
               min_term_hours=26_280.0, term_payment="monthly"),
    ])
    rec = _recommend(db)
    od = _ranked(rec)["od"]
    assert list(_ranked(rec)) == ["od"]
    assert od.total_usd == pytest.approx(24.0 * od.billed_hours, abs=_hours_priced(24.0))
    term = _rejected(rec)["36mo"]
    assert term.set_aside == "committed beyond the job" and term.total_usd == 262_800.0
    assert term.rejected_because.startswith(
        "commits to 36 months (26,280 h, paid monthly) for a job of ")
    assert "the whole term costs $262,800.00 (--commitment allow" in term.rejected_because
    assert rec.set_aside == {"committed beyond the job": 1}
    assert set_aside_line(rec) == "set aside 1 of 2 offers — committed beyond the job: 1"

    allowed = _ranked(_recommend(db, commitment="allow"))
    assert list(allowed) == ["od", "36mo"]  # ranked, at the whole term's cost
    assert (allowed["36mo"].total_usd, allowed["36mo"].charged_hours) == (262_800.0, 26_280.0)
    assert any(r.startswith("committed for 36 months (26,280 h, paid monthly): charged 26,280 h "
                            "at $10.00 per machine-hour, $262,800.00 in all")
               for r in allowed["36mo"].reasons)

    capped = _recommend(db, commitment="max-months", max_commitment_months=12)
    assert _rejected(capped)["36mo"].set_aside == "committed beyond --commitment"
    assert "over --commitment max-months 12" in _rejected(capped)["36mo"].rejected_because


def test_a_term_the_job_covers_is_ranked_at_the_longer_of_the_two(db: Path) -> None:
    _warehouse(db, [
        _offer("p", "od", H100, 8, 24.0),
        _offer("p", "1h", H100, 8, 20.0, **COMMITTED, min_term=1.0, min_term_unit="hour",
               min_term_hours=1.0),
    ])
    ranked = _ranked(_recommend(db, tokens=10**9))
    od, short = ranked["od"], ranked["1h"]
    assert od.billed_hours > 1  # the job is longer than the term: the term costs nothing extra
    assert short.charged_hours == pytest.approx(od.billed_hours, abs=1e-3)
    assert short.total_usd == pytest.approx(20.0 * od.billed_hours, abs=_hours_priced(20.0))
    assert list(ranked) == ["1h", "od"]


def test_commitment_option_and_its_mistakes() -> None:
    assert commitment_from_option("none") == ("none", None)
    assert commitment_from_option("Allow") == ("allow", None)
    for text in ("max-months=6", "max-months 6", "max-months:6"):
        assert commitment_from_option(text) == ("max-months", 6.0)
    for bad in ("sometimes", "max-months=0", "max-months"):
        with pytest.raises(UserInputError, match="--commitment takes none, allow or max-months"):
            commitment_from_option(bad)
    assert sold_as(TermKind.COMMITTED, 26_280.0) == "committed 36 mo"
    assert sold_as("on_demand", None) == "on demand"


# --- orders ------------------------------------------------------------------------------------

def test_an_instant_cluster_is_placed_as_its_machines_over_its_fabric(db: Path) -> None:
    _warehouse(db, [
        # 144 B300 ordered whole: 18 machines of 8, $1,080/h for all of them
        _offer("dc", "144x", B300, 144, 1080.0, gpus_per_machine=8.0, machines_min=18,
               machines_max=18, nvlink_domain_gpus=8, network=NetworkFabric.INFINIBAND,
               network_gbps=3200.0),
        # an order of 2 machines and nothing known between them: cannot be placed
        _offer("dc", "16x-nofabric", B300, 16, 120.0, gpus_per_machine=8.0, machines_min=2,
               machines_max=2),
    ])
    rec = _recommend(db, objective="time")
    cluster = _ranked(rec)["144x"]
    assert (cluster.nodes, cluster.gpus_per_node, cluster.network) == (18, 8, "InfiniBand")
    assert (cluster.price_usd_per_machine_hour, cluster.price_usd_per_order_hour,
            cluster.price_usd_per_gpu_hour) == (60.0, 1080.0, 7.5)
    assert cluster.total_usd == pytest.approx(1080.0 * cluster.billed_hours,
                                              abs=_hours_priced(1080.0))
    assert any(r.startswith("one order is 18 machines of 8 GPUs; $7.50 per GPU-hour, $60.00 per "
                            "machine-hour, $1,080.00 per order-hour (18 machines)")
               for r in cluster.reasons)
    assert any("18 machines over InfiniBand at 3200 Gb/s each" in r
               and "the order is exactly 18 machines" in r for r in cluster.reasons)
    assert rec.set_aside == {"order without fabric": 1}


def test_an_nvl72_rack_is_eighteen_machines_joined_by_nvlink(db: Path) -> None:
    _warehouse(db, [_offer("cw", "gb200", GB200, 4, 42.0, gpus_per_machine=4.0,
                           machines_min=18, nvlink_domain_gpus=72)])
    (rack,) = _recommend(db).ranked
    # per machine: 4 GPUs × 1,800 GB/s NVLink5 / 2 (one direction) × 8 bits
    assert (rack.nodes, rack.gpus_per_node, rack.network) == (18, 4, "NVLink")
    assert rack.network_gbps == 4 * 1800 / 2 * 8 == nvlink_fabric_gbps(CAT.gpu(GB200), 4)
    assert rack.total_usd == pytest.approx(18 * 42.0 * rack.billed_hours,
                                           abs=_hours_priced(18 * 42.0))


def test_orders_of_several_machines_try_multiples_of_the_order() -> None:
    assert node_counts(18, 18) == (18,)
    assert node_counts(72, 18) == (18, 36, 72)
    assert node_counts(32) == (2, 4, 8, 16, 32)  # a plain offer as before


def test_an_assumed_pcie_variant_is_sized_without_the_bridge_no_label_states() -> None:
    pcie = CAT.gpu("a100-pcie-80gb")
    assert "bridge" in pcie.nvlink and sized_gpu(pcie, False) is pcie
    bare = sized_gpu(pcie, True)
    assert bare.nvlink == "none"
    assert bus_gbs(topology(bare, 2), bare) < bus_gbs(topology(pcie, 2), pcie)
    sxm = CAT.gpu(H100)
    assert sized_gpu(sxm, True) is sxm  # a switched board keeps its NVLink


# --- markets -----------------------------------------------------------------------------------

def test_a_lone_outlier_ask_is_ranked_at_its_markets_median(db: Path) -> None:
    _warehouse(db, [
        # the README's Vast.ai row: lowest of 5 asks $1.18, median $3.63 (3× above it)
        _offer("vast", "outlier", A100, 4, 1.18, ask_count=5, ask_median_usd_per_hour=3.63,
               ask_max_usd_per_hour=3.69),
        _offer("vast", "deep", A100, 4, 1.18, ask_count=5, ask_median_usd_per_hour=1.50),
    ])
    ranked = _ranked(_recommend(db))
    outlier, deep = ranked["outlier"], ranked["deep"]
    assert outlier.price_usd_per_machine_hour == 3.63 and deep.price_usd_per_machine_hour == 1.18
    assert outlier.total_usd == pytest.approx(3.63 * outlier.billed_hours,
                                              abs=_hours_priced(3.63))
    assert ("lowest of 5 asks ($1.18/h per machine); median $3.63/h, highest $3.69/h: the "
            "lowest is a lone outlier, ranked at the median") in outlier.reasons
    assert "lowest of 5 asks ($1.18/h per machine); median $1.50/h" in deep.reasons
    assert list(ranked) == ["deep", "outlier"]


def test_offers_differing_only_by_host_are_one_row_with_a_count_and_a_range(db: Path) -> None:
    _warehouse(db, [
        _offer("hb", f"node-{i}", H100, 1, price, host_id=f"node-{i}",
               pricing_model=PricingModel.SPOT, term_kind=TermKind.INTERRUPTIBLE)
        for i, price in enumerate((0.99, 1.10, 0.99))
    ])
    rec = _recommend(db)
    (row,) = rec.ranked
    assert (row.offer_key, row.similar_offers, rec.folded_offers) == ("node-0", 3, 2)
    assert ("3 offers differing only by host, $0.99–$1.10/h per machine: shown once, at the "
            "best") in row.reasons


def test_host_reliability_and_budget_set_offers_aside_by_name(db: Path) -> None:
    _warehouse(db, [_offer("lium", "shaky", H100, 8, 14.0, host_reliability=0.852),
                    _offer("lium", "solid", H100, 8, 16.0, host_reliability=0.997),
                    _offer("p", "unrated", H100, 8, 15.0)])
    rec = _recommend(db, min_reliability=0.95)
    assert list(_ranked(rec)) == ["unrated", "solid"]  # no score stated: kept
    shaky = _rejected(rec)["shaky"]
    assert shaky.rejected_because == "host reliability 85.2 %, under --min-reliability 95.0 %"
    solid = _ranked(rec)["solid"]
    assert "host reliability 99.7 %" in " ".join(solid.reasons)

    unrated = _ranked(rec)["unrated"]
    cap = round((unrated.total_usd + _ranked(rec)["solid"].total_usd) / 2, 2)
    budget = _recommend(db, min_reliability=0.95, max_usd=cap)
    assert list(_ranked(budget)) == ["unrated"]
    assert budget.set_aside == {"host below --min-reliability": 1, "over --max-usd": 1}
    # a budget nothing meets: every offer is listed with its reason
    broke = _recommend(db, max_usd=1.0)
    assert not broke.ranked and broke.set_aside == {"over --max-usd": 3}
    solid_cost = _rejected(broke)["solid"].total_usd
    assert _rejected(broke)["solid"].rejected_because == (
        f"costs ${solid_cost:,.2f} for the run, over --max-usd $1.00")


def test_balanced_is_the_cheapest_within_the_slack_of_the_fastest(db: Path) -> None:
    _warehouse(db, [_offer("p", "8x-fast", H100, 8, 24.0),
                    _offer("p", "8x-cheaper", H100, 8, 20.0), _offer("p", "1x", H100, 1, 2.0)])
    cost = _ranked(_recommend(db, tokens=10**9))
    fast, one = cost["8x-cheaper"], cost["1x"]
    assert one.total_usd < fast.total_usd and one.expected_hours > 1.25 * fast.expected_hours
    assert next(iter(cost)) == "1x"  # cost alone: the single GPU
    balanced = _recommend(db, tokens=10**9, objective="balanced")
    assert [r.offer_key for r in balanced.ranked] == ["8x-cheaper", "8x-fast", "1x"]
    assert any(n.startswith("--objective balanced: the cheapest of the offers within 25 %")
               for n in balanced.price_notes)
