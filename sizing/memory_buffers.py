"""What the framework and the allocator hold beside the model's tensors: data-parallel and
sharding buffers (DDP buckets, ZeRO's gradient bucket, FSDP's and ZeRO-3's gathered
parameters), the multi-tensor optimizer step's buffer, the caching allocator's fragmentation
and the CUDA context."""

from __future__ import annotations

from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32
from gpuscout.sizing.memory_weights import GPTQ_BYTES, INT8_BYTES, nf4_bytes
from gpuscout.sizing.types import Dtype, JobSpec

# The PyTorch caching allocator holds freed blocks it cannot reuse for differently sized
# requests: on LLM fine-tuning, GMLake (Guo et al., ASPLOS 2024, arXiv:2401.08156) measured
# fragmentation (reserved − allocated) / reserved of 15 % on average (up to 33 %). We use the
# average on what is allocated once training runs (activations, loss buffers, casts,
# gradients, optimizer states, sharding buffers), which interleaves with blocks freed by the
# previous step: reserved = allocated + training-time tensors · 0.15 / (1 − 0.15). Weights are
# loaded into an empty pool before the first step, each large tensor into a segment of its own
# size, and leave no gaps: the ms-swift benchmark's reserved − allocated at 2048 tokens is about
# the same 10–12 GB for Qwen-7B and Qwen-14B, in bf16, GPTQ or NF4: it does not follow weights.
FRAGMENTATION = 0.15

# CUDA context + cuBLAS/cuDNN handles outside the allocator: 0.3–2 GiB depending on driver,
# GPU and lazy module loading; HF's "model memory anatomy" measures 1,343 MB on a V100.
CUDA_CONTEXT_GB = 1.0

# DeepSpeed ZeRO default bucket sizes (reduce_bucket_size, allgather_bucket_size): 5e8 elements
# (DeepSpeed config docs; EleutherAI cookbook calc_transformer_mem.py uses the same). With
# contiguous_gradients (default true) the gradient bucket is allocated whole, in the model's
# dtype, whatever the number of trainable parameters: stage 3 at optimizer init
# (`__ipg_bucket_flat_buffer = torch.empty(reduce_bucket_size, dtype=self.dtype)`,
# deepspeed/runtime/zero/stage3.py), stages 1–2 at each backward (`ipg_buffer`,
# stage_1_and_2.py). accelerate's DeepSpeed plugin leaves it at the default.
ZERO_BUCKET_ELEMENTS = 5e8

# FSDP gathers one wrapped block for compute and prefetches the next (BackwardPrefetch
# .BACKWARD_PRE): two blocks unsharded at once. DeepSpeed ZeRO-3 keeps gathered parameters
# resident up to stage3_max_live_parameters (default 1e9) and does not release those reused
# within stage3_max_reuse_distance (default 1e9) (DeepSpeed config docs).
GATHERED_BLOCKS = 2
ZERO3_MAX_LIVE_PARAMETERS = 1e9


def _fsdp_gathered_bytes(arch: Architecture, unit_b: float, root_b: float) -> float:
    """Unsharded FSDP parameters at the peak: the running decoder-layer unit and the prefetched
    next one (GATHERED_BLOCKS), plus the root unit. With the layers wrapped, the root holds what
    lies outside them (embeddings, LM head, final norm), and FULL_SHARD does not free the root's
    parameters after its forward, "with the intention that they are immediately used for
    backward computation" (torch/distributed/fsdp/_runtime_utils.py `_post_forward_reshard`):
    they stay unsharded from the first forward op to the end of backward."""
    biggest = max(sum(m.params for m in block) for block in arch.blocks())
    root = arch.embedding_params + arch.lm_head_params + arch.other_params
    return GATHERED_BLOCKS * biggest * unit_b + root * root_b



def sharding_buffer_bytes(arch: Architecture, job: JobSpec, dt: Dtype,
                          grad_bytes: float) -> float:
    """Per GPU: DDP's gradient buckets (`grad_bytes`, the unsharded gradients), the parameters
    FSDP or ZeRO-3 hold gathered, in their storage type, and ZeRO's gradient bucket."""
    b = DTYPE_BYTES[dt]
    buffers = 0.0
    if job.sharding == "ddp" and job.gpus > 1:
        # DDP's gradient buckets are a second copy of the gradients unless
        # gradient_as_bucket_view=True (PyTorch DistributedDataParallel docs).
        buffers += grad_bytes
    if job.sharding in ("zero3", "fsdp"):
        if job.is_peft and job.quant == "nf4":
            unit_b = nf4_bytes(job)
        elif job.is_peft and job.quant == "int8":
            unit_b = INT8_BYTES
        elif job.is_peft and job.quant == "gptq":
            unit_b = GPTQ_BYTES
        else:
            unit_b = FP32 if dt == "fp32" else b
        if job.sharding == "fsdp":
            buffers += _fsdp_gathered_bytes(arch, unit_b, FP32 if dt == "fp32" else b)
        else:
            live = max(min(ZERO3_MAX_LIVE_PARAMETERS, arch.total_params),
                       arch.largest_block_params)
            buffers += live * unit_b
    if job.sharding in ("zero1", "zero2", "zero3"):
        buffers += ZERO_BUCKET_ELEMENTS * (FP32 if dt == "fp32" else b)
    return buffers


def foreach_step_bytes(terms: dict[str, float], all_gradients: float, job: JobSpec,
                       one_state: float) -> float:
    """What torch.optim.AdamW's multi-tensor step (`adamw-foreach`) holds at once (0 for the
    other optimizers): it runs after backward, when activations and the loss are freed but
    every gradient is alive, and `torch._foreach_sqrt` makes one new buffer of a state's
    size for all parameters together."""
    if job.optimizer != "adamw-foreach":
        return 0.0
    resident = ("weights_frozen", "weights_trainable", "master_weights", "optimizer_states",
                "sharding_buffers", "dequant_buffer", "fp8_copies")
    return sum(terms.get(k, 0.0) for k in resident) + all_gradients + one_state
