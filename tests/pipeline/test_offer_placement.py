"""`gpuscout estimate --offer PROVIDER:KEY`: a stored offer's GPU, GPUs per machine and links
place the job as the recommendation's plan of that offer does."""

from __future__ import annotations

from pathlib import Path

import pytest
from offer_factory import make_offer

import gpuscout
from gpuscout.core.errors import UserInputError
from gpuscout.core.models import Interconnect, NetworkFabric
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, transaction

JOB = {"model": "meta-llama/Llama-3.1-70B", "method": "full", "gpus": 16, "sharding": "zero3",
       "correction": False}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    offers = [
        make_offer("hgx-ib", network=NetworkFabric.INFINIBAND, network_gbps=3200.0),
        make_offer("hgx-eth", network=NetworkFabric.ETHERNET, network_gbps=100.0),
        make_offer("pcie-4090", gpu_id="rtx-4090-24gb", gpu_label="RTX 4090", vram_gb=24.0,
                   memory_type="GDDR6X", form_factor="PCIe", interconnect=Interconnect.PCIE,
                   interconnect_gbps=None, gpu_count=2, price=1.2),
    ]
    with connect(path) as con, transaction(con):
        merge_offers(con, offers_to_table(offers), provider="testprov", run_id="fixture",
                     complete=True)
    return path


def test_an_offer_places_the_job_as_its_links_say(db: Path) -> None:
    by_offer = gpuscout.estimate(db=db, offer="testprov:hgx-ib", **JOB)
    named = gpuscout.estimate(gpu="h100-sxm-80gb", network="infiniband", network_gbps=3200,
                              **JOB)
    assert by_offer.gpu_id == "h100-sxm-80gb" and by_offer.time and named.time
    assert by_offer.time.tokens_per_s == named.time.tokens_per_s
    assert any(n.startswith("placement from offer testprov:hgx-ib: 8 GPUs per machine")
               for n in by_offer.notes)
    slow = gpuscout.estimate(db=db, offer="testprov:hgx-e", **JOB)  # a key's unique start
    assert slow.time is not None and slow.time.bound == "communication"
    assert slow.time.tokens_per_s < by_offer.time.tokens_per_s / 3


def test_a_consumer_pcie_offer_runs_its_collectives_through_host_memory(db: Path) -> None:
    est = gpuscout.estimate(db=db, offer="testprov:pcie-4090", model="meta-llama/Llama-3.1-8B",
                            method="lora", gpus=2, sharding="fsdp", batch_size=1, seq_len=1024,
                            correction=False)
    assert est.time is not None and est.time.placement is not None
    assert "PCIe through host memory" in est.time.placement


def test_offer_mistakes_are_one_line_user_errors(db: Path) -> None:
    with pytest.raises(UserInputError, match="give PROVIDER:KEY"):
        gpuscout.estimate(db=db, offer="hgx-ib", **JOB)
    with pytest.raises(UserInputError, match="no current offer of testprov"):
        gpuscout.estimate(db=db, offer="testprov:nope", **JOB)
    with pytest.raises(UserInputError, match="could be any of: hgx-eth, hgx-ib"):
        gpuscout.estimate(db=db, offer="testprov:hgx", **JOB)
    with pytest.raises(UserInputError, match="is not the GPU of --offer"):
        gpuscout.estimate(db=db, offer="testprov:hgx-ib", gpu="a100-sxm-80gb", **JOB)


def test_an_offer_silent_on_its_gbps_is_placed_as_recommend_places_it(tmp_path: Path) -> None:
    """An offer that names its network but not its Gb/s: estimate --offer takes the Gb/s the
    recommendation assumes for that fabric (FABRIC_ASSUMED_GBPS: 100 Gb/s Ethernet), not the
    HGX reference of 400 Gb/s per GPU, so both faces time the same job the same."""
    from gpuscout.pipeline.recommend.plans import FABRIC_ASSUMED_GBPS

    path = tmp_path / "w.duckdb"
    offer = make_offer("hgx-eth-unstated", network=NetworkFabric.ETHERNET, network_gbps=None)
    with connect(path) as con, transaction(con):
        merge_offers(con, offers_to_table([offer]), provider="testprov", run_id="fixture",
                     complete=True)
    est = gpuscout.estimate(db=path, offer="testprov:hgx-eth-unstated", **JOB)
    assumed = FABRIC_ASSUMED_GBPS["Ethernet"]
    named = gpuscout.estimate(gpu="h100-sxm-80gb", network="ethernet", network_gbps=assumed,
                              **JOB)
    assert est.time is not None and named.time is not None
    assert est.time.tokens_per_s == named.time.tokens_per_s
    assert any(f"{assumed:g} Gb/s per machine (not stated: assumed, as recommend does)" in n
               for n in est.notes)
    rec = gpuscout.recommend(db=path, tokens=1e8, max_price_age_days=None, limit=1,
                             **{k: v for k, v in JOB.items() if k not in ("gpus", "sharding")})
    assert rec.ranked and rec.ranked[0].tokens_per_s == est.time.tokens_per_s


def test_a_misspelled_api_option_is_an_error_that_names_the_close_ones(db: Path) -> None:
    with pytest.raises(UserInputError, match="did you mean max_price_age_days"):
        gpuscout.recommend(db=db, tokens=1e8, max_price_age=0, **JOB)
    with pytest.raises(UserInputError, match="did you mean batch_size"):
        gpuscout.estimate(gpu="h100-sxm-80gb", batchsize=4, **JOB)
