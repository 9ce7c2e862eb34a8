"""Multi-node placement, checkpoints and spot across machines: formulas pinned by hand, then a
small synthetic warehouse end to end."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from offer_factory import make_offer

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import DataError
from gpuscout.core.models import Interconnect, NetworkFabric, PricingModel
from gpuscout.pipeline.profiles import load_profiles, parse_profiles, profiles_table
from gpuscout.pipeline.recommend import RecommendRequest, recommend
from gpuscout.pipeline.recommend.plans import (
    DEFAULT_MAX_CLUSTER_NODES,
    checkpoint_write_s,
    node_counts,
)
from gpuscout.pipeline.recommend.rank import (
    CHECKPOINT_WRITE_GBPS,
    HARDWARE_FAILURES_PER_GPU_HOUR,
    expected_run_s,
    job_interrupts_per_hour,
    young_daly_interval_s,
)
from gpuscout.pipeline.recommend.request import RESTART_S
from gpuscout.sizing.collectives import bus_gbs, topology
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.job import Job
from gpuscout.sizing.plan import NodeShape, plan_node
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, replace_provider_profiles, transaction

NOW = datetime(2026, 1, 2, tzinfo=UTC)
CAT = load_catalog()
H100 = "h100-sxm-80gb"
MODEL = "meta-llama/Llama-3.1-405B"


# --- formulas, by hand ---------------------------------------------------------------------

def test_young_daly_interval_is_sqrt_two_c_mtbf_within_a_minute_and_the_run() -> None:
    # C = 355 s (5,682 GB over 16 machines at 1 GB/s), MTBF 113 h
    assert young_daly_interval_s(355.0, 113 * 3600) == pytest.approx(
        math.sqrt(2 * 355 * 113 * 3600))
    assert young_daly_interval_s(355.0, 113 * 3600) == pytest.approx(16_995, abs=1)
    # a run shorter than the interval checkpoints once; tiny checkpoints not more than a minute
    assert young_daly_interval_s(355.0, 113 * 3600, run_s=3_600) == 3_600
    assert young_daly_interval_s(0.1, 3_600) == 60.0


def test_interruption_rate_scales_with_the_machines() -> None:
    rate = -math.log(1 - 0.25) / 730  # one machine, AWS Spot Advisor band >20 %/month
    assert job_interrupts_per_hour(rate, 1, 8) == pytest.approx(rate)  # one machine: spot only
    assert job_interrupts_per_hour(rate, 16, 128) == pytest.approx(
        16 * rate + 128 * HARDWARE_FAILURES_PER_GPU_HOUR)
    assert job_interrupts_per_hour(0.0, 16, 128) == pytest.approx(2.526e-3, rel=1e-3)
    # the hardware rate: Llama 3, 419 unexpected interruptions, 54 days, 16,384 H100s
    assert HARDWARE_FAILURES_PER_GPU_HOUR == pytest.approx(1.973e-5, rel=1e-3)


def test_sharded_checkpoints_are_written_by_every_machine_at_once() -> None:
    assert checkpoint_write_s(5681.95, 1, 1.0) == pytest.approx(5681.95)
    assert checkpoint_write_s(5681.95, 16, 1.0) == pytest.approx(355.12, abs=0.01)
    arch, job, _ = Job(model=MODEL, method="full").resolve()
    plan = plan_node(arch, job, CAT.gpu(H100), NodeShape(
        gpu_id=H100, gpus_per_node=8, nodes=16, fabric="InfiniBand", fabric_gbps=3200), 10**8)
    assert plan.sharding == "zero3" and plan.checkpoint_writers == 16
    arch7, job7, _ = Job(model="mistralai/Mistral-7B-v0.1", method="lora").resolve()
    ddp = plan_node(arch7, job7, CAT.gpu(H100), NodeShape(gpu_id=H100, gpus_per_node=8,
                                                          nodes=2, fabric_gbps=3200), 10**7)
    assert ddp.sharding == "ddp" and ddp.checkpoint_writers == 1  # rank 0 writes the replica


def test_expected_run_time_by_hand() -> None:
    t, c, tau, lam, r = 10 * 3600.0, 355.0, 17_003.0, 0.0088, 600.0
    run = t * (1 + c / tau)
    assert expected_run_s(t, c, tau, lam, lam, r) == pytest.approx(
        run / (1 - lam * (tau / 2 + r) / 3600))
    # a notice long enough for a checkpoint: that interruption costs the restart and one write
    assert expected_run_s(t, c, tau, 0.0, lam, r, saved_per_hour=lam) == pytest.approx(
        run / (1 - lam * (r + c) / 3600))


def test_fabric_term_the_slowest_hop_of_the_ring() -> None:
    h100 = CAT.gpu(H100)
    # NVSwitch H100: 450 GB/s one way × 0.80 achievable (sizing/data/links.csv)
    assert bus_gbs(topology(h100, 8), h100) == pytest.approx(360.0)
    # 16 machines at 3,200 Gb/s: 400 GB/s × 0.94 of InfiniBand; NVSwitch is the slower hop
    ib = NodeShape(gpu_id=H100, gpus_per_node=8, nodes=16, fabric="InfiniBand",
                   fabric_gbps=3200).placement(h100)
    assert bus_gbs(ib, h100) == pytest.approx(360.0)
    one_nic = ib.model_copy(update={"network_gbps": 400.0})  # one NIC per machine
    assert bus_gbs(one_nic, h100) == pytest.approx(50 * 0.94)
    pcie = CAT.gpu("a100-pcie-80gb")  # 8 cards: past its 2-way bridge, PCIe 4.0 × 0.78
    shape = NodeShape(gpu_id=pcie.canonical_id, gpus_per_node=8, nodes=4,
                      fabric="InfiniBand", fabric_gbps=3200)
    assert bus_gbs(shape.placement(pcie), pcie) == pytest.approx(31.5 * 0.78)


def test_a_plan_is_timed_by_estimate_with_the_shape_as_its_placement() -> None:
    """One time model for `estimate` and the recommendation: the plan's tokens/s is the
    estimate's for the same job on the shape's links; with one 400 Gb/s NIC per machine the
    ZeRO-3 collectives of 405B over 128 GPUs take longer than the compute beside them."""
    arch, job, _ = Job(model=MODEL, method="full").resolve()
    gpu = CAT.gpu(H100)
    shape = NodeShape(gpu_id=H100, gpus_per_node=8, nodes=16, fabric="InfiniBand",
                      fabric_gbps=400)
    plan = plan_node(arch, job, gpu, shape, 10**8)
    assert plan.feasible and plan.sharding == "zero3"
    zero3 = job.model_copy(update={"gpus": 128, "sharding": "zero3"})
    t = estimate(arch, zero3, gpu, 10**8, shape.placement(gpu)).time
    assert t is not None
    assert (plan.tokens_per_s, plan.hours, plan.bound) == (t.tokens_per_s, t.hours, t.bound)
    assert plan.bound == "communication" and t.communication_s > t.step_time_s / 2
    fast = plan_node(arch, job, gpu, shape.model_copy(update={"fabric_gbps": 3200}), 10**8)
    assert fast.hours is not None and plan.hours is not None and fast.hours < plan.hours / 2


def test_node_counts_stop_at_the_cluster_size() -> None:
    assert node_counts(32) == (2, 4, 8, 16, 32)
    assert node_counts(100) == (2, 4, 8, 16, 32, 64, 100)
    assert node_counts(1) == ()


def test_cluster_size_is_a_sourced_profile_fact() -> None:
    azure = load_profiles()["azure"]
    assert (azure.max_cluster_nodes, azure.multinode_fabric, azure.multinode_gbps) == \
        (100, "InfiniBand", 3200.0)
    assert azure.sources["max_cluster_nodes"].startswith("https://github.com/MicrosoftDocs/")
    table = profiles_table()
    assert dict(zip(table["provider"].to_pylist(), table["max_cluster_nodes"].to_pylist(),
                    strict=True))["azure"] == 100
    row = {"provider": "aws", "fact": "max_cluster_nodes", "value": "64", "unit": "nodes",
           "source_url": "https://example.com", "verified_at": "2026-01-02", "notes": ""}
    with pytest.raises(DataError, match="must have unit 'machines'"):
        parse_profiles([row])


# --- end to end on a synthetic warehouse ---------------------------------------------------

def _h100x8(provider: str, key: str, price: float, **kw):
    spec = CAT.gpu(H100)
    return make_offer(key, provider=provider, price=price, gpu_count=8, gpu_id=H100,
                      gpu_label=H100, vram_gb=spec.vram_gb, memory_type=spec.memory_type,
                      form_factor=spec.form_factor, interconnect=Interconnect.NVSWITCH,
                      interconnect_gbps=spec.nvlink_gbps, **kw)


IB = {"network": NetworkFabric.INFINIBAND, "network_gbps": 3200.0}
SPOT = {"pricing_model": PricingModel.SPOT}
# An AWS-style Spot Advisor band on the offer: a published rate, so spot may span machines.
PUBLISHED = {"provider_data": {"interruption_band": ">20%"}}
# The band's rate per machine-hour: 25 % of instances interrupted in a month (730 h).
TOP_BAND_PER_HOUR = -math.log(1 - 0.25) / 730
# A bid market's rate where none is published (pipeline/data/spot_interruptions.csv, '*' bid).
ASSUMED_BID_PER_HOUR = 0.05


def _warehouse(path: Path, offers: list, profiles: list[dict]) -> None:
    with connect(path) as con:
        for provider in sorted({o.provider for o in offers}):
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in offers if o.provider == provider]),
                             provider=provider, run_id="fixture", complete=True)
        # every row with every key: from_pylist takes its columns from the first row
        keys = sorted({k for p in profiles for k in p})
        replace_provider_profiles(con, pa.Table.from_pylist(
            [{k: p.get(k) for k in keys} for p in profiles]))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "w.duckdb"


def _recommend(db: Path, **req):
    arch, job, _ = Job(model=MODEL, method="full").resolve()
    with connect(db, read_only=True) as con:
        return recommend(con, arch, job, RecommendRequest(tokens=10**9, now=NOW, **req))


PROFILES = [
    {"provider": "ib", "billing_increment_s": 1, "spot_pricing": "market",
     "spot_notice_s": 120},
    {"provider": "nofabric", "billing_increment_s": 1},
    {"provider": "ibprofile", "billing_increment_s": 1, "multinode_fabric": "RoCE",
     "multinode_gbps": 400.0},
    {"provider": "bidder", "billing_increment_s": 1, "spot_pricing": "bid"},
]


def test_fabric_cluster_checkpoints_and_spot_end_to_end(db: Path) -> None:
    offers = [
        _h100x8("ib", "od", 24.0, **IB),
        _h100x8("ib", "spot", 19.0, **IB, **SPOT, **PUBLISHED),
        _h100x8("ib", "small-cluster", 11.0, **IB, provider_data={"max_gpus": 64}),
        _h100x8("nofabric", "od", 12.0),  # cheaper, but nothing between its machines
        _h100x8("ibprofile", "od", 22.0),  # the fabric comes from the provider's profile
        _h100x8("bidder", "od", 24.0, **IB),
        # a bid far below every other price: it would win, were its rate known
        _h100x8("bidder", "spot", 9.0, **IB, **SPOT),
    ]
    _warehouse(db, offers, PROFILES)
    rec = _recommend(db, checkpoint_every_min=None, limit=20)
    by = {(r.provider, r.offer_key): r for r in rec.ranked}
    rejected = {(r.provider, r.offer_key): r.rejected_because for r in rec.rejected_cheaper}

    # no fabric: never on several machines, and --explain says why
    assert all(r.provider != "nofabric" for r in rec.ranked)
    assert rejected[("nofabric", "od")].startswith("memory wall")
    assert "no inter-node fabric known for nofabric" in rejected[("nofabric", "od")]
    # the offer's own cluster limit (64 GPUs = 8 machines) is too small for 405B on H100
    assert "cluster allows (8)" in rejected[("ib", "small-cluster")]

    # InfiniBand: 16 machines (11 hold the job; the next count tried is 16)
    od = by[("ib", "od")]
    assert (od.nodes, od.network, od.network_gbps, od.sharding) == (16, "InfiniBand", 3200.0,
                                                                    "zero3")
    fabric = next(x for x in od.reasons if x.startswith("16 machines over InfiniBand"))
    assert "at 3200 Gb/s each (offer)" in fabric and "ring at ~360 GB/s" in fabric
    assert f"assumed up to {DEFAULT_MAX_CLUSTER_NODES} machines" in fabric
    prof = by[("ibprofile", "od")]
    assert prof.nodes == 16 and prof.network == "RoCE"
    assert any("over RoCE at 400 Gb/s each (provider profile)" in x for x in prof.reasons)
    assert prof.tokens_per_s < od.tokens_per_s  # an eighth of the fabric: the ring waits

    # checkpoints: 16 machines write the sharded state at once; Young/Daly picks the interval
    write = checkpoint_write_s(rec.checkpoint_gb, 16, CHECKPOINT_WRITE_GBPS)
    assert write == pytest.approx(rec.checkpoint_gb / 16)
    t = od.compute_hours * 3600
    hw = job_interrupts_per_hour(0.0, 16, 128)
    tau = young_daly_interval_s(write, 3600 / hw, run_s=t)
    assert od.checkpoint_every_min == pytest.approx(tau / 60, abs=0.1)
    assert od.checkpoint_hours == pytest.approx(t * write / tau / 3600, abs=2e-3)
    assert od.interruptions_per_hour == pytest.approx(hw, rel=1e-3)
    assert od.expected_hours == pytest.approx(
        expected_run_s(t, write, tau, hw, hw, RESTART_S) / 3600, abs=2e-3)
    ckpt = next(x for x in od.reasons if "checkpoint" in x)
    assert "Young/Daly" in ckpt and f"{rec.checkpoint_gb:.1f} GB written by 16 machines" in ckpt
    # the reason prints the unrounded hours: compare the number, not its last digit
    said = float(re.search(r"([\d.]+) h writing checkpoints", ckpt).group(1))
    assert said == pytest.approx(od.checkpoint_hours, abs=0.006)

    # spot on 16 machines: any one of them stops the job
    spot = by[("ib", "spot")]
    lam = job_interrupts_per_hour(TOP_BAND_PER_HOUR, 16, 128)
    assert spot.interruptions_per_hour == pytest.approx(lam, rel=1e-3)
    tau_s = young_daly_interval_s(write, 3600 / lam, run_s=t)
    assert spot.checkpoint_every_min == pytest.approx(tau_s / 60, abs=0.1)
    assert spot.checkpoint_every_min < od.checkpoint_every_min
    assert spot.expected_hours == pytest.approx(
        expected_run_s(t, write, tau_s, lam, lam, RESTART_S) / 3600, abs=2e-3)
    assert spot.expected_interruptions == pytest.approx(lam * spot.expected_hours, abs=0.01)
    risk = next(x for x in spot.reasons if x.startswith("spot"))
    assert "any of 16 machines stops the job: 16 ×" in risk
    assert "the 120 s notice is too short" in risk  # a 355 s checkpoint does not fit in it

    # bid spot across 16 machines: no published rate, so it is not ranked; --explain says why
    assert ("bidder", "spot") not in by
    assert rejected[("bidder", "spot")].startswith(
        "spot on 16 machines: no interruption rate published for this provider")
    assert rec.set_aside["multi-machine spot without a published rate"] == 1

    # an explicit --checkpoint-every is kept
    every30 = {(r.provider, r.offer_key): r for r in _recommend(
        db, checkpoint_every_min=30, limit=20).ranked}
    assert every30[("ib", "od")].checkpoint_every_min == 30.0
    assert every30[("ib", "od")].expected_hours > od.expected_hours
    assert "checkpoint every 30 min (--checkpoint-every)" in " ".join(
        every30[("ib", "od")].reasons)


def test_spot_restarts_over_max_hours_are_named(db: Path) -> None:
    offers = [_h100x8("bidder", "od", 24.0, **IB),
              _h100x8("bidder", "spot", 23.5, **IB, **SPOT, **PUBLISHED)]
    _warehouse(db, offers, PROFILES)
    free = {r.pricing_model: r for r in _recommend(db, checkpoint_every_min=None).ranked}
    limit = (free["on_demand"].expected_hours + free["spot"].expected_hours) / 2
    rec = _recommend(db, checkpoint_every_min=None, max_hours=limit)
    assert [r.pricing_model for r in rec.ranked] == ["on_demand"]
    (why,) = [r.rejected_because for r in rec.rejected_cheaper]
    assert why.startswith(f"takes {free['spot'].expected_hours:.1f} h with the expected spot "
                          "restarts (")
    assert f"over --max-hours {limit:.1f}" in why


def test_one_machine_keeps_its_old_model(db: Path) -> None:
    """A job that fits one machine is not spread, and on-demand has no modeled interruption."""
    offers = [_h100x8("ib", "od", 24.0, **IB)]
    _warehouse(db, offers, PROFILES)
    arch, job, _ = Job(model="meta-llama/Llama-3.1-8B", method="full").resolve()
    with connect(db, read_only=True) as con:
        rec = recommend(con, arch, job, RecommendRequest(tokens=10**8, now=NOW,
                                                         checkpoint_every_min=None))
    (row,) = rec.ranked
    assert row.nodes == 1 and row.interruptions_per_hour == 0
    assert row.checkpoint_every_min == pytest.approx(row.compute_hours * 60, abs=0.1)
    assert "one checkpoint: no interruption that loses work is modeled" in " ".join(row.reasons)
