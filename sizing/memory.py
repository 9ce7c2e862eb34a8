"""Per-GPU peak memory of a fine-tuning job, term by term. Pure: no I/O, no globals mutated.

The peak is reached at the end of the forward pass / start of the backward pass, when the
model state, every saved activation and the vocabulary-sized loss buffers are live together:

    allocated = weights + master copy + autocast copy + gradients + optimizer states
                + activations + logits/loss + sharding buffers + dequantization buffer
    reserved  = allocated + fragmentation of what training allocates (not the loaded weights)
                + loss-buffer segments left by an earlier, shorter batch (variable lengths)
    peak      = reserved + CUDA context

Each term's rule lives with its sources in a module of its own, and its tests beside it
(tests/sizing/test_memory_<module>.py):

    memory_weights      weights, master copies, gradients, optimizer states, quantized bases
    memory_activations  saved activations, recomputation, activation offloading
    memory_loss         the loss path's vocabulary-sized buffers and their stale segments
    memory_buffers      data-parallel and sharding buffers, the optimizer step's buffer, the
                        allocator's fragmentation and the CUDA context
    memory_units        bytes per dtype, GB and GiB

This module adds them up at the peak. Sources for every constant are in the comments;
FORMULAS.md (shared/sizing) has the long form.
"""

from __future__ import annotations

from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.fp8 import amax_history_bytes, weight_copy_bytes
from gpuscout.sizing.fp8 import notes as fp8_notes
from gpuscout.sizing.memory_activations import (
    OFFLOAD_RESIDENT_LAYERS,
    activation_bytes,
    offloaded_activation_bytes,
)
from gpuscout.sizing.memory_buffers import (
    CUDA_CONTEXT_GB,
    FRAGMENTATION,
    foreach_step_bytes,
    sharding_buffer_bytes,
)
from gpuscout.sizing.memory_loss import (
    CHUNKED_LOSS_CHUNKS,
    LOSS_FP32_BUFFERS,
    logits_bytes,
    stale_loss_bytes,
)
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32, GB, GIB, usable_gb, vram_label
from gpuscout.sizing.memory_weights import (
    GPTQ_BYTES,
    NF4_BYTES,
    NF4_DQ_BYTES,
    base_cast_bytes,
    dequant_buffer_bytes,
    frozen_weight_bytes,
    largest_trainable_param,
    per_param_bytes,
    trainable_bytes,
    uses_kbit_upcast,
)
from gpuscout.sizing.peft import copied_module_params, trainable_params
from gpuscout.sizing.types import Dtype, JobSpec, MemoryEstimate

# The terms live in modules by what they size, each with its sources; these names are read
# from here by the time model, the node plans and the tests.
__all__ = [
    "CHUNKED_LOSS_CHUNKS", "CUDA_CONTEXT_GB", "DTYPE_BYTES", "FP32", "FRAGMENTATION", "GB", "GIB",
    "GPTQ_BYTES", "LOSS_FP32_BUFFERS", "NF4_BYTES", "NF4_DQ_BYTES", "OFFLOAD_RESIDENT_LAYERS",
    "activation_bytes", "frozen_weight_bytes", "logits_bytes", "memory_estimate",
    "fit_verdict", "offloaded_activation_bytes", "per_param_bytes", "stale_loss_bytes",
    "trainable_bytes", "usable_gb", "uses_kbit_upcast", "vram_label",
]


def memory_estimate(arch: Architecture, job: JobSpec, dtype: Dtype | None = None,
                    vram_gb: float | None = None) -> MemoryEstimate:
    """Peak memory per GPU. `dtype` is the effective precision (after the GPU's gates)."""
    dt: Dtype = dtype or job.dtype
    b = DTYPE_BYTES[dt]
    notes: list[str] = []
    pt = trainable_params(arch, job)
    pp = per_param_bytes(arch, job, dt)
    state = trainable_bytes(arch, job, dt)
    n = job.gpus
    sharded = job.sharding in ("zero1", "zero2", "zero3", "fsdp")
    shards_params = job.sharding in ("zero3", "fsdp")
    div_opt = n if sharded else 1
    div_grad = n if job.sharding in ("zero2", "zero3", "fsdp") else 1
    div_w = n if shards_params else 1

    frozen = frozen_weight_bytes(arch, job, dt) if job.is_peft else 0.0
    terms: dict[str, float] = {
        "weights_frozen": frozen / div_w,
        "weights_trainable": state.weight / div_w,
        "master_weights": state.master / div_opt,
        "autocast_copy": state.autocast,
        "gradients": state.grad / div_grad,
        "optimizer_states": state.optimizer / div_opt,
    }
    host = 0.0
    if job.offload in ("optimizer", "params"):
        host += (terms["optimizer_states"] + terms["master_weights"]) * n
        terms["optimizer_states"] = terms["master_weights"] = 0.0
        notes.append("optimizer states and fp32 master weights live in CPU RAM (ZeRO-Offload)")
    if job.offload == "params":
        host += (terms["weights_frozen"] + terms["weights_trainable"] + terms["gradients"]) * n
        terms["weights_frozen"] = terms["weights_trainable"] = terms["gradients"] = 0.0
        notes.append("parameters and gradients live in CPU RAM; each block is copied in when "
                     "it runs")

    terms["activations"] = activation_bytes(arch, job, dt)
    offloaded = offloaded_activation_bytes(arch, job, dt)
    if offloaded:
        host += offloaded * n
        notes.append(f"activation offloading: {offloaded / GB:.2f} GB of saved activations per "
                     f"GPU wait in pinned CPU RAM; {OFFLOAD_RESIDENT_LAYERS} layers stay on the "
                     f"GPU")
    terms["logits_and_loss"] = logits_bytes(arch, job)
    all_gradients = terms["gradients"]
    if job.grad_accum == 1 and not job.is_peft and terms["gradients"] > 0:
        # Without accumulation the previous step's gradients were freed (zero_grad sets them
        # to None, PyTorch ≥ 2.0), so at the start of backward only the output layer's
        # gradient exists; the rest grow as activations are freed. The peak is the larger of
        # the two moments: start of backward, or all gradients at the end of it.
        head = arch.vocab_size * arch.hidden_size * pp.grad / div_grad
        dynamic = terms["activations"] + terms["logits_and_loss"]
        live = max(min(head, terms["gradients"]), terms["gradients"] - dynamic)
        if live < terms["gradients"]:
            notes.append("no gradient accumulation: most gradients are allocated only as "
                         "the backward pass frees activations")
        terms["gradients"] = live

    if job.optimizer_in_backward and terms["gradients"] > 0:
        # torchtune optimizer_in_bwd: a post-accumulate-grad hook steps each parameter and
        # frees its gradient at once, so at most the largest parameter's gradient is alive.
        # a trained embedding (the largest then) has a 16-bit gradient (`trainable_bytes`)
        grad_b = b if copied_module_params(arch, job) else pp.grad
        terms["gradients"] = min(terms["gradients"],
                                 largest_trainable_param(arch, job) * grad_b / div_grad)
        notes.append("optimizer in backward: each gradient is applied and freed as soon as "
                     "it is computed")

    terms["sharding_buffers"] = sharding_buffer_bytes(arch, job, dt, state.grad)

    _add_copies(terms, arch, job, dt, div_w)

    step = foreach_step_bytes(terms, all_gradients, job, state.optimizer / 2 / div_opt)
    total = arch.total_params + (pt if job.is_peft else 0)
    return pooled(terms, stale_loss_bytes(arch, job), step, vram_gb, notes=notes,
                  tail=_notes(arch, job, dt, pt) + fp8_notes(job), trainable=pt, total=total,
                  host=host)


def pooled(terms: dict[str, float], stale: float, step: float, vram_gb: float | None, *,
           notes: list[str], tail: list[str], trainable: int, total: int,
           host: float) -> MemoryEstimate:
    """The estimate from the tensors' terms (bytes): the caching allocator's reserve on what
    training allocates, the stale loss segments, the optimizer step's buffer beyond the pool,
    the CUDA context, each capped by the device. `tail`: notes to follow the allocator's."""
    allocated = sum(terms.values())
    training_time = allocated - terms["weights_frozen"] - terms["weights_trainable"]
    reserve = training_time * FRAGMENTATION / (1 - FRAGMENTATION)
    margin = {"fragmentation": reserve, "stale_loss_segments": stale}  # whole, never capped
    if vram_gb is not None:
        # The allocator frees cached blocks and retries before it reports out-of-memory, so the
        # cache cannot push the pool past the device (PyTorch CUDA semantics docs).
        room = vram_gb * GIB - CUDA_CONTEXT_GB * GB - allocated
        if room > 0:
            stale = min(stale, room)
            reserve = min(reserve, room - stale)
    if stale:
        notes.append("variable-length batches: the allocator also keeps the loss-buffer "
                     "segments of an earlier, shorter batch (stale_loss_segments; packing, "
                     "fixed-length padding or torch.cuda.empty_cache() between steps avoid it)")
    # The step's buffer is carved from the segments the freed activations leave cached: only
    # what the training pool cannot hold grows the pool.
    excess = max(0.0, step - (allocated + reserve + stale))
    allocated += excess
    terms["optimizer_step_buffer"] = excess
    terms["allocator_reserve"] = reserve
    terms["stale_loss_segments"] = stale
    terms["cuda_context"] = CUDA_CONTEXT_GB * GB
    peak = allocated + reserve + stale + CUDA_CONTEXT_GB * GB
    notes = notes + tail
    need = allocated + CUDA_CONTEXT_GB * GB
    usable = usable_gb(vram_gb) if vram_gb is not None else None
    with_margin = (need + sum(margin.values())) / GB
    return MemoryEstimate(
        need_gb_per_gpu=round(need / GB, 3),
        margin_gb={k: round(v / GB, 3) for k, v in margin.items() if v},
        usable_gb_per_gpu=None if usable is None else round(usable, 3),
        fits_with_margin=None if usable is None else with_margin <= usable,
        peak_gb_per_gpu=round(peak / GB, 3),
        allocated_gb=round(allocated / GB, 3),
        reserved_gb=round((allocated + reserve + stale) / GB, 3),
        breakdown={k: round(v / GB, 3) for k, v in terms.items()},
        trainable_params=trainable,
        total_params=total,
        host_ram_gb=round(host / GB, 3),
        fits=None if usable is None else need / GB <= usable,
        notes=notes,
    )




def fit_verdict(m: MemoryEstimate, where: str = "per GPU") -> str | None:
    """The one fit line every face prints: what the job needs of what the card gives, and
    whether the allocator's margin (fragmentation, stale loss segments) fits too. The verdict
    is on what the job needs: the caching allocator gives its cache back and retries before it
    fails (PyTorch CUDA semantics docs), so its margin costs time, not the run."""
    if m.usable_gb_per_gpu is None or m.fits is None:
        return None
    margin = sum(m.margin_gb.values())
    head = (f"{'fits' if m.fits else 'does not fit'}: needs {m.need_gb_per_gpu:,.1f} of "
            f"{m.usable_gb_per_gpu:,.1f} GB usable {where}")
    if not m.fits or not margin:
        return head
    parts = ", ".join(f"{k.replace('_', ' ')} {v:,.1f} GB" for k, v in m.margin_gb.items())
    total = m.need_gb_per_gpu + margin
    if m.fits_with_margin:
        return f"{head}; with the allocator's margin ({parts}) {total:,.1f} GB, within it too"
    return (f"{head} on its tensors; with the allocator's margin ({parts}) it would hold "
            f"{total:,.1f} GB, more than the card: the allocator gives back cached segments "
            f"and retries, which slows steps")


def _add_copies(terms: dict[str, float], arch: Architecture, job: JobSpec, dt: Dtype,
                div_w: int) -> None:
    """The copies a job's code path makes beside its weights: 16-bit casts of fp32 weights
    under autocast, a stray embedding gradient, a quantized base's dequantized matrices and
    FP8 workspaces."""
    b = DTYPE_BYTES[dt]
    if uses_kbit_upcast(job) and dt != "fp32" and arch.output_projection_params:
        # The fp32-upcast LM head runs under autocast: its 16-bit cast is made every forward
        # and saved by the matmul for the backward pass (torch.autocast caches casts only of
        # trainable leaves, so the frozen head is re-cast and held each step).
        terms["autocast_copy"] += arch.output_projection_params * b
    terms["autocast_copy"] += base_cast_bytes(arch, job, b)
    if job.embedding_grad and job.is_peft:
        # a trainable-looking embedding nothing steps (litgpt's StableEmbedding swap): its
        # dense 16-bit gradient is written by every backward and never freed
        terms["gradients"] += arch.embedding_params * b / div_w
    terms["dequant_buffer"] = dequant_buffer_bytes(arch, job, b)
    if dt == "fp8":
        # Transformer Engine's FP8 weight workspaces and amax histories (sizing/fp8.py)
        terms["fp8_copies"] = (weight_copy_bytes(arch, job) + amax_history_bytes(arch, job)) \
            / div_w


def _notes(arch: Architecture, job: JobSpec, dt: Dtype, pt: int) -> list[str]:
    out: list[str] = []
    sixteen = "bf16" if dt == "fp8" else dt  # fp8 keeps its tensors in bf16
    if job.is_peft and not job.adapter_fp32 and dt != "fp32":
        out.append(f"{job.method}: {pt:,} trainable parameters in {sixteen}, with {sixteen} "
                   f"gradients and optimizer states (adapters built in the model's dtype)")
    elif job.is_peft:
        out.append(f"{job.method}: {pt:,} trainable parameters, kept in fp32 with fp32 "
                   f"gradients and optimizer states (PEFT default)")
    elif dt == "fp32":
        out.append("fp32 weights, gradients and optimizer states")
    elif job.mixed_precision:
        out.append("mixed precision: fp32 master weights and optimizer states, 16-bit compute")
    else:
        out.append(f"pure {sixteen}: weights, gradients and optimizer states all in "
                   f"{sixteen}")
    if uses_kbit_upcast(job):
        out.append("prepare_model_for_kbit_training casts embeddings, LM head and norms to "
                   "fp32, so the hidden states and activations run in fp32 too")
    elif (job.quant in ("nf4", "int8") and job.upcast_non_quantized
          and job.sharding in ("zero3", "fsdp")):
        out.append("sharded k-bit base: FSDP and ZeRO-3 keep one dtype per flattened unit, so "
                   "PEFT's k-bit preparation is skipped (TRL) and embeddings, head, norms and "
                   "hidden states stay 16-bit: less memory traffic per token than the one-GPU "
                   "default, which --no-upcast-non-quantized times the same way")
    if job.grad_checkpointing:
        out.append("gradient checkpointing: one block input kept per layer, one block "
                   "recomputed at a time")
    out += _knob_notes(job)
    if not job.flash_attention:
        out.append("eager attention keeps the heads × seq × seq softmax per layer")
    if arch.arch == "encoder":
        out.append("encoder-only model: a small classification head, no vocabulary logits")
    if job.optimizer == "paged-adamw-8bit":
        out.append("paged optimizer states can spill to CPU RAM under pressure; the estimate "
                   "keeps them on the GPU")
    if job.optimizer == "adamw":
        out.append("AdamW fused (the HF Trainer default adamw_torch_fused from torch 2.8); "
                   "--optimizer adamw-foreach for torch.optim.AdamW without fused=True, which "
                   "moves ~2.7x the bytes and needs one more state-sized buffer at the step")
    return out


def _knob_notes(job: JobSpec) -> list[str]:
    out: list[str] = []
    if job.loss != "eager":
        out.append({"chunked": "chunked cross-entropy: the log-probabilities of every chunk "
                               "are kept for backward, one chunk's gradients at a time",
                    "fused": "fused linear cross-entropy: no vocabulary-sized buffer outlives "
                             "a chunk",
                    "unsloth": "Unsloth's fused cross-entropy: the logits in chunks of up to "
                               "4 GiB in fp32, loss and gradients computed in the forward",
                    "cce": "Cut Cross-Entropy: logits never materialized, one fp32 hidden-state "
                           "gradient per token"}[job.loss])
    if job.compile:
        out.append("torch.compile: the gated MLP's activation output is recomputed, not "
                   "saved; speed-up not modeled")
    if job.base_fp32 and job.is_peft and job.quant == "none":
        out.append("frozen base kept in fp32 under autocast (bf16-mixed): 4 bytes per weight, "
                   "and the 16-bit casts the matmuls save for backward")
    if job.quantize_head and job.quant != "none":
        out.append("the LM head is quantized with the blocks (every nn.Linear is replaced)")
    if job.embedding_grad and job.is_peft:
        out.append("the input embedding gets a dense gradient that no optimizer steps or frees")
    if job.logits_kept and job.loss in ("eager", "chunked"):
        out.append("the training loop holds the 16-bit logits through backward")
    if job.train_embeddings:
        out.append("embeddings and LM head trained (modules_to_save): trainable copies beside "
                   "the frozen originals, in the base model's dtype with 16-bit gradients and "
                   "optimizer states")
    if job.quant == "nf4" and job.nf4_backend == "torchao":
        out.append("torchao NF4Tensor base (double-quantized scales always)")
    if job.loss in ("eager", "chunked") and not job.fp32_loss:
        out.append(f"the {job.loss} loss runs on the 16-bit logits (no autocast, no "
                   "logits.float()): its buffers are 16-bit")
    if job.lora_dropout > 0 and job.method in ("lora", "qlora", "dora"):
        out.append(f"LoRA dropout {job.lora_dropout:g}: each adapted module keeps its dropped-"
                   "out input and a one-byte mask")
    return out
