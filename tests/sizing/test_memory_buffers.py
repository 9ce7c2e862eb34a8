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
    # the margin is shown whole, not capped; what the job needs does not move
    assert capped.margin_gb["fragmentation"] == pytest.approx(reserve, abs=2e-3)
    assert capped.need_gb_per_gpu == pytest.approx(m.need_gb_per_gpu, abs=2e-3)
    # the stale segments are cached blocks too: they take the room first
    var = memory_estimate(A, JobSpec(method="lora"), vram_gb=vram)
    assert var.breakdown["stale_loss_segments"] == pytest.approx(room / GB, abs=2e-3)
    assert var.breakdown["allocator_reserve"] == pytest.approx(0, abs=2e-3)
    assert var.margin_gb["stale_loss_segments"] > room / GB
    assert memory_estimate(A, full(), vram_gb=24).fits is False


def test_one_verdict_on_what_the_job_needs_with_the_margin_said_apart() -> None:
    """`fits` is tensors + CUDA context against 95 % of the card (the recommendation's rule);
    the allocator's margin is reported beside it and the verdict says which held."""
    from gpuscout.sizing.memory import fit_verdict

    job = JobSpec(method="lora", batch_size=4, seq_len=2048)
    m = memory_estimate(A, job)
    need = m.allocated_gb + CUDA_CONTEXT_GB
    assert m.need_gb_per_gpu == pytest.approx(need, abs=2e-3)
    margin = sum(m.margin_gb.values())
    assert set(m.margin_gb) == {"fragmentation", "stale_loss_segments"}
    # a card whose usable share sits between the need and the need with its margin
    vram = (need + margin / 2) * GB / GIB / 0.95
    mid = memory_estimate(A, job, vram_gb=vram)
    assert mid.usable_gb_per_gpu == pytest.approx(need + margin / 2, abs=2e-3)
    assert mid.fits is True and mid.fits_with_margin is False
    verdict = fit_verdict(mid)
    assert verdict is not None and verdict.startswith(
        f"fits: needs {need:,.1f} of {need + margin / 2:,.1f} GB usable per GPU on its tensors")
    roomy = memory_estimate(A, job, vram_gb=(need + 2 * margin) * GB / GIB / 0.95)
    assert roomy.fits and roomy.fits_with_margin
    assert "within it too" in (fit_verdict(roomy) or "")
    small = memory_estimate(A, job, vram_gb=need * 0.9 * GB / GIB / 0.95)
    assert small.fits is False and (fit_verdict(small) or "").startswith("does not fit: needs")
