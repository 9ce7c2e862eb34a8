"""FLOPs per token, rates and multi-GPU scaling."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.throughput import (
    flops_per_token,
    gemm_tile,
    kernel_efficiency,
    matmul_params,
    micro_batch,
    optimizer_step_bytes,
    peak_tflops,
    time_estimate,
    wave_efficiency,
    weight_pass_bytes,
)
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()
A = lookup("meta-llama/Llama-2-7b-hf")
N = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000 * 4096  # blocks + output projection


def test_flops_per_token_full_peft_and_recompute() -> None:
    assert matmul_params(A) == N
    attn = 4 * 32 * 4096 * 2048
    model, hw = flops_per_token(A, JobSpec(method="full", grad_checkpointing=False))
    assert model == hw == 6 * N + 3 * attn
    lora = JobSpec(method="lora", lora_rank=8)
    model, hw = flops_per_token(A, lora)
    assert model == 4 * N + 6 * trainable_params(A, lora) + 3 * attn
    assert hw == model + 2 * N + attn


def test_moe_counts_active_experts_only() -> None:
    m = lookup("mistralai/Mixtral-8x7B-v0.1")
    assert matmul_params(m) < 0.3 * m.total_params


def test_rates_follow_the_dtype() -> None:
    a100 = CAT.gpu("a100-sxm-80gb")
    assert peak_tflops(a100, "bf16") == 312
    assert peak_tflops(a100, "fp32") == a100.fp32_tflops
    assert peak_tflops(CAT.gpu("v100-sxm2-16gb"), "fp16") == 125


def test_hours_and_qlora_dequantization() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    t = time_estimate(A, JobSpec(method="lora"), h100, "bf16", tokens=10**9)
    assert t.hours == pytest.approx(1e9 / t.tokens_per_s / 3600, rel=1e-3)
    q = time_estimate(A, JobSpec(method="qlora"), h100, "bf16")
    lora = micro_batch(A, JobSpec(method="lora"), h100, "bf16")
    # bf16 hidden states (no kbit upcast), so that the dequantization is the only difference
    qlora = micro_batch(A, JobSpec(method="qlora", upcast_non_quantized=False), h100, "bf16")
    # bitsandbytes reads the packed half byte and writes the 16-bit weight of every base
    # matmul on forward, recompute and backward
    dequant = 3 * A.linear_weight_params * 2.5 / (h100.mem_bandwidth_gbs * 1e9 * 0.8)
    assert qlora.pointwise_s - lora.pointwise_s == pytest.approx(dequant, rel=1e-6)
    assert qlora.other_launch_s == lora.other_launch_s
    # two kernels per matmul and pass (the double-quantized scales, then the weight)
    linears = sum(len(b) for b in A.blocks())
    assert qlora.matmul_launch_s - lora.matmul_launch_s == pytest.approx(
        (3 * 2 * linears) * 10e-6)
    assert q.tokens_per_s < t.tokens_per_s


def test_nf4_backends_dequantize_at_their_own_cost() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    job = JobSpec(method="qlora", batch_size=1, seq_len=1024, upcast_non_quantized=False)
    bnb = micro_batch(A, job, h100, "bf16")
    torchao = micro_batch(A, job.model_copy(update={"nf4_backend": "torchao"}), h100, "bf16")
    lora = micro_batch(A, JobSpec(method="lora", batch_size=1, seq_len=1024), h100, "bf16")
    # torchao's eager get_original_weight moves ~33 bytes per weight in ~14 kernels,
    # bitsandbytes' one kernel 2.5 bytes
    extra_torchao = torchao.pointwise_s - lora.pointwise_s
    extra_bnb = bnb.pointwise_s - lora.pointwise_s
    assert extra_torchao == pytest.approx(33 / 2.5 * extra_bnb)
    assert torchao.matmul_launch_s > 3 * bnb.matmul_launch_s
    compiled = micro_batch(A, job.model_copy(update={"nf4_backend": "torchao",
                                                     "compile": True}), h100, "bf16")
    assert compiled.seconds < torchao.seconds


def test_kernel_efficiency_rows_and_defaults() -> None:
    assert kernel_efficiency("matmul", CAT.gpu("a100-sxm-80gb")) == 0.859
    assert kernel_efficiency("matmul", CAT.gpu("h100-sxm-80gb")) == 0.801
    assert kernel_efficiency("matmul", CAT.gpu("l4-24gb")) == 0.80  # not measured: the default
    assert kernel_efficiency("flash_attention", CAT.gpu("h100-sxm-80gb")) == 0.35  # Hopper
    assert kernel_efficiency("flash_attention", CAT.gpu("a100-pcie-40gb")) == 0.60  # Ampere
    # without an SM count (no wave quantization) the matmuls run at exactly that rate
    a30 = CAT.gpu("a30-24gb")
    job = JobSpec(method="full", batch_size=8, seq_len=4096, grad_checkpointing=False)
    mb = micro_batch(A, job, a30, "bf16")
    tokens = 8 * 4096
    assert mb.matmul_s == pytest.approx(
        tokens * 6 * N / (peak_tflops(a30, "bf16") * 1e12 * 0.80), rel=1e-9)


def test_wave_quantization_idles_the_last_wave() -> None:
    # 512 tokens × 4096 outputs = 4 × 32 tiles of 128×128 on 108 SMs: two waves, the second
    # 20 tiles full
    assert wave_efficiency(512, 4096, 108) == pytest.approx(128 / 216)
    assert wave_efficiency(128 * 108, 128, 108) == 1.0
    assert wave_efficiency(512, 4096, None) == 1.0
    a100 = CAT.gpu("a100-sxm-80gb")
    short = micro_batch(A, JobSpec(batch_size=1, seq_len=512), a100, "bf16")
    long = micro_batch(A, JobSpec(batch_size=1, seq_len=8192), a100, "bf16")
    assert short.matmul_s * 16 > 1.1 * long.matmul_s  # per token, the short one is slower


def test_the_tile_is_the_smallest_that_keeps_the_math_units_fed() -> None:
    # tensor cores need more FLOPs per byte than any tile gives: 128×128 everywhere
    for gpu in ("a100-sxm-80gb", "h100-sxm-80gb", "l4-24gb", "v100-sxm2-16gb"):
        assert gemm_tile(CAT.gpu(gpu), "fp16") == (128, 128)
    # fp32 on CUDA cores: a V100 does 17 FLOPs per byte of bandwidth (128×64 gives 21), an A100
    # 10 (64×64 gives 16), an L4 101 (more than 128×128's 32)
    assert gemm_tile(CAT.gpu("v100-sxm2-16gb"), "fp32") == (128, 64)
    assert gemm_tile(CAT.gpu("a100-sxm-80gb"), "fp32") == (64, 64)
    assert gemm_tile(CAT.gpu("l4-24gb"), "fp32") == (128, 128)
    # 512 × 1024 on 80 SMs: 4 × 8 = 32 tiles of 128×128 (40 % busy), 8 × 8 = 64 of 64×128 in
    # the better orientation (80 %)
    assert wave_efficiency(512, 1024, 80) == pytest.approx(32 / 80)
    assert wave_efficiency(512, 1024, 80, (128, 64)) == pytest.approx(64 / 80)
    v100 = CAT.gpu("v100-sxm2-16gb")
    bert = lookup("bert-large-uncased")
    job = JobSpec(method="full", dtype="fp32", batch_size=1, seq_len=512,
                  grad_checkpointing=False)
    # at full waves the GEMMs would take 6·N FLOPs per token at the achievable rate; 128×128
    # tiles made them about twice that, 128×64 tiles less than 1.3×
    full_waves = 512 * 6 * matmul_params(bert) / (
        peak_tflops(v100, "fp32") * 1e12 * kernel_efficiency("matmul", v100))
    assert full_waves < micro_batch(bert, job, v100, "fp32").matmul_s < 1.3 * full_waves


def test_attention_grows_with_sequence_and_eager_costs_more() -> None:
    a100 = CAT.gpu("a100-sxm-80gb")
    short = micro_batch(A, JobSpec(batch_size=8, seq_len=1024), a100, "bf16")
    long = micro_batch(A, JobSpec(batch_size=1, seq_len=8192), a100, "bf16")
    assert long.matmul_s == pytest.approx(short.matmul_s)  # same tokens
    assert long.attention_s == pytest.approx(8 * short.attention_s)
    eager = micro_batch(A, JobSpec(batch_size=1, seq_len=8192, flash_attention=False),
                        a100, "bf16")
    # no causal skipping, backward at the matmul rate, and the scores streamed through memory
    assert eager.attention_s > long.attention_s
    assert eager.pointwise_s > 2 * long.pointwise_s


def test_small_micro_batches_are_launch_bound_and_compile_helps() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    small = lookup("Qwen/Qwen2.5-0.5B")
    tiny = time_estimate(small, JobSpec(method="lora", batch_size=1, seq_len=128), h100, "bf16")
    assert tiny.bound == "host"
    assert any(n.startswith("launch-bound") for n in tiny.notes)
    compiled = time_estimate(small, JobSpec(method="lora", batch_size=1, seq_len=128,
                                            compile=True), h100, "bf16")
    assert compiled.tokens_per_s > 1.5 * tiny.tokens_per_s
    big = time_estimate(A, JobSpec(method="lora", batch_size=4, seq_len=4096), h100, "bf16")
    assert big.bound == "compute"


def test_roofline_weights_floor_and_optimizer_step() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    big_job = JobSpec(method="qlora", batch_size=4, seq_len=2048, upcast_non_quantized=False)
    assert time_estimate(A, big_job, h100, "bf16").bound == "compute"
    # PEFT's fp32 upcast doubles the pointwise bytes and casts around every 4-bit layer: on an
    # H100, whose FLOPs per byte are highest, that traffic outweighs the matmuls
    upcast = big_job.model_copy(update={"upcast_non_quantized": True})
    assert time_estimate(A, upcast, h100, "bf16").bound == "memory"
    # a 70B base and one 16-token micro-batch: reading the weights and their dequantized copy
    # three times (forward, recompute, backward) takes longer than anything else
    huge = lookup("meta-llama/Llama-2-70b-hf")
    tiny = time_estimate(huge, JobSpec(method="qlora", batch_size=1, seq_len=16), h100, "bf16")
    assert tiny.bound == "memory"
    dequant = 3 * huge.linear_weight_params * 4 / (h100.mem_bandwidth_gbs * 1e9 * 0.8)
    assert tiny.step_time_s > dequant
    assert any(n.startswith("memory-bound") for n in tiny.notes)
    # the optimizer update moves every full-fine-tuning parameter's state once per step
    full = time_estimate(A, JobSpec(method="full", batch_size=1, seq_len=512), h100, "bf16")
    lora = time_estimate(A, JobSpec(method="lora", batch_size=1, seq_len=512), h100, "bf16")
    assert full.optimizer_step_s > 100 * lora.optimizer_step_s > 0


def test_foreach_adamw_moves_more_than_fused() -> None:
    """torch.optim.AdamW's multi-tensor path: states and sqrt's buffer 7x a state's bytes, the
    gradient 3x, the parameter 2x, against the fused kernel's 2 + 2x states + 1."""
    pure = JobSpec(method="full", mixed_precision=False, grad_checkpointing=True,
                   grad_clipping=False)
    fused = optimizer_step_bytes(A, pure, "bf16")
    foreach = optimizer_step_bytes(A, pure.model_copy(update={"optimizer": "adamw-foreach"}),
                                   "bf16")
    n = A.total_params
    assert fused == pytest.approx(n * (2 * (2 + 4) + 2))
    assert foreach == pytest.approx(n * (2 * 2 + 7 * 4 + 3 * 2))
    # mixed precision under ZeRO: the fp32 master updated, then copied to the 16-bit weight
    zero = JobSpec(method="full", optimizer="adamw-foreach", gpus=2, sharding="zero2",
                   grad_clipping=False)
    assert optimizer_step_bytes(A, zero, "bf16") == pytest.approx(
        n * (2 * 4 + (4 + 2) + 7 * 8 + 3 * 2) / 2)
    # clip_grad_norm_ reads every gradient for the norm, then reads and writes it scaled
    clipped = pure.model_copy(update={"grad_clipping": True})
    assert optimizer_step_bytes(A, clipped, "bf16") - fused == pytest.approx(n * 3 * 2)


def test_scaling_depends_on_interconnect_and_sharding() -> None:
    job = JobSpec(method="full", gpus=8, sharding="zero3", batch_size=1, seq_len=1024)
    nvlink = time_estimate(A, job, CAT.gpu("h100-sxm-80gb"), "bf16")
    pcie = time_estimate(A, job, CAT.gpu("h100-pcie-80gb"), "bf16")
    assert nvlink.scaling_efficiency > pcie.scaling_efficiency
    ddp = JobSpec(method="lora", gpus=8, sharding="ddp")
    assert time_estimate(A, ddp, CAT.gpu("l40s-48gb"), "bf16").scaling_efficiency > 0.95


def test_gptq_base_is_an_int4_checkpoint_without_bitsandbytes() -> None:
    from gpuscout.sizing.memory import GPTQ_BYTES, frozen_weight_bytes
    from gpuscout.sizing.precision import decide

    job = JobSpec(method="qlora", quant="gptq")
    # 4-bit codes + an fp16 scale and a 4-bit zero per 128 inputs; PEFT upcasts nothing
    assert GPTQ_BYTES == pytest.approx(0.5 + 2.5 / 128)
    assert frozen_weight_bytes(A, job, "bf16") == pytest.approx(
        A.linear_weight_params * GPTQ_BYTES + A.non_linear_params * 2)
    assert decide(job, CAT.gpu("h100-sxm-80gb")).refusal is None
    assert decide(job, CAT.gpu("mi300x-192gb")).refusal is None
    refused = decide(job, CAT.gpu("tpu-v5p")).refusal
    assert refused is not None and "CUDA and ROCm" in refused
    # auto-gptq's trainable QuantLinear unpacks in eager ops: 16.5 bytes per weight in 9 kernels
    # on the forward and the recompute; its backward reuses the fp16 weight the forward made
    h100 = CAT.gpu("h100-sxm-80gb")
    gptq = micro_batch(A, job, h100, "bf16")
    lora = micro_batch(A, JobSpec(method="lora"), h100, "bf16")
    bandwidth = h100.mem_bandwidth_gbs * 1e9 * 0.8
    assert gptq.pointwise_s - lora.pointwise_s == pytest.approx(
        2 * A.linear_weight_params * 16.5 / bandwidth, rel=1e-6)
    linears = sum(len(b) for b in A.blocks())
    assert gptq.matmul_launch_s - lora.matmul_launch_s == pytest.approx(2 * 9 * linears * 10e-6)
    # the backward reads the kept fp16 copy; forward and recompute make it from the int4 codes
    floor = (2 * weight_pass_bytes(A, job, "bf16")
             + weight_pass_bytes(A, job, "bf16", dequantized=False)) / bandwidth
    assert gptq.weights_s == pytest.approx(floor)
    assert weight_pass_bytes(A, job, "bf16") - weight_pass_bytes(
        A, job, "bf16", dequantized=False) == pytest.approx(A.linear_weight_params * 16.5)


def test_fused_kernels_cut_pointwise_traffic_and_launches_but_keep_views() -> None:
    l4 = CAT.gpu("l4-24gb")
    job = JobSpec(method="qlora", batch_size=4, seq_len=4096, lora_targets="all-linear")
    eager = micro_batch(A, job, l4, "bf16")
    fused = micro_batch(A, job.model_copy(update={"fused_kernels": True}), l4, "bf16")
    compiled = micro_batch(A, job.model_copy(update={"compile": True}), l4, "bf16")
    assert fused.pointwise_s < 0.7 * eager.pointwise_s
    assert fused.pointwise_s == pytest.approx(compiled.pointwise_s)
    assert fused.matmul_s == eager.matmul_s
    # Triton kernels still run under eager PyTorch: the views are dispatched as before
    assert compiled.other_launch_s < fused.other_launch_s < eager.other_launch_s


def test_unsloth_preset_turns_on_its_fused_kernels() -> None:
    from gpuscout.sizing.job import Job

    _, spec, notes = Job(model="Qwen/Qwen2.5-7B", method="qlora",
                         framework="unsloth").resolve()
    assert spec.fused_kernels is True
    assert any("fused_kernels=true" in n for n in notes)
    _, hf, _ = Job(model="Qwen/Qwen2.5-7B", method="qlora").resolve()
    assert hf.fused_kernels is False
    _, off, _ = Job(model="Qwen/Qwen2.5-7B", method="qlora", framework="unsloth",
                    fused_kernels=False).resolve()
    assert off.fused_kernels is False


def test_prompt_tuning_runs_its_virtual_tokens_through_every_layer() -> None:
    """Prompt tuning prepends its virtual tokens to the input: 200 of them beside 200 real
    tokens cost about what 400 real tokens do; prefix tuning only lengthens attention."""
    a100 = CAT.gpu("a100-sxm-80gb")
    short = JobSpec(method="prompt", num_virtual_tokens=200, seq_len=200, batch_size=8)
    plain = JobSpec(method="prompt", num_virtual_tokens=1, seq_len=400, batch_size=8)
    prompt_s = time_estimate(A, short, a100, "bf16").step_time_s
    assert prompt_s == pytest.approx(time_estimate(A, plain, a100, "bf16").step_time_s,
                                     rel=0.05)
    prefix = short.model_copy(update={"method": "prefix"})
    assert time_estimate(A, prefix, a100, "bf16").step_time_s < 0.7 * prompt_s


def test_kbit_upcast_runs_the_pointwise_work_in_fp32_with_casts_around_each_4bit_layer() -> None:
    """prepare_model_for_kbit_training's fp32 embeddings and norms keep the hidden states in
    fp32; bitsandbytes' Linear4bit casts each input to bf16 and each output back."""
    a100 = CAT.gpu("a100-sxm-80gb")
    hf = JobSpec(method="qlora", batch_size=4, seq_len=2048)  # upcast_non_quantized=True
    bf16 = hf.model_copy(update={"upcast_non_quantized": False})
    up, plain = (micro_batch(A, j, a100, "bf16") for j in (hf, bf16))
    assert up.matmul_s == pytest.approx(plain.matmul_s)
    assert up.attention_s == pytest.approx(plain.attention_s)
    # the casts alone: (4 + 2) bytes over every 4-bit layer's input and output per token and
    # pass: forward, recompute, and the backward's cast of the gradient
    io = 32 * (4 * (4096 + 4096) + 3 * (4096 + 11008))
    casts = 8192 * 6 * io * 3 / (a100.mem_bandwidth_gbs * 1e9 * 0.8)
    # the rest runs on fp32 hidden states (the dequantization and LoRA's own casts, which an
    # fp32 input skips, are not doubled)
    fp32_stream = up.pointwise_s - casts
    assert 1.3 * plain.pointwise_s < fp32_stream < 2 * plain.pointwise_s
    assert up.other_launch_s > plain.other_launch_s


def test_peft_casts_a_16_bit_input_to_its_fp32_adapters() -> None:
    """LoRA's forward casts each adapted module's input to the adapter's fp32 (PEFT
    `_cast_input_dtype`), and under autocast lora_A casts it back: (2 + 4) bytes each way per
    element of the input, a backward of the same size; an fp32 input is not cast."""
    a100 = CAT.gpu("a100-sxm-80gb")
    job = JobSpec(method="lora", lora_targets="qv", batch_size=4, seq_len=1024,
                  grad_checkpointing=False)
    lora = micro_batch(A, job, a100, "bf16")
    ia3 = micro_batch(A, job.model_copy(update={"method": "ia3"}), a100, "bf16")
    pure = micro_batch(A, job.model_copy(update={"mixed_precision": False}), a100, "bf16")
    per_cast = 4096 * 32 * 2 * 4096 * (2 + 4) * 2 / (a100.mem_bandwidth_gbs * 1e9 * 0.8)
    assert lora.pointwise_s - pure.pointwise_s == pytest.approx(per_cast)  # autocast's recast
    assert lora.pointwise_s > ia3.pointwise_s + 2 * per_cast


def test_lora_dropout_runs_a_kernel_per_adapted_module() -> None:
    """PEFT applies each adapted module's own dropout to its input, after casting it to the
    fp32 adapter: one kernel that reads it and writes the result and a one-byte mask, per
    module and pass."""
    a100 = CAT.gpu("a100-sxm-80gb")
    job = JobSpec(method="lora", lora_targets="qv", batch_size=4, seq_len=1024,
                  grad_checkpointing=False)
    plain = micro_batch(A, job, a100, "bf16")
    dropped = micro_batch(A, job.model_copy(update={"lora_dropout": 0.05}), a100, "bf16")
    per_pass = 4096 * 32 * 2 * 4096 * (2 * 4 + 1)  # tokens x layers x (q, v) x d_in x bytes
    # forward, then backward reads the mask and the gradient and writes one (twice the bytes)
    assert dropped.pointwise_s - plain.pointwise_s == pytest.approx(
        3 * per_pass / (a100.mem_bandwidth_gbs * 1e9 * 0.8))
    assert dropped.other_launch_s > plain.other_launch_s
    with pytest.raises(UserInputError):
        JobSpec(method="lora", lora_dropout=1.0)
