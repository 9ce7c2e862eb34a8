"""Megatron-style model parallelism: tensor (with sequence), pipeline (with virtual stages) and
context parallelism, with data-parallel replicas (DDP or the distributed optimizer) around
them. Pure: the one-GPU estimate of the same micro-batch, split the way the parallelism splits
it, plus the communication it adds.

Memory per GPU (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", §3-4; Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters Using Megatron-LM"):
- weights, gradients and optimizer states: the heaviest pipeline stage's share (its layers and
  the embedding or the LM head), split over the tensor-parallel group; the distributed
  optimizer (`--distributed-optimizer`, ZeRO-1) also splits the fp32 masters and optimizer
  states over the data- and context-parallel replicas (Megatron-LM
  docs/user-guide/features/dist_optimizer.md at d98e8a6: 6 + 12/d bytes per parameter with
  bf16 parameters and fp32 gradients). Megatron's DDP keeps gradients in one contiguous buffer
  the parameters' .grad point into: no bucket copy.
- activations: tensor parallelism splits what the linears and attention save; without
  sequence parallelism the norms' and dropouts' share (10 of the 34·s·b·h bytes per layer)
  stays whole on every rank. Context parallelism splits the sequence. Under 1F1B the first
  stage holds the activations of `pipeline_parallel` micro-batches of its L/p layers, times
  1 + (p − 1)/(p·v) with v virtual stages.
- the loss: the last stage's vocabulary-parallel logits, split over tensor and context ranks.

Time of a step:
- a micro-batch on one stage: the one-GPU roofline's matmuls and attention over
  tensor × pipeline × context ranks, its pointwise traffic over pipeline × context ranks (and
  over the tensor ranks only with sequence parallelism), the host's launches over the
  pipeline stages alone (every tensor- and context-parallel rank launches every kernel of its
  layers).
- tensor parallelism: per layer two all-reduces of the b·s·h activations in the forward and
  two in the backward (two more with recomputation); sequence parallelism turns each into an
  all-gather and a reduce-scatter of the same volume. Not overlapped with compute (Megatron
  overlaps them only with tp_comm_overlap, which the fine-tuning recipes leave off).
- context parallelism: the keys and values go around the ring of context ranks, (c − 1) chunks
  per layer forward and twice that backward; Transformer Engine overlaps that with the
  attention kernels, so only what attention cannot cover is exposed.
- pipeline: each stage sends its activations forward and their gradients back once per
  micro-batch and virtual stage (split over the tensor ranks, Megatron's scatter-gather); the
  1F1B schedule adds (p − 1)/v micro-batch times of bubble to the m micro-batches of a step.
- data parallelism: the stage's gradients all-reduced (DDP) or reduce-scattered and the
  parameters all-gathered (distributed optimizer), overlapped with the last backward as for
  DDP (sizing.throughput).
Each collective also pays COLLECTIVE_LATENCY_S.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing import fp8
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.collectives import bus_gbs, topology
from gpuscout.sizing.kernels import dequant_cost
from gpuscout.sizing.memory import GB, memory_estimate, pooled
from gpuscout.sizing.memory_weights import trainable_bytes
from gpuscout.sizing.throughput import (
    REF_BANDWIDTH_GBS,
    STREAM_EFFICIENCY,
    MicroBatch,
    flops_per_token,
    micro_batch,
    optimizer_step_bytes,
    peak_tflops,
)
from gpuscout.sizing.types import Dtype, JobSpec, MemoryEstimate, TimeEstimate

# Korthikanti et al. 2022, Table 2: 34·s·b·h bytes of a layer's activations (16-bit, without
# attention's s² terms), of which the norms and dropouts keep 10 on every tensor-parallel rank
# unless sequence parallelism splits them.
LAYER_ACTIVATION_UNITS = 34
REPLICATED_UNITS = 10
# A ring collective's start-up on NVLink/NVSwitch (NCCL's latency term, a few microseconds
# per hop); an assumption, named here.
COLLECTIVE_LATENCY_S = 20e-6
# Megatron's data-parallel gradient reduction overlaps the backward pass when it is bucketed
# (overlap_grad_reduce), about the backward's 2/3 of a micro-batch; the rest is exposed.
BACKWARD_SHARE = 2 / 3


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    vp: int
    cp: int
    dp: int
    sp: bool
    micro_batches: int
    distributed_optimizer: bool

    def describe(self) -> str:
        parts = [f"tensor {self.tp}" + (" (+ sequence)" if self.sp else "")]
        if self.pp > 1:
            parts.append(f"pipeline {self.pp}" + (f" × {self.vp} virtual" if self.vp > 1 else ""))
        if self.cp > 1:
            parts.append(f"context {self.cp}")
        parts.append(f"data {self.dp}"
                     + (" (distributed optimizer)" if self.distributed_optimizer else ""))
        return " · ".join(parts)


def is_model_parallel(job: JobSpec) -> bool:
    return job.model_parallel > 1


def layout(job: JobSpec) -> Layout:
    return Layout(tp=job.tensor_parallel, pp=job.pipeline_parallel, vp=job.virtual_stages,
                  cp=job.context_parallel, dp=job.data_parallel, sp=job.sequence_parallel,
                  micro_batches=job.grad_accum,
                  distributed_optimizer=job.sharding == "zero1" and job.data_parallel > 1)


def one_gpu_job(job: JobSpec) -> JobSpec:
    """The same micro-batch on one GPU holding the whole model: what the split divides. Its
    state is laid out as Megatron keeps it, 16-bit parameters and gradients beside fp32
    master weights and optimizer states (the ZeRO layout on one rank; no autocast of fp32
    weights), whether or not the distributed optimizer then shards the fp32 part."""
    return job.model_copy(update={
        "gpus": 1, "tensor_parallel": 1, "pipeline_parallel": 1, "virtual_stages": 1,
        "context_parallel": 1, "sequence_parallel": False, "sharding": "zero1"})


def stage_share(arch: Architecture, lay: Layout) -> float:
    """The heaviest pipeline stage's share of the parameters: its layers and the embedding
    (first stage) or the LM head (last stage; the embedding's copy when they are tied)."""
    if lay.pp == 1:
        return 1.0
    total = arch.total_params
    outer = arch.embedding_params + arch.lm_head_params
    layers = max(1, arch.total_layers)
    per_stage = (total - outer) * math.ceil(layers / lay.pp) / layers
    head = arch.lm_head_params or arch.embedding_params
    return min(1.0, (per_stage + max(arch.embedding_params, head)) / total)


def activation_share(lay: Layout) -> float:
    """A rank's share of one micro-batch's activations of the whole model (see the module
    docstring): the tensor and context split times the micro-batches 1F1B keeps in flight."""
    tp = 1 / lay.tp if lay.sp else (
        REPLICATED_UNITS + (LAYER_ACTIVATION_UNITS - REPLICATED_UNITS) / lay.tp
    ) / LAYER_ACTIVATION_UNITS
    inflight = 1.0
    if lay.pp > 1:
        inflight = min(lay.micro_batches, lay.pp) / lay.pp * (
            1 + (lay.pp - 1) / (lay.pp * lay.vp))
    return tp / lay.cp * inflight


def check(arch: Architecture, job: JobSpec) -> None:
    """What the model's shape refuses: more pipeline chunks than layers, more tensor ranks
    than attention heads."""
    lay = layout(job)
    if lay.pp * lay.vp > arch.total_layers:
        raise UserInputError(f"{lay.pp} pipeline stages × {lay.vp} virtual stages need at least "
                             f"as many layers; {arch.model_id} has {arch.total_layers}")
    if lay.tp > arch.num_heads:
        raise UserInputError(f"--tensor-parallel {lay.tp} splits attention by heads; "
                             f"{arch.model_id} has {arch.num_heads}")


def parallel_memory(arch: Architecture, job: JobSpec, dtype: Dtype,
                    vram_gb: float | None) -> MemoryEstimate:
    """Peak memory per GPU of a tensor/pipeline/context-parallel job."""
    lay = layout(job)
    base = memory_estimate(arch, one_gpu_job(job), dtype)
    b = {k: v * GB for k, v in base.breakdown.items()}
    state = stage_share(arch, lay) / lay.tp
    replicas = lay.dp * lay.cp if lay.distributed_optimizer else 1
    terms = {
        "weights_frozen": b["weights_frozen"] * state,
        "weights_trainable": b["weights_trainable"] * state,
        "master_weights": b["master_weights"] * state / replicas,
        "autocast_copy": b["autocast_copy"] * state,
        "gradients": b["gradients"] * state,
        "optimizer_states": b["optimizer_states"] * state / replicas,
        "activations": b["activations"] * activation_share(lay),
        "logits_and_loss": b["logits_and_loss"] / (lay.tp * lay.cp),
        "sharding_buffers": 0.0,
        "dequant_buffer": b["dequant_buffer"] / lay.tp,
    }
    if "fp8_copies" in b:
        terms["fp8_copies"] = b["fp8_copies"] * state
    notes = [f"model parallel over {job.gpus} GPUs: {lay.describe()}; memory per GPU on the "
             f"heaviest pipeline stage ({stage_share(arch, lay):.0%} of the weights, split "
             f"{lay.tp} ways)"]
    if lay.pp > 1:
        notes.append(f"1F1B keeps {min(lay.micro_batches, lay.pp)} micro-batches of "
                     f"activations in flight on the first stage"
                     + (f", × {1 + (lay.pp - 1) / (lay.pp * lay.vp):.2f} interleaved"
                        if lay.vp > 1 else ""))
    if lay.tp > 1 and not lay.sp:
        notes.append("no sequence parallelism: the norms' and dropouts' activations stay whole "
                     "on every tensor-parallel rank")
    tail = [n for n in base.notes if "variable-length batches" not in n]
    return pooled(terms, b["stale_loss_segments"] / (lay.tp * lay.cp), 0.0, vram_gb,
                  notes=notes, tail=tail, trainable=base.trainable_params,
                  total=base.total_params, host=0.0)


def _weight_traffic(arch: Architecture, job: JobSpec) -> float:
    """Pointwise bytes of one micro-batch that follow the weights (throughput.micro_batch)."""
    moved = fp8.cast_weight_bytes(arch, job)
    if job.quant != "none":
        cost = dequant_cost(job)
        passes = 1 + (1 if job.grad_checkpointing else 0) + (1 if cost.in_backward else 0)
        moved += passes * arch.linear_weight_params * cost.bytes_per_weight
    return moved


@dataclass(frozen=True)
class Communication:
    """Seconds one micro-batch spends in each kind of model-parallel traffic on one stage."""

    tensor_parallel_s: float
    context_parallel_s: float  # exposed: what attention does not cover
    pipeline_p2p_s: float


def link_gbs(gpu: GpuSpec, n: int) -> float:
    """Achievable GB/s per GPU of a ring over `n` GPUs placed as `collectives.topology` places
    them: inside one machine its GPU link, beyond it the network."""
    return bus_gbs(topology(gpu, n), gpu)


def _ring(n: int, nbytes: float, gbs: float) -> float:
    """An all-reduce (as reduce-scatter + all-gather) of `nbytes` over `n` ranks."""
    return 2 * (n - 1) / n * nbytes / (gbs * 1e9) + 2 * COLLECTIVE_LATENCY_S


def communication(arch: Architecture, job: JobSpec, gpu: GpuSpec, lay: Layout,
                  attention_s: float) -> Communication:
    tokens = job.batch_size * job.seq_len / lay.cp  # a rank's share of the micro-batch
    act = tokens * arch.hidden_size * 2  # bf16 activations, also under FP8
    layers = arch.total_layers / lay.pp
    tp_s = 0.0
    if lay.tp > 1:
        collectives = layers * (4 + (2 if job.grad_checkpointing else 0))
        tp_s = collectives * _ring(lay.tp, act, link_gbs(gpu, lay.tp))
    cp_s = 0.0
    if lay.cp > 1:
        kv = tokens * 2 * arch.kv_dim / lay.tp * 2  # keys and values, bf16
        ring = layers * 3 * (lay.cp - 1) * (kv / (link_gbs(gpu, lay.tp * lay.cp) * 1e9)
                                            + COLLECTIVE_LATENCY_S)
        cp_s = max(0.0, ring - attention_s)
    pp_s = 0.0
    if lay.pp > 1:
        pp_s = 2 * lay.vp * (act / lay.tp / (link_gbs(gpu, job.gpus) * 1e9)
                             + COLLECTIVE_LATENCY_S)
    return Communication(tp_s, cp_s, pp_s)


def parallel_time(arch: Architecture, job: JobSpec, gpu: GpuSpec, dtype: Dtype,
                  tokens: int | None = None) -> TimeEstimate:
    """Time of a step of a tensor/pipeline/context-parallel job (see the module docstring)."""
    lay = layout(job)
    single = one_gpu_job(job).timed.model_copy(update={"grad_accum": 1})
    mb = micro_batch(arch, single, gpu, dtype)
    split = lay.tp * lay.pp * lay.cp
    pointwise_split = lay.pp * lay.cp * (lay.tp if lay.sp else LAYER_ACTIVATION_UNITS / (
        REPLICATED_UNITS + (LAYER_ACTIVATION_UNITS - REPLICATED_UNITS) / lay.tp))
    # traffic that follows the weights (FP8 weight casts, a quantized base's dequantization)
    # splits with the weights, the rest with the activations
    bandwidth = (gpu.mem_bandwidth_gbs or REF_BANDWIDTH_GBS) * 1e9 * STREAM_EFFICIENCY
    weight_s = _weight_traffic(arch, single) / bandwidth
    pointwise_s = (mb.pointwise_s - weight_s) / pointwise_split + weight_s / (lay.tp * lay.pp)
    stage = MicroBatch(matmul_s=mb.matmul_s / split, attention_s=mb.attention_s / split,
                       pointwise_s=pointwise_s,
                       matmul_launch_s=mb.matmul_launch_s / lay.pp,
                       other_launch_s=mb.other_launch_s / lay.pp,
                       weights_s=mb.weights_s / (lay.tp * lay.pp))
    comm = communication(arch, single, gpu, lay, stage.attention_s)
    model_parallel_s = comm.tensor_parallel_s + comm.context_parallel_s + comm.pipeline_p2p_s
    per_micro = stage.seconds + model_parallel_s
    bubble = (lay.pp - 1) / lay.vp * per_micro
    compute = lay.micro_batches * per_micro + bubble
    share = stage_share(arch, lay) / lay.tp
    grads = trainable_bytes(arch, single, dtype).grad * share
    dp_s = dp_comm = 0.0
    if lay.dp > 1:
        dp_comm = _ring(lay.dp, grads, link_gbs(gpu, job.gpus))
        dp_s = max(0.0, dp_comm - BACKWARD_SHARE * per_micro)
    replicas = lay.dp * lay.cp if lay.distributed_optimizer else 1
    t_opt = optimizer_step_bytes(arch, single, dtype) * share / replicas / bandwidth
    step = compute + dp_s + t_opt
    timed = job.timed
    tokens_step = timed.batch_size * timed.seq_len * lay.micro_batches * lay.dp
    tps = tokens_step / step
    model_f, hw_f = flops_per_token(arch, timed)
    tflops = peak_tflops(gpu, dtype)
    mfu = tokens_step * model_f / (job.gpus * tflops * 1e12 * step)
    notes = [f"{lay.describe()}: per micro-batch on a stage {stage.seconds:.3f} s of compute"]
    if lay.tp > 1:
        notes.append(f"tensor parallel {lay.tp} at ~{link_gbs(gpu, lay.tp):.0f} GB/s per GPU: "
                     f"{comm.tensor_parallel_s:.3f} s of "
                     f"{'all-gathers and reduce-scatters' if lay.sp else 'all-reduces'} per "
                     f"micro-batch, not overlapped"
                     + ("; beyond one NVLink domain of 8 GPUs" if lay.tp > 8 else ""))
    if lay.cp > 1:
        notes.append(f"context parallel {lay.cp}: key/value ring {comm.context_parallel_s:.3f} "
                     f"s per micro-batch beyond what attention hides")
    if lay.pp > 1:
        notes.append(f"pipeline {lay.pp} stages × {lay.micro_batches} micro-batches"
                     + (f", {lay.vp} virtual stages" if lay.vp > 1 else "")
                     + f": bubble {bubble:.3f} s per step ({(lay.pp - 1) / lay.vp:.2f} "
                     f"micro-batch times), point-to-point {comm.pipeline_p2p_s:.3f} s per "
                     f"micro-batch")
        if lay.micro_batches < lay.pp:
            notes.append(f"fewer micro-batches ({lay.micro_batches}) than pipeline stages "
                         f"({lay.pp}): raise --grad-accum to fill the pipeline")
    if lay.dp > 1:
        how = ("reduce-scattered, parameters all-gathered" if lay.distributed_optimizer
               else "all-reduced")
        notes.append(f"data parallel {lay.dp}: gradients {how}, {dp_s:.3f} s per step exposed")
    hours = tokens / tps / 3600 if tokens else None
    return TimeEstimate(
        flops_per_token=model_f,
        hardware_flops_per_token=hw_f,
        tokens_per_s=round(tps, 1),
        tokens_per_s_per_gpu=round(tps / job.gpus, 1),
        step_time_s=round(step, 4),
        hours=None if hours is None else round(hours, 3),
        mfu=round(mfu, 4),
        scaling_efficiency=round(lay.micro_batches * stage.seconds / step, 4),
        peak_tflops=tflops,
        bound=stage.bound,
        optimizer_step_s=round(t_opt, 4),
        communication_s=round(lay.micro_batches * model_parallel_s + dp_comm, 4),
        communication_exposed_s=round(lay.micro_batches * model_parallel_s + dp_s, 4),
        micro_batch_s={"matmul": round(stage.matmul_s, 4),
                       "attention": round(stage.attention_s, 4),
                       "pointwise": round(stage.pointwise_s, 4),
                       "launch": round(stage.host_s, 4), "weights": round(stage.weights_s, 4),
                       "tensor_parallel": round(comm.tensor_parallel_s, 4),
                       "context_parallel": round(comm.context_parallel_s, 4),
                       "pipeline_p2p": round(comm.pipeline_p2p_s, 4),
                       "bubble": round(bubble / max(1, lay.micro_batches), 4)},
        notes=notes,
    )


def nvlink_domain(gpu: GpuSpec, gpus_per_node: int) -> int:
    """GPUs one tensor-parallel group can span at NVLink speed on a machine: the whole
    machine on SXM, OAM and superchip boards (NVSwitch), a bridge's pair or quad on PCIe cards
    that have one, and no group over plain PCIe (the same reading as throughput.link_gbs)."""
    if gpu.nvlink_gbps and gpu.form_factor in ("SXM", "Superchip", "OAM"):
        return gpus_per_node
    text = gpu.nvlink.lower()
    if gpu.nvlink_gbps and "bridge" in text:
        ways = re.search(r"(\d)-way", text)
        return min(gpus_per_node, int(ways.group(1)) if ways else 2)
    return 1


def tensor_parallel_jobs(job: JobSpec, gpu: GpuSpec, gpus: int) -> list[JobSpec]:
    """`job` on `gpus` GPUs of one machine with tensor parallelism inside its NVLink domain
    (2, 4 or 8 ranks, with sequence parallelism) and the distributed optimizer over the
    replicas: what a recommendation tries when sharding the state alone does not fit (tensor
    parallelism also splits the activations, which ZeRO does not)."""
    domain = min(nvlink_domain(gpu, gpus), 8)
    out: list[JobSpec] = []
    for tp in (2, 4, 8):
        if tp > domain or gpus % tp:
            continue
        out.append(JobSpec(**{**job.model_dump(), "gpus": gpus, "tensor_parallel": tp,
                              "pipeline_parallel": 1, "virtual_stages": 1,
                              "context_parallel": 1, "sequence_parallel": True,
                              "offload": "none",
                              "sharding": "zero1" if gpus > tp else "none"}))
    return out
