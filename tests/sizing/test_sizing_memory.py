"""Each memory term against a hand computation on Llama-2-7B (h 4096, f 11008, 32 layers)."""

from __future__ import annotations

import pytest

from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.memory import (
    CUDA_CONTEXT_GB,
    FRAGMENTATION,
    GB,
    GIB,
    activation_bytes,
    logits_bytes,
    memory_estimate,
    stale_loss_bytes,
)
from gpuscout.sizing.types import JobSpec

A = lookup("meta-llama/Llama-2-7b-hf")
P = 6_738_415_616
LINEAR = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
H, F, L, V = 4096, 11008, 32, 32000


def gb(x: float) -> float:
    return round(x / GB, 3)


def full(**kw: object) -> JobSpec:
    base: dict[str, object] = {"method": "full", "grad_accum": 2, "seq_len": 512}
    return JobSpec(**{**base, **kw})  # type: ignore[arg-type]


def test_pure_bf16_adamw_is_8_bytes_per_param() -> None:
    b = memory_estimate(A, full(mixed_precision=False)).breakdown
    assert b["weights_trainable"] == gb(2 * P)
    assert b["gradients"] == gb(2 * P)
    assert b["optimizer_states"] == gb(4 * P)
    assert b["master_weights"] == b["autocast_copy"] == 0


def test_amp_mixed_precision_is_18_bytes_per_param() -> None:
    b = memory_estimate(A, full()).breakdown
    assert (b["weights_trainable"], b["autocast_copy"], b["gradients"],
            b["optimizer_states"]) == (gb(4 * P), gb(2 * P), gb(4 * P), gb(8 * P))


def test_fp32_and_optimizer_variants() -> None:
    assert memory_estimate(A, full(dtype="fp32")).breakdown["optimizer_states"] == gb(8 * P)
    b8 = memory_estimate(A, full(optimizer="adamw-8bit")).breakdown
    assert b8["optimizer_states"] == gb(P * 2 * (1 + 4 / 2048))
    assert memory_estimate(A, full(optimizer="sgd")).breakdown["optimizer_states"] == gb(4 * P)
    ada = memory_estimate(A, full(optimizer="adafactor")).breakdown["optimizer_states"]
    assert 0 < ada < gb(0.01 * P * 4)  # factored second moments only


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


@pytest.mark.parametrize(("stage", "w", "g", "o"), [
    ("zero1", 1, 1, 8), ("zero2", 1, 8, 8), ("zero3", 8, 8, 8), ("fsdp", 8, 8, 8)])
def test_zero_stages_divide_the_right_states(stage: str, w: int, g: int, o: int) -> None:
    b = memory_estimate(A, full(gpus=8, sharding=stage)).breakdown
    # ZeRO mixed precision: 16-bit weights 2 + 16-bit grads 2 + fp32 master 4 + Adam 8
    assert b["weights_trainable"] == gb(2 * P / w)
    assert b["gradients"] == gb(2 * P / g)
    assert b["master_weights"] == gb(4 * P / o)
    assert b["optimizer_states"] == gb(8 * P / o)


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


def test_offload_moves_states_to_host_ram() -> None:
    m = memory_estimate(A, full(gpus=4, sharding="zero3", offload="optimizer"))
    assert m.breakdown["optimizer_states"] == m.breakdown["master_weights"] == 0
    assert m.host_ram_gb == pytest.approx(gb(12 * P), rel=1e-3)
    mp = memory_estimate(A, full(gpus=4, sharding="zero3", offload="params"))
    assert mp.breakdown["weights_trainable"] == mp.breakdown["gradients"] == 0
    assert mp.host_ram_gb == pytest.approx(gb(16 * P), rel=1e-3)


def test_nf4_weights_with_and_without_double_quant() -> None:
    nonlin = P - LINEAR
    dq = memory_estimate(A, JobSpec(method="qlora")).breakdown["weights_frozen"]
    assert dq == gb(LINEAR * (0.5 + 1 / 64 + 4 / (64 * 256)) + nonlin * 4)  # fp32 upcast
    nodq = memory_estimate(A, JobSpec(method="qlora", double_quant=False))
    assert nodq.breakdown["weights_frozen"] == gb(LINEAR * 0.5625 + nonlin * 4)
    noup = memory_estimate(A, JobSpec(method="qlora", upcast_non_quantized=False))
    assert noup.breakdown["weights_frozen"] == gb(LINEAR * (0.5 + 1 / 64 + 4 / 16384)
                                                  + nonlin * 2)
    i8 = memory_estimate(A, JobSpec(method="lora", quant="int8")).breakdown["weights_frozen"]
    row_scales = 32 * (4 * H + 2 * F + H) * 4
    assert i8 == gb(LINEAR + row_scales + nonlin * 4)


def test_peft_adapters_are_fp32_with_fp32_states() -> None:
    b = memory_estimate(A, JobSpec(method="lora", lora_rank=8)).breakdown
    pt = 32 * 8 * (2 * (H + H))
    assert (b["weights_trainable"], b["gradients"], b["optimizer_states"]) == (
        gb(4 * pt), gb(4 * pt), gb(8 * pt))
    assert b["weights_frozen"] == gb(2 * P)


def test_logits_are_three_fp32_vocabulary_buffers() -> None:
    # log_softmax's backward holds its saved fp32 output, the dense fp32 gradient from nll_loss
    # and the fp32 gradient it returns: 3 × 4 bytes per token and vocabulary entry
    job = JobSpec(batch_size=2, seq_len=1024)
    assert logits_bytes(A, job) == 2 * 1024 * V * 12
    chunked = JobSpec(batch_size=2, seq_len=1024, chunked_loss=True)
    assert logits_bytes(A, chunked) == 2 * 1024 * H * 16  # 3 fp32 buffers + fp32 grad
    assert logits_bytes(lookup("bert-large-uncased"), job) == 0


def test_stale_loss_segments_only_with_variable_lengths() -> None:
    # one more set of loss segments: 16-bit logits + 16-bit copy + the three fp32 buffers
    job = JobSpec(batch_size=2, seq_len=1024)
    assert stale_loss_bytes(A, job) == 2 * 1024 * V * (2 + 2 + 12)
    fixed = JobSpec(batch_size=2, seq_len=1024, variable_lengths=False)
    assert stale_loss_bytes(A, fixed) == 0
    assert stale_loss_bytes(lookup("bert-large-uncased"), job) == 0  # no vocabulary logits
    m = memory_estimate(A, job).breakdown
    assert m["stale_loss_segments"] == gb(2 * 1024 * V * 16)
    assert memory_estimate(A, fixed).breakdown["stale_loss_segments"] == 0


def _lora_block_bytes_per_token(r: int) -> int:
    norms = 2 * 4 * H  # HF norms keep their fp32 input; frozen weights keep nothing else
    qkv_input = 2 * H  # saved for LoRA's A matrix on q and v
    flash = 2 * (2 * H + 2 * H)  # q, k, v, output
    mlp = 3 * 2 * F  # act input, act output, up
    lora = 2 * 4 * r  # lora_A outputs (fp32) on q and v
    return norms + qkv_input + flash + mlp + lora


def test_activations_with_checkpointing() -> None:
    job = JobSpec(method="lora", lora_rank=8, seq_len=2048, mixed_precision=False)
    ckpt = L * 2048 * H * 2
    block = 2048 * _lora_block_bytes_per_token(8)
    final = 2048 * H * 4
    assert activation_bytes(A, job, "bf16") == ckpt + block + final


def test_activations_without_checkpointing_and_eager_attention() -> None:
    fa = JobSpec(method="lora", lora_rank=8, seq_len=1024, grad_checkpointing=False)
    per_tok = _lora_block_bytes_per_token(8)
    assert activation_bytes(A, fa, "bf16") == L * 1024 * per_tok + 1024 * H * 4
    eager = JobSpec(method="lora", lora_rank=8, seq_len=1024, grad_checkpointing=False,
                    flash_attention=False)
    extra_per_tok = -2 * (2 * H + 2 * H) + 2 * (H + 2 * H) + 32 * 1024 * (4 + 2)
    assert activation_bytes(A, eager, "bf16") - activation_bytes(A, fa, "bf16") == (
        L * 1024 * extra_per_tok)


def test_full_training_keeps_more_activations_than_lora() -> None:
    lora = JobSpec(method="lora", grad_checkpointing=False, seq_len=512)
    fft = JobSpec(method="full", grad_checkpointing=False, seq_len=512)
    assert activation_bytes(A, fft, "bf16") > activation_bytes(A, lora, "bf16")


def test_no_accumulation_frees_gradients_until_backward() -> None:
    ga1 = memory_estimate(A, JobSpec(method="full", seq_len=512, mixed_precision=False))
    b = ga1.breakdown
    dynamic = b["activations"] + b["logits_and_loss"]
    assert b["gradients"] == pytest.approx(max(gb(V * H * 2), gb(2 * P) - dynamic), abs=2e-3)


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


def test_a_gptq_base_holds_the_recomputed_blocks_fp16_weights() -> None:
    """auto-gptq's trainable layer multiplies with its unpacked fp16 weight, which autograd
    keeps for the input's gradient: the recomputed block's seven matrices (every block without
    recomputation), plus the int32 unpacking of one matrix. bitsandbytes NF4 dequantizes one
    matrix at a time and again in backward."""
    block = 4 * H * H + 3 * H * F
    gptq = JobSpec(method="qlora", quant="gptq", dtype="fp16", lora_rank=8)
    est = memory_estimate(A, gptq)
    assert est.breakdown["dequant_buffer"] == pytest.approx(
        gb(block * 2 + H * F * 4), abs=1e-3)
    no_gc = memory_estimate(A, gptq.model_copy(update={"grad_checkpointing": False}))
    assert no_gc.breakdown["dequant_buffer"] == pytest.approx(
        gb(L * block * 2 + H * F * 4), abs=1e-3)
    nf4 = memory_estimate(A, JobSpec(method="qlora", lora_rank=8))
    assert nf4.breakdown["dequant_buffer"] == pytest.approx(gb(H * F * 2), abs=1e-3)
