"""Collectives on the links they run on (sizing/collectives.py): the links' figures, the
placement of a job's GPUs, one collective by hand, what each sharding issues, and the one time
model `estimate` and the recommendation share."""

from __future__ import annotations

import csv
import itertools
import json

import pytest
from typer.testing import CliRunner

import gpuscout
from gpuscout.cli.app import app
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.collectives import (
    DDP_BUCKET_BYTES,
    DDP_FIRST_BUCKET_BYTES,
    LINKS_CSV,
    _sizes,
    bus_gbs,
    collective_s,
    communication,
    topology,
)
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.fit import fit_advice
from gpuscout.sizing.job import Job
from gpuscout.sizing.plan import NodeShape, plan_node
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()
LLAMA8 = lookup("meta-llama/Llama-3.1-8B")


def test_every_link_row_has_a_source_and_an_achievable_share() -> None:
    with LINKS_CSV.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["link"] for r in rows} >= {"base", "nvlink", "nvswitch", "xgmi", "pcie",
                                        "pcie-no-p2p", "infiniband", "roce", "efa",
                                        "ethernet"}
    for r in rows:
        assert r["source"].strip(), r
        assert float(r["ll_hop_us"]) > 0 and float(r["simple_hop_us"]) > 0
        if r["link"] != "base":
            assert 0 < float(r["efficiency"]) <= 1, r


@pytest.mark.parametrize(("gpu", "n", "link", "gbs", "nodes"), [
    ("h100-sxm-80gb", 8, "nvswitch", 450.0, 1),  # 900 GB/s both ways
    ("h100-sxm-80gb", 16, "nvswitch", 450.0, 2),
    ("v100-sxm2-16gb", 8, "nvlink", 150.0, 1),  # a hybrid cube mesh, not switched
    ("rtx-4090-24gb", 2, "pcie-no-p2p", 31.5, 1),  # GeForce: no peer-to-peer
    ("l4-24gb", 2, "pcie", 31.5, 1),
    ("rtx-3090-24gb", 2, "nvlink", 56.25, 1),  # its 2-way bridge
    ("rtx-3090-24gb", 4, "pcie-no-p2p", 31.5, 1),  # past the bridge
    ("mi300x-192gb", 2, "xgmi", 64.0, 1),  # one Infinity Fabric link between a pair
    ("mi300x-192gb", 8, "xgmi", 448.0, 1),  # seven of them over the board
])
def test_default_placement_of_the_catalogs_gpus(gpu: str, n: int, link: str, gbs: float,
                                                nodes: int) -> None:
    topo = topology(CAT.gpu(gpu), n)
    assert (topo.interconnect, topo.link_gbs, topo.nodes, topo.gpus) == (link, gbs, nodes, n)


def test_several_machines_assume_the_hgx_network_and_say_so() -> None:
    topo = topology(CAT.gpu("h100-sxm-80gb"), 16)
    assert (topo.network, topo.network_gbps, topo.gpus_per_node) == ("infiniband", 3200.0, 8)
    assert any("InfiniBand" in a for a in topo.assumed)
    given = topology(CAT.gpu("h100-sxm-80gb"), 16, network="efa", network_gbps=3200.0)
    assert given.network == "efa" and not any("Gb/s" in a for a in given.assumed)
    with pytest.raises(UserInputError, match="has no NVLink"):
        topology(CAT.gpu("rtx-4090-24gb"), 2, interconnect="nvlink")
    for bad in (-5.0, 0.0, float("nan"), 1e7):
        with pytest.raises(UserInputError, match="--network-gbps must be above 0"):
            Job(model="meta-llama/Llama-3.1-8B", network_gbps=bad)


def test_ring_bandwidth_is_its_slowest_hop_at_its_achievable_share() -> None:
    h100, b4090, mi300 = (CAT.gpu(g) for g in ("h100-sxm-80gb", "rtx-4090-24gb",
                                               "mi300x-192gb"))
    assert bus_gbs(topology(h100, 8), h100) == pytest.approx(450 * 0.80)
    assert bus_gbs(topology(b4090, 2), b4090) == pytest.approx(31.5 * 0.42)
    assert bus_gbs(topology(b4090, 2, interconnect="pcie"), b4090) == pytest.approx(31.5 * 0.78)
    assert bus_gbs(topology(mi300, 2), mi300) == pytest.approx(64 * 0.70)
    # across machines the machine's NICs together: 100 Gb/s Ethernet is the slow hop
    eth = topology(h100, 16, network="ethernet", network_gbps=100.0)
    assert bus_gbs(eth, h100) == pytest.approx(12.5 * 0.50)


def test_one_collective_by_hand_latency_and_bandwidth() -> None:
    gpu = CAT.gpu("rtx-4090-24gb")
    topo = topology(gpu, 2)  # PCIe through host memory: 13.23 GB/s
    bw = 31.5 * 0.42 * 1e9
    # 1 GB all-gather: each GPU receives half; NCCL's Simple protocol wins at this size
    simple = (8.4 + 1 * 14.0) * 1e-6 + 0.5e9 / bw
    assert collective_s("all_gather", 1e9, topo, gpu) == pytest.approx(simple)
    # 4 KiB: latency-bound, the LL protocol (half the bandwidth, shorter hops) wins
    ll = (6.6 + 1 * 5.3) * 1e-6 + 2048 / (bw * 0.5)
    assert collective_s("all_gather", 4096, topo, gpu) == pytest.approx(ll)
    # all-reduce over 2 machines × 8 H100: 30 ring steps, 2 of them between the machines
    h100 = CAT.gpu("h100-sxm-80gb")
    ib = topology(h100, 16, network="infiniband", network_gbps=3200.0)
    lat = (8.4 + 28 * 3.4 + 2 * 14.0) * 1e-6
    assert collective_s("all_reduce", 1e9, ib, h100) == pytest.approx(
        lat + 2 * 15 / 16 * 1e9 / 360e9)
    assert collective_s("all_reduce", 1e9, topology(h100, 1), h100) == 0.0


def test_ddp_reduces_the_gradients_in_its_buckets_beside_backward() -> None:
    gpu = CAT.gpu("l4-24gb")
    job = JobSpec(method="lora", lora_rank=8, gpus=2, sharding="ddp")
    topo = topology(gpu, 2)
    grads = 3_407_872 * 4  # fp32 LoRA gradients (r 8 on q and v)
    c = communication(LLAMA8, job, "bf16", topo, gpu, 0.5, 1.0)
    assert c is not None and c.micro_s == 0.0 and c.calls_per_step == 2
    first = collective_s("all_reduce", DDP_FIRST_BUCKET_BYTES, topo, gpu)
    rest = collective_s("all_reduce", grads - DDP_FIRST_BUCKET_BYTES, topo, gpu)
    assert grads - DDP_FIRST_BUCKET_BYTES < DDP_BUCKET_BYTES
    assert c.step_s == pytest.approx(first + rest)
    assert c.exposed_step_s == pytest.approx(rest)  # the last bucket waits for backward's end


def test_fsdp_gathers_the_frozen_base_twice_and_wraps_each_lora_matrix() -> None:
    gpu = CAT.gpu("rtx-4090-24gb")
    job = JobSpec(method="lora", lora_rank=8, batch_size=1, seq_len=1024, gpus=2,
                  sharding="fsdp")
    s = _sizes(LLAMA8, job, "bf16")
    assert s.leaves_per_layer == 4  # A and B of q and v, each its own FSDP unit
    assert s.root == pytest.approx((LLAMA8.embedding_params + LLAMA8.lm_head_params) * 2)
    topo = topology(gpu, 2)
    c = communication(LLAMA8, job, "bf16", topo, gpu, 0.0, 0.0)  # no compute to hide behind
    assert c is not None
    layer = collective_s("all_gather", s.layers / 32, topo, gpu)
    leaf = collective_s("all_gather", s.leaf_weights / 128, topo, gpu)
    reduce = collective_s("reduce_scatter", s.grads / 128, topo, gpu)
    root = collective_s("all_gather", s.root, topo, gpu)
    per_layer = 2 * (layer + 4 * leaf) + 4 * reduce
    assert c.micro_s == pytest.approx(root + 32 * per_layer)
    assert c.exposed_micro_s == pytest.approx(c.micro_s)
    assert c.calls_per_step == 32 * (2 * 5 + 4) + 2
    assert "128 adapter units" in c.what


def test_zero3_keeps_small_lora_matrices_whole() -> None:
    small = _sizes(LLAMA8, JobSpec(method="lora", lora_rank=16, gpus=2, sharding="zero3"),
                   "bf16")
    assert small.adapter_partitioned == 0  # 16 × 4096 = 65,536 < 1e5 elements
    big = _sizes(LLAMA8, JobSpec(method="lora", lora_rank=64, gpus=2, sharding="zero3"),
                 "bf16")
    # r 64: q's A and B and v's A (64 × 4096) pass the threshold, v's B (1024 × 64) does not
    assert big.adapter_partitioned == pytest.approx(32 * 3 * 64 * 4096 * 4)


def _per_gpu_grid():
    gpus = ("l4-24gb", "rtx-4090-24gb", "a100-sxm-80gb", "h100-sxm-80gb", "b200-sxm-180gb")
    models = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-0.5B")
    return itertools.product(gpus, models, ("full", "lora", "qlora"),
                             ("ddp", "zero1", "zero2", "zero3", "fsdp"), (1, 4), (1, 8))


def test_per_gpu_speed_never_rises_with_the_gpu_count() -> None:
    """At the same per-GPU micro-batch and the same configuration, more GPUs never make a
    GPU's micro-batches faster; the one part that shrinks per GPU is the optimizer step, which
    ZeRO and FSDP split over the GPUs (each steps its own partition). On links whose per-GPU
    bandwidth does not grow with the count (everything but a direct mesh such as AMD's)."""
    for g, model, method, sharding, batch, accum in _per_gpu_grid():
        gpu, arch = CAT.gpu(g), lookup(model)
        job = JobSpec(method=method, batch_size=batch, seq_len=512, grad_accum=accum,
                      sharding=sharding)
        try:
            prev = estimate(arch, job, gpu).time
        except UserInputError:  # the GPU cannot run it at all (4-bit on a TPU, ...)
            continue
        assert prev is not None
        for n in (2, 4, 8, 16):
            t = estimate(arch, job.model_copy(update={"gpus": n}), gpu).time
            assert t is not None
            case = (g, model, method, sharding, batch, accum, n)
            work, prev_work = (t.step_time_s - t.optimizer_step_s,
                               prev.step_time_s - prev.optimizer_step_s)
            assert work >= prev_work - 2e-4, case
            saved = prev.optimizer_step_s - t.optimizer_step_s
            assert t.step_time_s >= prev.step_time_s - saved - 2e-4, case
            if sharding in ("ddp",):
                assert t.tokens_per_s_per_gpu <= prev.tokens_per_s_per_gpu + 0.2, case
            prev = t


def test_the_bound_printed_is_the_one_that_binds_and_mfu_is_from_the_printed_figures() -> None:
    gpu = CAT.gpu("rtx-4090-24gb")
    job = JobSpec(method="lora", batch_size=1, seq_len=1024, gpus=2, sharding="fsdp")
    est = estimate(LLAMA8, job, gpu)
    t = est.time
    assert t is not None
    one = estimate(LLAMA8, job.model_copy(update={"gpus": 1}), gpu).time
    assert one is not None
    compute = one.step_time_s - one.optimizer_step_s  # the micro-batch alone
    assert t.communication_s > compute and t.bound == "communication"
    assert t.mfu == pytest.approx(t.tokens_per_s_per_gpu * t.flops_per_token
                                  / (t.peak_tflops * 1e12), abs=1e-4)
    # with peer-to-peer the same collectives fit beside compute
    p2p = estimate(LLAMA8, job.model_copy(update={"batch_size": 8}), gpu,
                   placement=topology(gpu, 2, interconnect="pcie")).time
    assert p2p is not None and p2p.bound != "communication"
    assert p2p.communication_s < p2p.step_time_s


def test_must_show_lora_fsdp_on_two_4090s_prints_its_communication_and_bound() -> None:
    runner = CliRunner()
    args = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--method", "lora", "--gpu",
            "rtx-4090-24gb", "--gpus", "2", "--sharding", "fsdp", "--batch-size", "1",
            "--seq-len", "1024", "--no-correction"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["bound"] == "communication" and data["communication_s"] > 0
    assert "PCIe through host memory" in data["placement"]
    table = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "communication-bound" in table.output
    assert f"communication {data['communication_s']:.3f} s per step" in table.output
    assert "(binds)" in table.output


def test_must_show_estimate_and_recommend_time_70b_on_two_hgx_machines_alike() -> None:
    """`estimate --gpus 16 --sharding zero3 --network-gbps 3200` and a recommendation's plan
    of 2 × 8 H100 over 3,200 Gb/s InfiniBand are one computation."""
    job = Job(model="meta-llama/Llama-3.1-70B", method="full", gpus=16, sharding="zero3",
              network_gbps=3200)
    est = gpuscout.estimate(job, gpu="h100-sxm-80gb", correction=False)
    arch, spec, _ = Job(model="meta-llama/Llama-3.1-70B", method="full").resolve_per_offer()
    gpu = CAT.gpu("h100-sxm-80gb")
    plan = plan_node(arch, spec, gpu, NodeShape(gpu_id=gpu.canonical_id, gpus_per_node=8,
                                                nodes=2, fabric="InfiniBand",
                                                fabric_gbps=3200), 10**8)
    assert est.time is not None and plan.sharding == "zero3"
    assert plan.tokens_per_s == pytest.approx(est.time.tokens_per_s, rel=0.10)
    assert plan.tokens_per_s == est.time.tokens_per_s  # the same function, the same links
    assert est.time.bound == plan.bound
    assert plan.need_gb_per_gpu == est.memory.need_gb_per_gpu


def test_fit_does_not_propose_more_gpus_for_a_job_that_fits_one() -> None:
    arch, spec, _ = Job(model="meta-llama/Llama-3.1-8B", method="qlora").resolve()
    advice = fit_advice(arch, spec, CAT.gpu("l4-24gb"))
    assert advice.fits
    assert not any("gpus" in c.options for c in advice.changes)
    arch, spec, _ = Job(model="meta-llama/Llama-3.1-8B", method="full").resolve()
    tight = fit_advice(arch, spec, CAT.gpu("l4-24gb"))
    assert not tight.fits and any("gpus" in c.options for c in tight.changes)
