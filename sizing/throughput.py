"""Training speed from FLOPs, the GPU's dense rate, utilisation and communication. Pure.

FLOPs per token (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, App. B):
    full      6·N + 12·L·(heads·head_dim)·s        (forward 2N, backward 4N, + attention)
    PEFT      4·N + 6·N_adapter + attention        (frozen weights get no weight gradients)
    recompute + 2·N + 4·L·(heads·head_dim)·s       (one more forward; hardware FLOPs only)
N counts the matmul weights a token passes through: active experts only for MoE, the output
projection included (tied or not), the embedding lookup excluded.

A micro-batch is a roofline over four kinds of work (`micro_batch`): the linear layers' FLOPs
at the GPU's maximum achievable matmul rate, attention's FLOPs (which grow with the sequence) at
FlashAttention's achieved rate, the pointwise kernels' bytes (sizing/kernels.py) at the streamed
bandwidth, and the host's launches of all those kernels; with a floor of the time to read the
weights once per pass. Multi-GPU adds the sharding's collectives on the placement's links that
compute cannot hide (sizing/collectives.py); the step is communication-bound when they take longer
than the compute beside them.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpuscout.core.catalog import GpuSpec
from gpuscout.sizing import fp8
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.collectives import PCIE_GBS, Topology, bus_gbs, communication, topology
from gpuscout.sizing.kernels import BACKWARD_FACTOR, dequant_cost, forward_pass
from gpuscout.sizing.memory import (
    DTYPE_BYTES,
    FP32,
    frozen_weight_bytes,
    offloaded_activation_bytes,
    per_param_bytes,
    trainable_bytes,
    uses_kbit_upcast,
)
from gpuscout.sizing.peft import adapter_flops_params, trainable_params
from gpuscout.sizing.types import Bound, Dtype, JobSpec, TimeEstimate

# The compute side: matmuls run at the maximum achievable matmul rate of the GPU and attention at
# FlashAttention's achieved rate, both read from sizing/data/kernel_efficiency.csv (a source per
# row). Pointwise kernels stream at STREAM_EFFICIENCY of the datasheet bandwidth, and every kernel
# costs the host EAGER_LAUNCH_S: an eager PyTorch op spends ~5-25 µs in Python, autograd, the
# dispatcher and the driver before its kernel starts (jiahuanglin.xyz, "From PyTorch op to kernel
# launch", per-layer table); 10 µs is assumed. The host runs ahead of the GPU through the CUDA
# stream's queue, so a micro-batch takes the longer of the GPU's work and the host's launches.
EAGER_LAUNCH_S = 10e-6
KERNEL_EFFICIENCY_CSV = Path(__file__).parent / "data" / "kernel_efficiency.csv"
# Wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide", §3.2): a GEMM's
# output is cut into tiles, one per SM at a time; when the tiles do not fill the last wave of
# SMs, that wave runs partly idle. SM counts per GPU: sizing/data/gpu_sms.csv (a source per row);
# a GPU without one is timed without the effect.
GPU_SMS_CSV = Path(__file__).parent / "data" / "gpu_sms.csv"
# Which tile: cuBLAS has kernels from 64×64 to 256×128 outputs, and larger tiles reuse each
# loaded element more, so they need less bandwidth (same guide, §2.3). An a×b tile does 2·a·b
# FLOPs per (a + b) elements it loads along k; it keeps the math units fed when that reaches the
# GPU's datasheet FLOPs per byte of memory bandwidth. Small tiles cut the idle last wave, so the
# smallest tile that is fed is taken (`gemm_tile`). 16-bit tensor-core GEMMs need more than even
# 128×128 gives (A100 bf16: 153 FLOPs per byte against 64) and run on 128×128, typical of cuBLAS
# for 16-bit inputs (§2.3), except on the H20, whose cut-down tensor cores need 37 (128×64);
# fp32 on CUDA cores needs far less (V100: 17, so 128×64; A100: 10, so 64×64).
TILES = ((64, 64), (128, 64), (128, 128))
# FlashAttention-2's backward runs five matmuls against the forward's two (Dao 2023, Alg. 2):
# 2.5x the forward's FLOPs; causal masking lets it skip the blocks above the diagonal.
FLASH_BACKWARD = 2.5
CAUSAL_SHARE = 0.5
# Copies to and from the host (CPU offload, activation offloading) over the GPU's PCIe link;
# 0.8 of its datasheet rate is assumed for pinned copies.
HOST_LINK_EFFICIENCY = 0.8
# The memory side of the roofline: kernels that stream whole tensors (weight reads, the
# optimizer update) move data at a fraction of the datasheet bandwidth; 0.8 is assumed here
# (an assumption, not a measurement of any row).
STREAM_EFFICIENCY = 0.8
REF_BANDWIDTH_GBS = 2039.0  # a GPU whose datasheet states no bandwidth is read as an A100


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


@cache
def _efficiencies() -> dict[tuple[str, str], float]:
    with KERNEL_EFFICIENCY_CSV.open(encoding="utf-8", newline="") as f:
        return {(r["kind"], r["applies_to"]): float(r["efficiency"]) for r in csv.DictReader(f)}


def kernel_efficiency(kind: str, gpu: GpuSpec) -> float:
    """Achieved fraction of the dense peak for `kind` (matmul, flash_attention) on `gpu`:
    its own row, else its architecture's, else the file's default."""
    table = _efficiencies()
    for key in (gpu.canonical_id, gpu.architecture):
        if (kind, key) in table:
            return table[kind, key]
    return table[kind, "*"]


@cache
def _sms() -> dict[str, int]:
    with GPU_SMS_CSV.open(encoding="utf-8", newline="") as f:
        return {r["canonical_id"]: int(r["sms"]) for r in csv.DictReader(f)}


def gemm_tile(gpu: GpuSpec, dtype: Dtype) -> tuple[int, int]:
    """The smallest output tile of TILES whose arithmetic intensity keeps `dtype`'s math units
    fed from memory on `gpu`; the largest when none does."""
    flops_per_byte = peak_tflops(gpu, dtype) * 1e12 / (
        (gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS) * 1e9)
    element = DTYPE_BYTES[dtype]
    for a, b in TILES:
        if 2 * a * b / ((a + b) * element) >= flops_per_byte:
            return a, b
    return TILES[-1]


def wave_efficiency(m: int, n: int, sms: int | None,
                    tile: tuple[int, int] = TILES[-1]) -> float:
    """Share of the SMs' time a GEMM with an m×n output keeps busy over its waves of tiles (a
    rectangular tile in whichever orientation leaves less idle: cuBLAS has both)."""
    if not sms or m <= 0 or n <= 0:
        return 1.0

    def busy(a: int, b: int) -> float:
        tiles = -(-m // a) * -(-n // b)
        return tiles / (-(-tiles // sms) * sms)

    return max(busy(*tile), busy(tile[1], tile[0]))


def _linear_seconds(arch: Architecture, job: JobSpec, tokens: int, rate: float,
                    sms: int | None, tile: tuple[int, int],
                    block_rate: float | None = None) -> float:
    """The base linears' GEMMs of one micro-batch, each at its own wave efficiency: forward
    (tokens × d_out), the input gradient (tokens × d_in), the weight gradient when the weight
    trains (d_out × d_in), and the forward again under recomputation. `block_rate`: the blocks'
    GEMMs at another rate than the head's and the adapters' (FP8, sizing/fp8.py)."""
    head_rate, rate = rate, block_rate or rate
    shapes: dict[tuple[int, int, int], int] = {}
    blocks = arch.blocks()
    for kind, n in Counter(arch.block_kinds()).items():
        for m in blocks[kind]:
            rows = tokens * arch.experts_per_token // m.count if m.group == "expert" else tokens
            key = (rows, m.d_in, m.d_out)
            shapes[key] = shapes.get(key, 0) + n * m.count
    forwards = 1 + (1 if job.grad_checkpointing else 0)
    full = job.method == "full"
    seconds = 0.0
    for (rows, d_in, d_out), count in shapes.items():
        flops = 2.0 * rows * d_in * d_out * count
        seconds += forwards * flops / (rate * wave_efficiency(rows, d_out, sms, tile))
        seconds += flops / (rate * wave_efficiency(rows, d_in, sms, tile))
        if full:
            seconds += flops / (rate * wave_efficiency(d_out, d_in, sms, tile))
    # the output projection, outside the checkpointed blocks: forward and backward once
    head = 2.0 * tokens * arch.hidden_size * arch.vocab_size if arch.output_projection_params \
        else 0.0
    if head:
        vocab, hidden = arch.vocab_size, arch.hidden_size
        seconds += head / (head_rate * wave_efficiency(tokens, vocab, sms, tile))
        seconds += head / (head_rate * wave_efficiency(tokens, hidden, sms, tile))
        if full:
            seconds += head / (head_rate * wave_efficiency(vocab, hidden, sms, tile))
    return seconds + tokens * 6 * adapter_flops_params(arch, job) / head_rate


def attention_flops_per_token(arch: Architecture, job: JobSpec) -> float:
    """Hardware FLOPs of attention per token: forward, backward and any recompute."""
    s = job.seq_len + (job.num_virtual_tokens if job.method in ("prefix", "prompt") else 0)
    fwd = 4 * arch.total_layers * arch.q_dim * s
    if job.flash_attention and arch.arch == "decoder":
        fwd *= CAUSAL_SHARE  # the blocks above the diagonal are skipped
    backward = FLASH_BACKWARD if job.flash_attention else 2.0
    return fwd * (1 + backward + (1 if job.grad_checkpointing else 0))


@dataclass(frozen=True)
class MicroBatch:
    """Seconds one micro-batch spends on each kind of work, and what bounds it.

    A kernel takes the longer of its own GPU time and the host time of launching it: the big
    matmuls are GPU-bound, the many small pointwise kernels of an eager model launch-bound unless
    their tensors are large, so each class is the longer of its GPU time and its launches.
    """

    matmul_s: float
    attention_s: float
    pointwise_s: float
    matmul_launch_s: float
    other_launch_s: float
    weights_s: float

    @property
    def host_s(self) -> float:
        return self.matmul_launch_s + self.other_launch_s

    @property
    def gpu_s(self) -> float:
        return self.matmul_s + self.attention_s + self.pointwise_s

    @property
    def seconds(self) -> float:
        kernels = (max(self.matmul_s, self.matmul_launch_s) + self.attention_s
                   + max(self.pointwise_s, self.other_launch_s))
        return max(kernels, self.weights_s)

    @property
    def bound(self) -> Bound:
        launch = max(0.0, self.matmul_launch_s - self.matmul_s) + max(
            0.0, self.other_launch_s - self.pointwise_s)
        if self.weights_s >= self.seconds:
            return "memory"
        if launch > self.matmul_s + self.attention_s:
            return "host"
        if self.pointwise_s > self.matmul_s + self.attention_s:
            return "memory"
        return "compute"


def micro_batch(arch: Architecture, job: JobSpec, gpu: GpuSpec, dtype: Dtype) -> MicroBatch:
    """The roofline of one micro-batch: matmuls, attention, pointwise traffic, host launches,
    over every position the layers run (a prompt's virtual tokens too)."""
    tokens = job.batch_size * job.positions
    tflops = peak_tflops(gpu, dtype) * 1e12
    bandwidth = (gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS) * 1e9 * STREAM_EFFICIENCY
    mm_rate = tflops * kernel_efficiency("matmul", gpu)
    attn_rate = tflops * (kernel_efficiency("flash_attention", gpu) if job.flash_attention
                          else kernel_efficiency("matmul", gpu))
    ab = DTYPE_BYTES[dtype]
    # fp32 weights under autocast: a full model's (AMP), or a LoRA job's frozen fp32 base
    autocast = per_param_bytes(arch, job, dtype).autocast > 0 or (
        job.base_fp32 and job.is_peft and job.quant == "none")
    # prepare_model_for_kbit_training leaves fp32 embeddings and norms, so the hidden states
    # and every pointwise kernel on them run in fp32 (memory counts them so too), and each
    # 4-bit/8-bit layer casts its fp32 input to the compute dtype and its output back
    upcast = uses_kbit_upcast(job) and dtype != "fp32"
    fwd = forward_pass(arch, job, FP32 if upcast else ab, autocast,
                       compute_cast_bytes=ab if upcast else 0)
    forwards = 1 + (1 if job.grad_checkpointing else 0)
    pointwise = tokens * (fwd.pointwise_bytes * (forwards + BACKWARD_FACTOR)
                          + fwd.cast_bytes * (forwards + 1) + fwd.loss_bytes)
    dequant = dequant_cost(job)
    if job.quant != "none":
        dequantizing = forwards + (1 if dequant.in_backward else 0)
        pointwise += dequantizing * arch.linear_weight_params * dequant.bytes_per_weight
    if autocast:
        # autocast casts every fp32 weight to 16 bits on each forward
        pointwise += forwards * arch.total_params * (FP32 + ab)
    pointwise += fp8.cast_bytes(arch, job, tokens)  # FP8 quantization of the GEMM operands
    trainable_k = fwd.matmul_kernels - fwd.frozen_matmul_kernels - fwd.forward_only_kernels
    matmul_k = forwards * fwd.matmul_kernels + 2 * trainable_k + fwd.frozen_matmul_kernels
    # a view's backward is one more view: dispatched on each pass, launching nothing
    other_k = ((forwards + BACKWARD_FACTOR) * fwd.other_kernels
               + (forwards + 1) * fwd.view_ops)
    return MicroBatch(
        matmul_s=_linear_seconds(arch, job, tokens, mm_rate, _sms().get(gpu.canonical_id),
                                  gemm_tile(gpu, dtype),
                                  block_rate=fp8.gemm_tflops(gpu) * 1e12
                                  * kernel_efficiency("matmul", gpu) if dtype == "fp8" else None),
        attention_s=tokens * attention_flops_per_token(arch, job) / attn_rate,
        pointwise_s=pointwise / bandwidth,
        matmul_launch_s=matmul_k * EAGER_LAUNCH_S,
        other_launch_s=other_k * EAGER_LAUNCH_S,
        # every GPU runs its micro-batch through the whole model: a sharded one reads the
        # weights it gathered, all of them, on every pass
        weights_s=(forwards * weight_pass_bytes(arch, job, dtype)
                   + weight_pass_bytes(arch, job, dtype, dequantized=dequant.in_backward))
        / bandwidth,
    )


def weight_pass_bytes(arch: Architecture, job: JobSpec, dtype: Dtype, *,
                      dequantized: bool = True) -> float:
    """Bytes one pass over the model (forward, backward or recompute) reads from memory: every
    weight once in its storage type, plus the dequantized copy a quantized base goes through
    (`dequantized`), or only reads again (a backward that kept the forward's copy)."""
    if job.is_peft:
        read = frozen_weight_bytes(arch, job, dtype)
    else:
        read = arch.total_params * DTYPE_BYTES[dtype]  # the 16-bit copy the matmuls read
    if job.quant != "none":
        # the dequantized 16-bit copy: written by the dequantization, read by the matmul
        made = dequant_cost(job).bytes_per_weight if dequantized else 0.0
        read += arch.linear_weight_params * (made + 2)
    return read


def optimizer_step_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """Bytes the optimizer step moves, once per step (an elementwise update: memory bound).

    A fused step (torch AdamW `fused=True`, the HF Trainer's default `adamw_torch_fused` from
    torch 2.8, DeepSpeed's FusedAdam, bitsandbytes' 8-bit kernels) reads and writes each
    parameter's weight, master copy and states once and reads its gradient. torch.optim.AdamW
    without `fused` takes the multi-tensor path (`adamw-foreach`; torch/optim/adam.py
    `_multi_tensor_adam`), one kernel per op over all tensors: `lerp_` of the first moment with
    the gradient, `mul_` and `addcmul_(grad, grad)` of the second, `sqrt` of it into a new
    buffer, `div_` and `add_(eps)` on that buffer, `addcdiv_` into the parameter: the first
    moment is moved 3 times, the second 5, the buffer (a state's size) 6, so 7 times both
    states' bytes; the gradient 3 times; the parameter twice (its fp32 master, then copied to
    the 16-bit weight, if any).
    """
    state = trainable_bytes(arch, job, dtype)
    # torch.nn.utils.clip_grad_norm_: a norm over every gradient (read once), then every
    # gradient multiplied by the clip coefficient (read and written; applied even when it is 1,
    # which spares a device sync)
    clipping = 3 * state.grad if job.grad_clipping else 0.0
    if job.optimizer == "adamw-foreach":
        updated = state.master or state.weight
        copied = state.master + state.weight if state.master else 0.0
        moved = 2 * updated + copied + 7 * state.optimizer + 3 * state.grad
    else:
        moved = 2 * (state.weight + state.master + state.optimizer) + state.grad
    moved += clipping
    return moved / (job.gpus if job.sharding in ("zero1", "zero2", "zero3", "fsdp") else 1)


def forward_share(arch: Architecture, job: JobSpec) -> float:
    """The forward pass's share of a micro-batch's hardware FLOPs (recomputation runs in
    backward): what the collectives of a forward can hide behind."""
    _, hw_f = flops_per_token(arch, job)
    s = job.seq_len + (job.num_virtual_tokens if job.method in ("prefix", "prompt") else 0)
    forward = 2 * matmul_params(arch) + 4 * arch.total_layers * arch.q_dim * s
    return min(1.0, forward / hw_f) if hw_f else 0.5


def _host_gbs(gpu: GpuSpec) -> float:
    return PCIE_GBS.get(gpu.architecture, 31.5) * 1e9 * HOST_LINK_EFFICIENCY


def time_estimate(arch: Architecture, job: JobSpec, gpu: GpuSpec, dtype: Dtype,
                  tokens: int | None = None, placement: Topology | None = None) -> TimeEstimate:
    """One optimizer step of `job` on `gpu`: its micro-batches (`micro_batch`), the sharding's
    collectives on the links of `placement` (default: `collectives.topology` of the GPU count),
    the exposed offload copies and the optimizer step."""
    notes: list[str] = []
    if job.mean_seq_len is not None:
        notes.append(f"timed at the mean sequence of {job.mean_seq_len} tokens; memory at the "
                     f"longest, {job.seq_len}")
    job = job.timed
    model_f, hw_f = flops_per_token(arch, job)
    tflops = peak_tflops(gpu, dtype)
    if dtype == "fp32":
        notes.append("fp32 runs on CUDA cores; enabling TF32 (Ampere+) is much faster")
    tokens_micro = job.batch_size * job.seq_len
    mb = micro_batch(arch, job, gpu, dtype)
    t_micro = mb.seconds
    bound: Bound = mb.bound
    bandwidth = (gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS) * 1e9 * STREAM_EFFICIENCY
    passes = 2 + (1 if job.grad_checkpointing else 0)
    t_weights = mb.weights_s
    t_compute = mb.gpu_s
    t_optimizer = optimizer_step_bytes(arch, job, dtype) / bandwidth
    if bound == "host":
        notes.append(f"launch-bound: the host issues its kernels in {mb.host_s:.3f} s per "
                     f"micro-batch, the GPU runs them in {mb.gpu_s:.3f} s (torch.compile or "
                     "larger micro-batches help)")
    if bound == "memory" and t_weights > t_compute:
        notes.append(f"memory-bound: {passes} passes over the weights take {t_weights:.3f} s "
                     f"per micro-batch, the matmuls {t_compute:.3f} s")
    n = job.gpus
    b = DTYPE_BYTES[dtype]
    placement = placement if placement is not None or n == 1 else topology(gpu, n)
    comm_s = exposed = 0.0
    link: str | None = None
    if placement is not None and n > 1:
        share = forward_share(arch, job)
        comm = communication(arch, job, dtype, placement, gpu, share * t_micro,
                             (1 - share) * t_micro)
        link = placement.describe()
        if comm is not None:
            comm_s, exposed = comm.total_s(job.grad_accum), comm.exposed_s(job.grad_accum)
            compute = t_micro * job.grad_accum
            binds = comm_s > compute
            if binds:
                bound = "communication"
            ring = bus_gbs(placement, gpu)
            notes.append(f"communication {comm_s:.3f} s per step over {link} (rings at "
                         f"~{ring:,.0f} GB/s), {exposed:.3f} s of it not hidden by "
                         f"{compute:.3f} s of compute: "
                         + ("it binds" if binds else "it does not bind") + f"; {comm.what}")
        if placement.assumed:
            notes.append("placement assumed: " + "; ".join(placement.assumed)
                         + " (--interconnect, --network, --network-gbps or --offer say it)")
    offload_s = 0.0
    if job.offload != "none":
        pt = trainable_params(arch, job)
        moved = pt * (b + b) / n  # gradients out, updated 16-bit weights back
        if job.offload == "params":
            w = frozen_weight_bytes(arch, job, dtype) if job.is_peft else arch.total_params * b
            moved += job.grad_accum * 2 * w / n  # weights copied in for forward and backward
        offload_s += moved / _host_gbs(gpu)
        notes.append("CPU offload: transfers over PCIe are counted as not overlapped")

    act_host = offloaded_activation_bytes(arch, job, dtype)
    if act_host:
        # Copied out during forward and back before backward on a side stream: only what the
        # micro-batch's compute cannot cover is exposed.
        hidden = max(0.0, 2 * act_host / _host_gbs(gpu) - t_micro)
        offload_s += job.grad_accum * hidden
        notes.append("activation offloading: PCIe copies overlap compute"
                     + (f"; {hidden:.2f} s per micro-batch exposed" if hidden else ""))
    step = t_micro * job.grad_accum + exposed + offload_s + t_optimizer
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
        # the model FLOPs of the tokens/s printed, against the GPU's dense peak
        mfu=round(tps / n * model_f / (tflops * 1e12), 4),
        scaling_efficiency=round(eff, 4),
        peak_tflops=tflops,
        bound=bound,
        optimizer_step_s=round(t_optimizer, 4),
        communication_s=round(comm_s, 4),
        communication_exposed_s=round(exposed, 4),
        placement=link,
        micro_batch_s={"matmul": round(mb.matmul_s, 4), "attention": round(mb.attention_s, 4),
                       "pointwise": round(mb.pointwise_s, 4), "launch": round(mb.host_s, 4),
                       "weights": round(mb.weights_s, 4)},
        notes=notes,
    )

