"""The estimator against the published measurements in sizing/data/measurements.csv."""

from __future__ import annotations

import csv

from gpuscout.core.catalog import load_catalog
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.calibration import (
    MEASUREMENTS_CSV,
    calibrate,
    job_for_row,
    model_id,
    summarize,
)
from gpuscout.sizing.estimate import estimate

ROWS = calibrate()
MEM = [r for r in ROWS if r.error_pct is not None]


def test_every_row_runs_and_memory_rows_are_counted() -> None:
    assert len(ROWS) == 126
    assert len(MEM) == 123
    assert sum(r.measured_tokens_per_s is not None for r in ROWS) == 76


def test_median_error_and_share_within_20_pct() -> None:
    ours = summarize([r.error_pct for r in MEM if r.error_pct is not None])
    naive = summarize([r.naive_error_pct for r in MEM if r.naive_error_pct is not None])
    acc = summarize([r.accelerate_error_pct for r in MEM if r.accelerate_error_pct is not None])
    assert ours.median_abs_error_pct <= 12.0
    assert ours.median_abs_error_pct < naive.median_abs_error_pct / 4
    assert ours.median_abs_error_pct < acc.median_abs_error_pct / 4


def test_share_within_20_pct_does_not_regress() -> None:
    # a floor under the current model (110 of 123 rows within ±20 %, one short of the goal of
    # 90 %; median 7.8 %, within the goal of 8 %: see bench/CALIBRATION.md), so that a change
    # that loses accuracy fails
    ours = summarize([r.error_pct for r in MEM if r.error_pct is not None])
    assert ours.within_20_pct >= 0.894
    assert ours.median_abs_error_pct <= 7.9


def test_trained_embeddings_are_16_bit_copies() -> None:
    # Qwen's profile with and without modules_to_save (1.8B, 7B, 14B): fp32 copies with fp32
    # states were 23-34 % high; 16-bit copies bring every such row within ±13 %
    rows = [ROWS[i] for i in (78, 79, 87, 88, 89, 99, 100)]
    assert all(r.error_pct is not None and abs(r.error_pct) <= 13 for r in rows)


def test_fixed_length_rows_carry_no_stale_segments() -> None:
    # packed / dummy-data rows and the MetaMathQA benchmark (buckets sorted long to short, cache
    # emptied every 10 steps) are modelled without an earlier batch's loss segments
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    jobs = {i: job_for_row(r, lookup(model_id(r["model"]))) for i, r in enumerate(raw)}
    flags = {i: job.variable_lengths for i, job in jobs.items()}
    assert not any(flags[i] for i in range(0, 13))  # MetaMathQA
    assert not flags[20] and not flags[62]  # packed to 2048; BERT dummy data
    assert not flags[60] and not flags[61]  # Personal Copilot: ConstantLengthDataset
    assert all(flags[i] for i in range(25, 60))  # ms-swift: batch 1, lengths up to max_length


def test_rows_of_the_qwen_profile_and_the_trainer_tests_read_as_stated() -> None:
    """Rows 76-107 (Qwen's profile: every sample padded to the maximum length) and 108-125
    (a trainer's tests: "fully filled" 8192-token sequences) are fixed-length; SDPA counts as a
    memory-efficient attention; modules_to_save trains the embeddings; a DeepSpeed ZeRO-2
    engine on one GPU divides nothing but keeps its gradient bucket and fp32 masters."""
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    jobs = [job_for_row(r, lookup(model_id(r["model"]))) for r in raw]
    assert not any(j.variable_lengths for j in jobs[76:126])
    assert all(j.flash_attention for j in jobs[108:126])  # "no (... sdpa/eager)"
    assert [i for i in range(76, 126) if jobs[i].train_embeddings] == [
        78, 79, 87, 88, 89, 99, 100]
    gptq = jobs[80]
    assert (gptq.method, gptq.quant, gptq.dtype, gptq.sharding, gptq.gpus,
            gptq.mixed_precision) == ("qlora", "gptq", "fp16", "zero2", 1, True)
    assert (jobs[82].sharding, jobs[82].gpus) == ("zero2", 1)  # finetune_ds.sh on one GPU
    pure = jobs[84]  # "bf16 (pure bf16 weights, amp off)"
    assert (pure.dtype, pure.mixed_precision) == ("bf16", False)
    assert (jobs[93].sharding, jobs[93].gpus) == ("zero2", 2)
    # a 16-bit loss: Qwen-1's own CrossEntropyLoss under DeepSpeed (no autocast), and the
    # trainer tests' wrappers on bf16 logits with AMP off; Qwen-1 LoRA on one GPU runs autocast
    assert not jobs[81].fp32_loss and not jobs[93].fp32_loss and not jobs[109].fp32_loss
    assert jobs[77].fp32_loss and jobs[1].fp32_loss
    # the trainer loads a 4-bit base with dtype=torch.float32: its head returns fp32 logits
    assert all(jobs[i].fp32_loss for i in (110, 114, 119, 122, 124))
    # the LoRA dropout the notes state ("LoRA r=64 alpha=16 dropout=0.05"), else PEFT's 0
    assert (jobs[76].lora_dropout, jobs[109].lora_dropout, jobs[1].lora_dropout) == (
        0.05, 0.05, 0.0)
    # DeepSpeed steps with its config's FusedAdam; torch.optim.AdamW and the HF Trainer's
    # adamw_torch of the time with the foreach path
    assert {jobs[i].optimizer for i in (80, 82, 93, 104)} == {"adamw"}
    assert {jobs[i].optimizer for i in (0, 41, 62, 108)} == {"adamw-foreach"}
    assert (jobs[112].sharding, jobs[112].offload) == ("fsdp", "params")


def test_throughput_does_not_regress() -> None:
    # a floor under the current time model (median 21.9 %, 40 of 76 rows within ±30 %; the goal
    # of 15 % and 80 % is not met: see bench/CALIBRATION.md), so that a change that loses
    # accuracy fails here; the GPTQ rows of Qwen's profile pay auto-gptq's eager unpacking, the
    # MetaMathQA rows are timed at their mean length, torch.optim.AdamW steps on its foreach path
    errors = [r.throughput_error_pct for r in ROWS if r.throughput_error_pct is not None]
    assert len(errors) == 76
    ours = summarize(errors)
    assert ours.median_abs_error_pct <= 22.0
    # Qwen's profile (fp32 adapters cast each 16-bit input): median 6.7 %
    qwen = [e for r in ROWS[76:108] if (e := r.throughput_error_pct) is not None]
    assert summarize(qwen).median_abs_error_pct <= 7.0
    assert sum(abs(e) <= 30.0 for e in errors) >= 40
    # MetaMathQA's full fine-tuning steps every micro-batch with torch.optim.AdamW: +88 % when
    # its step was timed as a fused one
    full = ROWS[0].throughput_error_pct
    assert full is not None and abs(full) <= 15  # +9 % with gradient clipping counted
    # MetaMathQA's prompt tuning runs 200 virtual tokens through every layer: +74 % when only
    # attention saw them
    prompt = ROWS[8].throughput_error_pct
    assert prompt is not None and abs(prompt) <= 10
    qwen_gptq = [ROWS[i] for i in (90, 91, 101, 102)]  # 7B and 14B Int4 at 512 and 2048 tokens
    assert all(r.throughput_error_pct is not None and r.throughput_error_pct < 60
               for r in qwen_gptq)
    # BERT-large in fp32 on a V100 (512 and 2048 tokens a micro-batch): 25-28 % slow when its
    # CUDA-core GEMMs were cut into 128×128 tiles like tensor-core ones
    bert_fp32 = [ROWS[i].throughput_error_pct for i in (62, 63, 64, 67, 69)]
    assert all(e is not None and abs(e) <= 12 for e in bert_fp32)


def test_metamathqa_rows_are_timed_at_their_mean_length() -> None:
    """Memory from the longest batch (768), time from the mean sample its results report."""
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    jobs = [job_for_row(r, lookup(model_id(r["model"]))) for r in raw]
    assert {(j.seq_len, j.mean_seq_len) for j in jobs[:13]} == {(768, 210)}
    assert all(j.mean_seq_len is None for j in jobs[13:])


def test_a_row_that_does_not_say_it_checkpointed_did_when_it_could_not_fit_without() -> None:
    """Rows 73-75 leave gradient checkpointing unknown; granite-7b full fine-tuning at 8 × 4096
    on four A100s needs far more than 80 GB per GPU without it, so the run recomputed."""
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    granite = job_for_row(raw[74], lookup(model_id(raw[74]["model"])))
    assert not granite.grad_checkpointing  # as the row reads by itself
    assert ROWS[74].settings.split().count("GC") == 1 and "noGC" not in ROWS[74].settings
    # a stated "no" stays no even where the estimate is tight
    assert "noGC" in ROWS[62].settings


def test_the_trainer_tests_gemma_2_qlora_does_not_fit_an_h100_as_reported() -> None:
    """Its docs/gpu_test.md reports Gemma-2 9B QLoRA (2 × 8192 tokens) out of memory on an
    80 GB H100 and at 89 GiB on a 96 GB card; with its fp32 logits the same job is over the
    H100 (it fit at 73 GB while they were read as bf16)."""
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    arch = lookup(model_id(raw[124]["model"]))
    job = job_for_row(raw[124], arch)
    catalog = load_catalog()
    assert not estimate(arch, job, catalog.gpu("h100-sxm-80gb")).memory.fits
    assert estimate(arch, job, catalog.gpu("rtx-pro-6000-96gb")).memory.fits


def test_rows_read_their_deepspeed_overlap_and_their_machines() -> None:
    """Qwen's DeepSpeed configs set overlap_comm true (the other rows keep DeepSpeed's default);
    a row that states "2 nodes x 2 GPUs" is placed on two machines."""
    from gpuscout.sizing.calibration import placement_for_row

    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    jobs = [job_for_row(r, lookup(model_id(r["model"]))) for r in raw]
    assert all(jobs[i].overlap_comm is True for i in (93, 94, 95, 104, 105))
    assert jobs[74].overlap_comm is None and jobs[1].overlap_comm is None
    gpu = load_catalog().gpu("a100-sxm-80gb")
    two = placement_for_row(raw[95], jobs[95], gpu)
    assert two is not None and (two.nodes, two.gpus_per_node) == (2, 2)
    assert placement_for_row(raw[104], jobs[104], gpu) is not None  # "1 node x 4 GPUs"
    assert placement_for_row(raw[74], jobs[74], gpu) is None
