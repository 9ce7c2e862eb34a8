"""Training speed from FLOPs, the GPU's dense rate, utilisation and communication. Pure.

FLOPs per token (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, App. B):
    full      6·N + 12·L·(heads·head_dim)·s        (forward 2N, backward 4N, + attention)
    PEFT      4·N + 6·N_adapter + attention        (frozen weights get no weight gradients)
    recompute + 2·N + 4·L·(heads·head_dim)·s       (one more forward; hardware FLOPs only)
N counts the matmul weights a token passes through: active experts only for MoE, the output
projection included (tied or not), the embedding lookup excluded.

Time per micro-batch = hardware FLOPs / (peak dense rate × utilisation). Multi-GPU adds the
communication the sharding needs that backward/prefetch cannot hide (PyTorch DDP overlaps the
gradient all-reduce with backward, Li et al. VLDB 2020; FSDP/ZeRO-3 prefetch the next block's
all-gather during compute).
"""

from __future__ import annotations

import re

from gpuscout.core.catalog import GpuSpec
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.memory import (
    DTYPE_BYTES,
    FP32,
    frozen_weight_bytes,
    offloaded_activation_bytes,
    per_param_bytes,
)
from gpuscout.sizing.peft import adapter_flops_params, trainable_params
from gpuscout.sizing.types import Dtype, JobSpec, TimeEstimate

# Model-FLOPs utilisation on the reference GPU (A100): full fine-tuning with FSDP/ZeRO-3,
# FlashAttention and packed 4k sequences measured 0.40–0.41 (HF blog "From DeepSpeed to FSDP
# and Back Again", Granite-7B on 4×A100); HF Trainer PEFT stacks with padding reach 20–30 %
# (FORMULAS §5: PEFT benchmark LoRA on L40S 25 %, NeMo Llama-3-70B LoRA 18 %). The lower PEFT
# figure reflects the small adapter GEMMs and per-module overhead around the frozen matmuls.
MFU_FULL = 0.40
MFU_PEFT = 0.25
# Fraction of a training step spent in memory-bound kernels (norms, activations, softmax,
# optimizer) on the reference GPU: 39 % of BERT-large training time on a V100, whose
# bandwidth/compute balance matches the A100's (Ivanov et al., "Data Movement Is All You
# Need", MLSys 2021). It moves MFU with the GPU's bandwidth-to-FLOPs ratio.
MEMORY_BOUND_FRACTION = 0.39
REF_TFLOPS = 312.0  # A100 dense bf16 (NVIDIA A100 datasheet)
REF_BANDWIDTH_GBS = 2039.0  # A100 SXM 80GB HBM2e
# QLoRA runs the same FLOPs 1.4–2.0× slower than 16-bit LoRA because every matmul first
# dequantizes NF4 weights (ms-swift Qwen-7B: 1.79×); LLM.int8's outlier decomposition costs
# about as much. FORMULAS §5 recommends 1.5× as the default.
QUANT_SLOWDOWN = 1.5
# DDP overlaps the gradient all-reduce with the backward pass, about 2/3 of a micro-step.
BACKWARD_SHARE = 2 / 3
# PCIe x16 per direction: Gen3 15.75, Gen4 31.5, Gen5 63 GB/s (PCI-SIG); NCCL reaches ~80 %.
PCIE_GBS = {"Volta": 15.75, "Turing": 15.75, "Pascal": 15.75, "Ampere": 31.5,
            "Ada Lovelace": 31.5, "Ada": 31.5, "Hopper": 63.0, "Blackwell": 63.0}
LINK_EFFICIENCY = 0.8
# Between 8-GPU nodes: one 400 Gb/s NIC per GPU (NVIDIA DGX H100 / HGX reference design).
INTER_NODE_GBS = 50.0
GPUS_PER_NODE = 8
# The memory side of the roofline: kernels that stream whole tensors (weight reads, the
# optimizer update) move data at a fraction of the datasheet bandwidth; 0.8 is assumed here
# (an assumption, not a measurement of any row).
STREAM_EFFICIENCY = 0.8
# bitsandbytes and torchao dequantize an NF4/int8 weight into a 16-bit buffer before the
# matmul: the buffer is written and read once per pass (2 + 2 bytes per weight).
DEQUANT_BYTES_PER_WEIGHT = 4


def matmul_params(arch: Architecture) -> float:
    """Weights one token multiplies with (active experts, output projection included)."""
    weights = arch.linear_weight_params
    if arch.is_moe:
        inactive = sum(m.d_in * m.d_out * (m.count - arch.experts_per_token)
                       for blk in arch.blocks() for m in blk if m.group == "expert")
        weights -= inactive
    # encoder-decoder: both stacks per input token (targets at most as long as inputs)
    return weights + arch.output_projection_params


def flops_per_token(arch: Architecture, job: JobSpec) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) per token of one micro-batch."""
    n = matmul_params(arch)
    s = job.seq_len + (job.num_virtual_tokens if job.method in ("prefix", "prompt") else 0)
    attn_fwd = 4 * arch.total_layers * arch.q_dim * s
    if job.method == "full":
        model = 6 * n + 3 * attn_fwd
    else:
        model = 4 * n + 6 * adapter_flops_params(arch, job) + 3 * attn_fwd
    hardware = model + (2 * n + attn_fwd if job.grad_checkpointing else 0)
    return model, hardware


def peak_tflops(gpu: GpuSpec, dtype: Dtype) -> float:
    """Dense tensor rate for `dtype`. fp32 uses CUDA-core FP32 (PyTorch leaves TF32 off)."""
    if dtype == "fp32":
        rate = gpu.fp32_tflops or gpu.tf32_dense_tflops
    elif dtype == "fp16":
        rate = gpu.fp16_dense_tflops or gpu.bf16_dense_tflops
    else:
        rate = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops
    if not rate:
        raise ValueError(f"{gpu.canonical_id} lists no {dtype} rate")
    return rate


def device_factor(gpu: GpuSpec, tflops: float) -> float:
    """MFU relative to the A100: a roofline blend of compute-bound and memory-bound time."""
    bandwidth = gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS
    rel_time = ((1 - MEMORY_BOUND_FRACTION) * REF_TFLOPS / tflops
                + MEMORY_BOUND_FRACTION * REF_BANDWIDTH_GBS / bandwidth)
    return (REF_TFLOPS / tflops) / rel_time


def weight_pass_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """Bytes one pass over the model (forward, backward or recompute) reads from memory: every
    weight once in its storage type, plus the dequantized copy a quantized base goes through."""
    if job.is_peft:
        read = frozen_weight_bytes(arch, job, dtype)
    else:
        read = arch.total_params * DTYPE_BYTES[dtype]  # the 16-bit copy the matmuls read
    if job.quant != "none":
        read += arch.linear_weight_params * DEQUANT_BYTES_PER_WEIGHT
    return read


def optimizer_step_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """Bytes the optimizer step moves, once per step: each trainable parameter's weight, master
    copy and states read and written, its gradient read (an elementwise update: memory bound)."""
    pp = per_param_bytes(arch, job, dtype)
    per = 2 * (pp.weight + pp.master + pp.optimizer) + pp.grad
    return trainable_params(arch, job) * per / (job.gpus if job.sharding in (
        "zero1", "zero2", "zero3", "fsdp") else 1)


def link_gbs(gpu: GpuSpec, n: int) -> float:
    """Usable per-GPU bandwidth (one direction) for collectives among `n` GPUs."""
    per_dir: float | None = None
    text = gpu.nvlink.lower()
    if gpu.nvlink_gbps and gpu.form_factor in ("SXM", "Superchip", "OAM", "TPU"):
        per_dir = gpu.nvlink_gbps / 2  # datasheets quote both directions together
    elif gpu.nvlink_gbps and "bridge" in text:
        ways = re.search(r"(\d)-way", text)
        if n <= (int(ways.group(1)) if ways else 2):
            per_dir = gpu.nvlink_gbps / 2
    if per_dir is None:
        per_dir = PCIE_GBS.get(gpu.architecture, 31.5)
    if n > GPUS_PER_NODE:
        per_dir = min(per_dir, INTER_NODE_GBS)
    return per_dir * LINK_EFFICIENCY


def time_estimate(arch: Architecture, job: JobSpec, gpu: GpuSpec, dtype: Dtype,
                  tokens: int | None = None) -> TimeEstimate:
    notes: list[str] = []
    model_f, hw_f = flops_per_token(arch, job)
    tflops = peak_tflops(gpu, dtype)
    base = MFU_FULL if job.method == "full" else MFU_PEFT
    mfu_hw = base * device_factor(gpu, tflops)
    if job.quant != "none":
        mfu_hw /= QUANT_SLOWDOWN
        notes.append(f"{job.quant} base: dequantizing every matmul costs ~{QUANT_SLOWDOWN}× "
                     f"(QLoRA vs LoRA measurements)")
    if dtype == "fp32":
        notes.append("fp32 runs on CUDA cores; enabling TF32 (Ampere+) is much faster")

    tokens_micro = job.batch_size * job.seq_len
    t_compute = tokens_micro * hw_f / (tflops * 1e12 * mfu_hw)
    # The roofline: a micro-batch takes at least the time to read the weights once per pass
    # (forward, backward, and the recompute with checkpointing).
    bandwidth = (gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS) * 1e9 * STREAM_EFFICIENCY
    passes = 2 + (1 if job.grad_checkpointing else 0)
    shard = job.gpus if job.sharding in ("zero3", "fsdp") else 1
    t_weights = passes * weight_pass_bytes(arch, job, dtype) / shard / bandwidth
    bound = "memory" if t_weights > t_compute else "compute"
    t_micro = max(t_compute, t_weights)
    t_optimizer = optimizer_step_bytes(arch, job, dtype) / bandwidth
    if bound == "memory":
        notes.append(f"memory-bound: {passes} passes over the weights take {t_weights:.3f} s "
                     f"per micro-batch, the matmuls {t_compute:.3f} s")
    n = job.gpus
    exposed = 0.0
    b = DTYPE_BYTES[dtype]
    if n > 1:
        bw = link_gbs(gpu, n) * 1e9
        ring = (n - 1) / n
        pt = trainable_params(arch, job)
        grad_bytes = pt * per_param_bytes(arch, job, dtype).grad
        if job.sharding in ("ddp", "zero1", "zero2"):
            comm = 2 * ring * grad_bytes / bw  # all-reduce = reduce-scatter + all-gather
            exposed = max(0.0, comm - BACKWARD_SHARE * t_micro)
        else:
            w = frozen_weight_bytes(arch, job, dtype) if job.is_peft else \
                arch.total_params * (FP32 if dtype == "fp32" else b)
            # all-gather for forward and for backward, reduce-scatter of gradients, every
            # micro-batch (ZeRO paper §7: 1.5× DDP's volume)
            per_micro = ring * (2 * w + grad_bytes) / bw
            exposed = job.grad_accum * max(0.0, per_micro - t_micro)
        notes.append(f"{job.sharding} over {n} GPUs at ~{bw / 1e9:.0f} GB/s per GPU"
                     + ("; beyond one 8-GPU node the network is assumed 400 Gb/s per GPU"
                        if n > GPUS_PER_NODE else ""))
    if job.offload != "none":
        pcie = PCIE_GBS.get(gpu.architecture, 31.5) * 1e9 * LINK_EFFICIENCY
        pt = trainable_params(arch, job)
        moved = pt * (b + b) / n  # gradients out, updated 16-bit weights back
        if job.offload == "params":
            w = frozen_weight_bytes(arch, job, dtype) if job.is_peft else arch.total_params * b
            moved += job.grad_accum * 2 * w / n  # weights copied in for forward and backward
        exposed += moved / pcie
        notes.append("CPU offload: transfers over PCIe are counted as not overlapped")

    act_host = offloaded_activation_bytes(arch, job, dtype)
    if act_host:
        # Copied out during forward and back before backward on a side stream: only what the
        # micro-batch's compute cannot cover is exposed.
        pcie = PCIE_GBS.get(gpu.architecture, 31.5) * 1e9 * LINK_EFFICIENCY
        hidden = max(0.0, 2 * act_host / pcie - t_micro)
        exposed += job.grad_accum * hidden
        notes.append("activation offloading: PCIe copies overlap compute"
                     + (f"; {hidden:.2f} s per micro-batch exposed" if hidden else ""))
    step = t_micro * job.grad_accum + exposed + t_optimizer
    tokens_step = tokens_micro * job.grad_accum * n
    tps = tokens_step / step
    eff = t_micro * job.grad_accum / step
    hours = tokens / tps / 3600 if tokens else None
    return TimeEstimate(
        flops_per_token=model_f,
        hardware_flops_per_token=hw_f,
        tokens_per_s=round(tps, 1),
        tokens_per_s_per_gpu=round(tps / n, 1),
        step_time_s=round(step, 4),
        hours=None if hours is None else round(hours, 3),
        mfu=round(mfu_hw * model_f / hw_f, 4),
        scaling_efficiency=round(eff, 4),
        peak_tflops=tflops,
        bound=bound,
        optimizer_step_s=round(t_optimizer, 4),
        notes=notes,
    )
