"""Sharding buffers, the optimizer step's buffer, the allocator's reserve and the CUDA context
(sizing/memory_buffers.py, summed in sizing/memory.py)."""

from __future__ import annotations

import pytest
from memory_cases import A, F, H, P, V, full, gb

from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_buffers import CUDA_CONTEXT_GB, FRAGMENTATION
from gpuscout.sizing.memory_units import GB, GIB
from gpuscout.sizing.types import JobSpec


def test_foreach_adamw_step_buffer_only_beyond_the_training_pool() -> None:
    """The multi-tensor step holds every gradient, the states and sqrt's state-sized buffer
    after activations are freed; only what the training pool cannot hold adds to the peak."""
    short = full(mixed_precision=False, seq_len=128, batch_size=1)
    fused = memory_estimate(A, short)
    foreach = memory_estimate(A, short.model_copy(update={"optimizer": "adamw-foreach"}))
    b = fused.breakdown
    step = b["weights_trainable"] + b["gradients"] + b["optimizer_states"] + gb(2 * P)
    pool = fused.reserved_gb
    assert b["optimizer_step_buffer"] == 0
    assert foreach.breakdown["optimizer_step_buffer"] == pytest.approx(step - pool, abs=2e-3)
    assert foreach.reserved_gb == pytest.approx(step, abs=2e-3)
    # long sequences: the activations' pool already holds the step
    long = full(mixed_precision=False, seq_len=8192, grad_checkpointing=False)
    assert memory_estimate(A, long.model_copy(update={"optimizer": "adamw-foreach"})) \
        .breakdown["optimizer_step_buffer"] == 0


def test_sharding_buffers() -> None:
    z3 = memory_estimate(A, full(gpus=8, sharding="zero3")).breakdown["sharding_buffers"]
    assert z3 == gb(1e9 * 2 + 5e8 * 2)  # live-parameter cache + reduce bucket, 16-bit
    block = 4 * H * H + 3 * H * F + 2 * H
    fs = memory_estimate(A, full(gpus=8, sharding="fsdp")).breakdown["sharding_buffers"]
    # current + prefetched layer unit, and the root unit (embedding + untied LM head), which
    # FULL_SHARD keeps unsharded from its forward to the end of backward
    assert fs == gb(2 * block * 2 + 2 * V * H * 2)
    ddp = memory_estimate(A, full(gpus=2, sharding="ddp", mixed_precision=False))
    assert ddp.breakdown["sharding_buffers"] == gb(2 * P)  # gradient buckets


def test_zero_gradient_bucket_is_allocated_whole_for_peft() -> None:
    # DeepSpeed allocates reduce_bucket_size (5e8) elements in the model dtype whatever the
    # trainable count: a LoRA job on ZeRO-3 holds 1 GB of bucket in bf16 and 2 GB in fp32
    lora = JobSpec(method="lora", gpus=2, sharding="zero3")
    live = 1e9  # stage3_max_live_parameters, below the 6.7B parameters
    assert memory_estimate(A, lora).breakdown["sharding_buffers"] == gb(live * 2 + 5e8 * 2)
    fp32 = memory_estimate(A, lora.model_copy(update={"dtype": "fp32"}))
    assert fp32.breakdown["sharding_buffers"] == gb(live * 4 + 5e8 * 4)


def test_reserve_context_and_device_cap() -> None:
    fixed = JobSpec(method="lora", variable_lengths=False)
    m = memory_estimate(A, fixed)
    b = m.breakdown
    # fragmentation on what training allocates; the weights were loaded into an empty pool
    training_time = m.allocated_gb - b["weights_frozen"] - b["weights_trainable"]
    reserve = training_time * FRAGMENTATION / (1 - FRAGMENTATION)
    assert b["allocator_reserve"] == pytest.approx(reserve, abs=2e-3)
    assert b["cuda_context"] == CUDA_CONTEXT_GB
    assert m.reserved_gb == pytest.approx(m.allocated_gb + reserve, abs=2e-3)
    assert m.peak_gb_per_gpu == pytest.approx(sum(b.values()), abs=5e-3)
    # the cap is the device's binary capacity ("80GB" = 80 GiB): leave 0.1 GiB of room above
    # allocated + context, less than the reserve, and the reserve shrinks to it
    room = 0.1 * GIB
    assert room / GB < reserve
    vram = (m.allocated_gb * GB + CUDA_CONTEXT_GB * GB + room) / GIB
    capped = memory_estimate(A, fixed, vram_gb=vram)
    assert capped.breakdown["allocator_reserve"] == pytest.approx(room / GB, abs=2e-3)
    assert capped.fits is True
    # the stale segments are cached blocks too: they take the room first
    var = memory_estimate(A, JobSpec(method="lora"), vram_gb=vram)
    assert var.breakdown["stale_loss_segments"] == pytest.approx(room / GB, abs=2e-3)
    assert var.breakdown["allocator_reserve"] == pytest.approx(0, abs=2e-3)
    assert var.fits is True
    assert memory_estimate(A, full(), vram_gb=24).fits is False
