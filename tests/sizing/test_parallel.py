"""Tensor, pipeline and context parallelism (sizing/parallel.py) against hand computations."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.job import Job
from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.parallel import (
    COLLECTIVE_LATENCY_S,
    activation_share,
    layout,
    link_gbs,
    nvlink_domain,
    one_gpu_job,
    parallel_memory,
    parallel_time,
    stage_share,
    tensor_parallel_jobs,
)
from gpuscout.sizing.plan import NodeShape, plan_node
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()
H100 = CAT.gpu("h100-sxm-80gb")
L70 = lookup("meta-llama/Llama-3.1-70B")
L8 = lookup("meta-llama/Llama-3.1-8B")


def job(**kw: object) -> JobSpec:
    return JobSpec(**{"method": "full", "seq_len": 2048, **kw})  # type: ignore[arg-type]


def test_the_layout_is_checked_and_the_replicas_default_to_ddp() -> None:
    with pytest.raises(UserInputError, match="not a multiple"):
        job(gpus=6, tensor_parallel=4)
    with pytest.raises(UserInputError, match="sequence-parallel"):
        job(gpus=2, tensor_parallel=1, sequence_parallel=True, sharding="ddp")
    with pytest.raises(UserInputError, match="virtual-stages"):
        job(gpus=2, tensor_parallel=2, virtual_stages=2)
    with pytest.raises(UserInputError, match="zero3"):
        job(gpus=8, tensor_parallel=4, sharding="zero3")
    assert job(gpus=8, tensor_parallel=4).sharding == "ddp"  # two replicas
    assert job(gpus=4, tensor_parallel=4).sharding == "none"  # one replica
    spec = job(gpus=16, tensor_parallel=2, pipeline_parallel=2, context_parallel=2)
    assert (spec.model_parallel, spec.data_parallel) == (8, 2)
    # the distributed optimizer is ZeRO-1 over the replicas
    _, spec, _ = Job(model="meta-llama/Llama-3.1-8B", method="full", gpus=8,
                     tensor_parallel=4, distributed_optimizer=True).resolve()
    assert spec.sharding == "zero1"


def test_tensor_parallel_splits_the_state_and_the_distributed_optimizer_the_fp32_part() -> None:
    """TP 4 × DP 2 on 8 GPUs: 16-bit weights and gradients ÷ 4; fp32 masters and AdamW states
    ÷ 4, and ÷ 2 more with the distributed optimizer (Megatron: 4 + 12/d bytes a parameter
    with 16-bit gradients)."""
    base = memory_estimate(L8, one_gpu_job(job(grad_accum=2))).breakdown
    ddp = parallel_memory(L8, job(gpus=8, tensor_parallel=4, grad_accum=2), "bf16", None)
    dist = parallel_memory(L8, job(gpus=8, tensor_parallel=4, grad_accum=2, sharding="zero1"),
                           "bf16", None)
    p = L8.total_params
    assert base["weights_trainable"] == pytest.approx(2 * p / 1e9, abs=2e-3)
    assert ddp.breakdown["weights_trainable"] == pytest.approx(2 * p / 4 / 1e9, abs=2e-3)
    assert ddp.breakdown["gradients"] == pytest.approx(2 * p / 4 / 1e9, abs=2e-3)
    assert ddp.breakdown["optimizer_states"] == pytest.approx(8 * p / 4 / 1e9, abs=2e-3)
    assert dist.breakdown["optimizer_states"] == pytest.approx(8 * p / 8 / 1e9, abs=2e-3)
    assert dist.breakdown["master_weights"] == pytest.approx(4 * p / 8 / 1e9, abs=2e-3)
    assert ddp.breakdown["sharding_buffers"] == 0  # Megatron's contiguous gradient buffer


def test_activations_split_by_tensor_and_context_ranks_and_grow_with_1f1b() -> None:
    """Korthikanti et al.: without sequence parallelism 10 of the 34·s·b·h bytes a layer stay
    whole on every tensor rank; 1F1B holds p micro-batches of L/p layers on the first stage,
    × (1 + (p − 1)/(p·v)) interleaved."""
    tp4 = layout(job(gpus=4, tensor_parallel=4))
    assert activation_share(tp4) == pytest.approx((10 + 24 / 4) / 34)
    sp = layout(job(gpus=4, tensor_parallel=4, sequence_parallel=True))
    assert activation_share(sp) == pytest.approx(1 / 4)
    cp = layout(job(gpus=8, tensor_parallel=4, sequence_parallel=True, context_parallel=2))
    assert activation_share(cp) == pytest.approx(1 / 8)
    pp = layout(job(gpus=8, tensor_parallel=2, sequence_parallel=True, pipeline_parallel=4,
                    virtual_stages=5, grad_accum=16))
    assert activation_share(pp) == pytest.approx(1 / 2 * (1 + 3 / 20))
    few = layout(job(gpus=4, pipeline_parallel=4, grad_accum=2))
    assert activation_share(few) == pytest.approx(2 / 4 * (1 + 3 / 4))


def test_the_heaviest_stage_holds_its_layers_and_the_embedding_or_head() -> None:
    lay = layout(job(gpus=4, pipeline_parallel=4, grad_accum=4))
    body = L70.total_params - L70.embedding_params - L70.lm_head_params
    expected = (body * 20 / 80 + max(L70.embedding_params, L70.lm_head_params)) \
        / L70.total_params
    assert stage_share(L70, lay) == pytest.approx(expected)


def test_tensor_parallel_all_reduces_twice_per_layer_and_pass() -> None:
    """4 per layer (2 forward, 2 backward) + 2 more under recomputation, each of b·s·h bf16
    over the NVLink ring: 2(t − 1)/t of the bytes plus a start-up per half."""
    spec = job(gpus=4, tensor_parallel=4, grad_checkpointing=True, batch_size=1)
    t = parallel_time(L8, spec, H100, "bf16")
    act = 2048 * L8.hidden_size * 2
    per = 2 * 3 / 4 * act / (link_gbs(H100, 4) * 1e9) + 2 * COLLECTIVE_LATENCY_S
    assert t.micro_batch_s["tensor_parallel"] == pytest.approx(32 * 6 * per, abs=1e-4)
    assert any("not overlapped" in n for n in t.notes)


def test_the_pipeline_bubble_is_p_minus_1_over_v_micro_batches() -> None:
    one = parallel_time(L70, job(method="lora", gpus=8, tensor_parallel=2,
                                 pipeline_parallel=4, grad_accum=8), H100, "bf16")
    inter = parallel_time(L70, job(method="lora", gpus=8, tensor_parallel=2,
                                   pipeline_parallel=4, virtual_stages=5, grad_accum=8),
                          H100, "bf16")
    # per micro-batch bubble = (p − 1)/v micro-batch times spread over m micro-batches
    assert one.micro_batch_s["bubble"] > 0
    assert inter.micro_batch_s["bubble"] < one.micro_batch_s["bubble"] / 4
    assert inter.tokens_per_s > one.tokens_per_s


def test_must_show_fp8_tensor_parallel_70b_on_8_h100() -> None:
    """`estimate --model meta-llama/Llama-3.1-70B --method full --dtype fp8
    --tensor-parallel 4 --gpu h100-sxm-80gb --gpus 8`: tokens/s and memory per GPU."""
    arch, spec, _ = Job(model="meta-llama/Llama-3.1-70B", method="full", dtype="fp8",
                        tensor_parallel=4, gpus=8).resolve()
    est = estimate(arch, spec, H100)
    assert est.dtype == "fp8" and est.time is not None
    assert est.time.tokens_per_s > 0 and est.memory.peak_gb_per_gpu > 0
    bf16 = estimate(arch, spec.model_copy(update={"dtype": "bf16"}), H100)
    assert bf16.time is not None and est.time.tokens_per_s > bf16.time.tokens_per_s
    # a quarter of the weights per GPU, plus Transformer Engine's two FP8 copies of them
    assert est.memory.breakdown["weights_trainable"] == pytest.approx(
        arch.total_params * 2 / 4 / 1e9, abs=2e-2)
    assert est.memory.breakdown["fp8_copies"] == pytest.approx(
        arch.linear_weight_params * 2 / 4 / 1e9, abs=2e-2)


def test_megatron_preset_reads_megatron_bridge_recipes() -> None:
    _, spec, notes = Job(model="meta-llama/Llama-3.1-70B", method="lora", framework="megatron",
                         gpus=32, tensor_parallel=8, pipeline_parallel=4,
                         grad_accum=8).resolve()
    assert not spec.grad_checkpointing and spec.fused_kernels and not spec.variable_lengths
    assert spec.sharding == "none" and not spec.sequence_parallel
    assert (spec.lora_rank, spec.lora_targets) == (32, "all-linear")
    _, fp8, _ = Job(model="meta-llama/Llama-3.1-8B", framework="megatron", dtype="fp8").resolve()
    assert fp8.fp8_recipe == "tensorwise"


def test_recommend_places_tensor_parallelism_inside_an_nvlink_domain() -> None:
    """Where ZeRO's sharded state still leaves a rank every activation of a long sequence,
    tensor parallelism inside the machine's NVLink domain splits them too; PCIe cards without
    a bridge get no tensor-parallel group."""
    assert nvlink_domain(H100, 8) == 8
    assert nvlink_domain(CAT.gpu("l40s-48gb"), 8) == 1
    assert nvlink_domain(CAT.gpu("h100-pcie-80gb"), 8) == 2
    long = JobSpec(method="lora", seq_len=32768)
    shape = NodeShape(gpu_id="h100-sxm-80gb", gpus_per_node=8)
    plan = plan_node(L70, long, H100, shape, 10**8)
    assert plan.feasible and plan.notes[0].startswith("tensor parallel")
    assert [j.tensor_parallel for j in tensor_parallel_jobs(long, H100, 8)] == [2, 4, 8]
    assert tensor_parallel_jobs(long, CAT.gpu("l40s-48gb"), 8) == []
