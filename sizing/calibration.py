"""Turn the published measurements in `sizing/data/measurements.csv` into estimator inputs.

Every rule here reads a column of the measurement row and maps it the same way for all rows;
nothing is tuned per row or per source. Settings a row does not state come from the defaults of
the tool that produced it, named in its notes (ms-swift: batch 1, max_length 2048; the PEFT
README scripts: inputs padded to the batch's longest tweet, ~64 tokens, targets of a few
tokens). A row that does not say whether it checkpointed did if it could not have fit its
GPU without (the run happened). What the estimator predicts depends on what the row measured:

- `allocated` (torch.cuda.max_memory_allocated): tensors only;
- `reserved` (torch.cuda.max_memory_reserved): tensors + allocator fragmentation;
- anything read off nvidia-smi or unspecified: the whole device, i.e. reserved + CUDA context.

Methods the estimator does not model are mapped to the closest one it does and flagged, so the
report can show them separately (LoRA variants → LoRA, GaLore/LISA → full, LLaMA-Pro → adapter).
"""

from __future__ import annotations

import csv
import re
import statistics
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gpuscout.core.catalog import GpuSpec, load_catalog
from gpuscout.sizing.architectures import Architecture, lookup
from gpuscout.sizing.collectives import Topology, topology
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.types import Estimate, JobSpec

MEASUREMENTS_CSV = Path(__file__).parent / "data" / "measurements.csv"
# Mean tokens per sample of sources whose batches vary in length (a source per row).
MEASURED_LENGTHS_CSV = Path(__file__).parent / "data" / "measured_lengths.csv"

Metric = Literal["allocated", "reserved", "device", "none"]

# The measurement file names GPUs loosely; these are the catalog rows they mean. "N GB-class"
# rows only need a GPU of that memory (it caps the allocator reserve).
GPU_MAP: dict[str, str] = {
    "L40S-48GB": "l40s-48gb",
    "A100-80GB": "a100-sxm-80gb",
    "A100-SXM4-80GB": "a100-sxm-80gb",
    "A100 80GB": "a100-sxm-80gb",
    "H100 80GB": "h100-sxm-80gb",
    "RTX PRO 6000 96GB": "rtx-pro-6000-96gb",
    "A100-40GB": "a100-sxm-40gb",
    "H100-80GB": "h100-sxm-80gb",
    "V100-SXM2-16GB": "v100-sxm2-16gb",
    "40GB-class": "a100-sxm-40gb",
    "24GB-class": "rtx-4090-24gb",
    "unknown (>=40GB)": "a100-sxm-80gb",
    "A100 (RunPod; 80GB implied)": "a100-sxm-80gb",
    "A100 (size not stated)": "a100-sxm-80gb",
}

# method in the file -> (method we model, exact?)
METHOD_MAP: dict[str, tuple[str, bool]] = {
    "full": ("full", True), "lora": ("lora", True), "qlora": ("qlora", True),
    "dora": ("dora", True), "ia3": ("ia3", True), "prefix": ("prefix", True),
    "prompt_tuning": ("prompt", True), "lora_gptq": ("lora", True),
    "adapter": ("adapter", True),
    # LoRA variants: same frozen base and activations, different (tiny) trainable sets
    "lora-fa": ("lora", False), "vera": ("lora", False), "loha": ("lora", False),
    "boft": ("lora", False), "adalora": ("lora", False),
    # learned prompts on every layer's attention
    "llama_adapter": ("prefix", False),
    # new trainable blocks on a frozen base
    "llamapro": ("adapter", False),
    # full-parameter methods that keep less optimizer state than AdamW on every weight
    "full+galore": ("full", False), "full+lisa": ("full", False),
}

# Whether a row's batches vary in length with the CUDA cache kept between steps (JobSpec
# .variable_lengths): not for packed data, fixed-size dummy batches, samples padded to the
# maximum length or sequences "fully filled" with tokens (row notes), nor for the
# PEFT MetaMathQA benchmark: its BucketIterator sorts every bucket of 20 batches long to short
# (utils.py) and run.py calls torch.cuda.empty_cache() every 10 steps
# (ACCELERATOR_EMPTY_CACHE_SCHEDULE = 10), so each bucket's longest batch runs first on an
# emptied cache and no segment of a shorter batch is left over. ms-swift (batch 1, samples up
# to max_length, truncation_strategy 'delete') and the other sources keep their cache.
FIXED_LENGTH_MARKERS = (r"\bpacked", r"dummy data", r"pads every sample to max_len",
                        r"fully filled tokens")
CACHE_EMPTYING_SOURCES = ("method_comparison/MetaMathQA",)
# Sources whose training script packs the data to a constant length: the Personal Copilot blog's
# runs train with pacman100/LLM-Workshop personal_copilot/training/train.py, whose
# ConstantLengthDataset concatenates the files and yields only chunks of exactly seq_length
# tokens (read at 05f86e9).
FIXED_LENGTH_SOURCES = ("personal-copilot.md",)
# Rows whose eager loss runs over 16-bit logits (JobSpec.fp32_loss off): the trainer tests'
# model wrappers compute nn.CrossEntropyLoss on the model's bf16 logits themselves, with AMP off
# (ljm565/universal-llm-trainer src/models/llama3.py at 022f102, config amp_training: False),
# except for a 4-bit base: `bit: 4` loads the model with `dtype=torch.float32` (the same
# wrappers at aefdc4a, line 31), so the embeddings, norms and LM head are fp32 and the logits
# come out fp32; and Qwen-1 under DeepSpeed, whose QWenLMHeadModel runs CrossEntropyLoss on
# lm_logits as they are (modeling_qwen.py) while DeepSpeed's fp16/bf16 engine runs no
# autocast (QwenLM/Qwen finetune_ds.sh, finetune_lora_ds.sh, and finetune_qlora_single_gpu.sh,
# which passes --deepspeed finetune/ds_config_zero2.json, at 85cb093).
SIXTEEN_BIT_LOSS_SOURCES = ("ljm565/universal-llm-trainer",)
NO_LOGIT_CAST_MODEL_TYPES = ("qwen",)
# Sources whose DeepSpeed configs turn overlap_comm on: Qwen's finetune/ds_config_zero2.json
# and ds_config_zero3.json ("overlap_comm": true; QwenLM/Qwen at af22d5e), which its
# finetune_ds.sh and finetune_lora_ds.sh pass.
OVERLAP_COMM_SOURCES = ("QwenLM/Qwen",)
# A row that states its machines ("2 nodes x 2 GPUs") is placed so; the network between them is
# not stated, so the time model's default is assumed (sizing/collectives.py).
MACHINES = re.compile(r"(\d+) nodes? x (\d+) GPUs", re.IGNORECASE)

# ms-swift's documented defaults for rows that do not restate them (row notes).
SWIFT_DEFAULT_BATCH, SWIFT_DEFAULT_SEQ = 1, 2048
# PEFT README seq2seq scripts: tweets padded to the longest in the batch (~64 tokens, as the
# causal-LM script of the same table sets max_length 64); targets are class names padded to
# target_max_length, a handful of tokens.
PEFT_README_SEQ, PEFT_README_TARGET = 64, 4


class CalibrationRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    model: str
    method: str  # as written in the file
    modeled_method: str
    exact_method: bool
    settings: str
    gpu_id: str
    metric: Metric
    measured_gb: float | None
    predicted_gb: float | None
    measured_tokens_per_s: float | None
    predicted_tokens_per_s: float | None
    naive_gb: float | None
    accelerate_gb: float | None
    # the row's regime, as the estimate's uncertainty is told apart (sizing/uncertainty.py)
    gpu_class: str = ""
    gpus: int = 1
    bound: str | None = None

    @staticmethod
    def _err(pred: float | None, meas: float | None) -> float | None:
        if pred is None or meas is None or meas == 0:
            return None
        return 100.0 * (pred - meas) / meas

    @property
    def error_pct(self) -> float | None:
        return self._err(self.predicted_gb, self.measured_gb)

    @property
    def naive_error_pct(self) -> float | None:
        return self._err(self.naive_gb, self.measured_gb)

    @property
    def accelerate_error_pct(self) -> float | None:
        return self._err(self.accelerate_gb, self.measured_gb)

    @property
    def throughput_error_pct(self) -> float | None:
        return self._err(self.predicted_tokens_per_s, self.measured_tokens_per_s)


class Summary(BaseModel):
    rows: int
    median_abs_error_pct: float
    within_20_pct: float  # share of rows, 0..1


def _int(text: str, default: int) -> int:
    m = re.match(r"\s*(\d+)", text)
    return int(m.group(1)) if m else default


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def metric_of(text: str) -> Metric:
    t = text.strip().lower()
    if t.startswith("allocated"):
        return "allocated"
    if t.startswith("reserved"):
        return "reserved"
    if t.startswith("not reported"):
        return "none"
    return "device"  # nvidia-smi, screenshots, "memory consumed": the whole device


def _targets(text: str) -> str:
    t = text.lower()
    if not t or "default" in t and "unsloth" not in t or t.startswith(("q,v", "query_key")):
        return "qv"
    if t in ("q_proj,v_proj",):
        return "qv"
    return "all-linear"  # all / ALL / all-linear / MLP-only / several named modules


def _gpu(text: str) -> str:
    for key, gpu_id in GPU_MAP.items():
        if text.startswith(key):
            return gpu_id
    raise KeyError(f"no catalog GPU for measurement GPU {text!r}")


def method_key(text: str) -> str:
    """The file's method as METHOD_MAP spells it: "QLoRA (GPTQ int4 base)" -> "qlora"."""
    return text.split(" ")[0].split("(")[0].strip().lower()


def model_id(text: str) -> str:
    """The model column without a trailing remark: "Qwen/Qwen-7B (base vs chat not stated)"."""
    return text.split(" (")[0].strip()


def _amp(base: str, optimizer: str, sharding: str) -> bool:
    """fp32 master weights: AMP, "mixed precision" or DeepSpeed's fp16 engine (it keeps fp32
    masters even on one GPU), unless the row says AMP is off."""
    if "amp off" in base:
        return False
    return ("amp" in base or "mixed precision" in base or "fp32 master" in optimizer
            or "fp16 mixed precision" in sharding)


def _optimizer(text: str, sharding: str) -> str:
    """AdamW as the row ran it. DeepSpeed steps with the optimizer its config names (FusedAdam,
    one kernel; Qwen's ds_config_zero2/3.json name "AdamW"). Otherwise torch.optim.AdamW as
    built by hand or by the HF Trainer's `adamw_torch` (its default before torch 2.8, when
    these rows were measured) takes the multi-tensor path: no `fused=True`."""
    if "adafactor" in text:
        return "adafactor"
    if "8bit" in text:
        return "adamw-8bit"
    if "deepspeed" in sharding or "zero" in sharding:
        return "adamw"
    return "adamw-foreach" if "torch" in text or "trainer default" in text else "adamw"


def _lora_dropout(r: dict[str, str]) -> float:
    """The LoRA dropout a row's notes state ("LoRA r=8 alpha=16 dropout 0.05"), else PEFT's
    default of 0."""
    m = re.search(r"lora r=\d+ alpha=\d+ dropout[ =]([0-9.]+)", r["notes"].lower())
    return float(m.group(1)) if m else 0.0


def _sharding(text: str) -> tuple[str, str]:
    """(sharding, offload) from the sharding column: "zero3...", "fsdp...", "DeepSpeed ZeRO-2
    ...", "FSDP (size_based wrap) + CPU offload". DeepSpeed's ZeRO-2 engine on one GPU divides
    nothing, but still holds its gradient bucket and the optimizer's fp32 master copy."""
    t = text.lower().replace("deepspeed ", "").replace("zero-", "zero")
    sharding = "none"
    if t.startswith("zero3"):
        sharding = "zero3"
    elif t.startswith("zero2") or ("deepspeed" in text.lower() and "zero2" in t):
        sharding = "zero2"
    elif t.startswith("fsdp"):
        sharding = "fsdp"
    elif t.startswith("model_parallel"):
        sharding = "zero3"  # layers split over GPUs: weights divide, activations do not
    # the scripts' DeepSpeed/FSDP configs offload params + optimizer
    offload = "params" if "cpu_offload" in t or "cpu offload" in t else "none"
    return sharding, offload


def _model_parallel(r: dict[str, str], gpus: int) -> dict[str, int]:
    """Tensor, pipeline and virtual-stage degrees a row's sharding names ("tp2+pp4 (vp10)"),
    with its micro-batch and the micro-batches per step from the notes' MBS and GBS
    (GBS = MBS × micro-batches × data-parallel replicas); empty when it names none."""
    t = r["sharding"].lower()
    degrees = {key: int(m.group(1)) for key, pattern in
               (("tensor_parallel", r"\btp(\d+)"), ("pipeline_parallel", r"\bpp(\d+)"),
                ("virtual_stages", r"\bvp(\d+)")) if (m := re.search(pattern, t))}
    if not degrees:
        return {}
    mbs = re.search(r"\bMBS (\d+)", r["notes"])
    gbs = re.search(r"\bGBS (\d+)", r["notes"])
    if mbs and gbs:
        dp = gpus // (degrees.get("tensor_parallel", 1) * degrees.get("pipeline_parallel", 1))
        degrees["batch_size"] = int(mbs.group(1))
        degrees["grad_accum"] = max(1, int(gbs.group(1)) // (int(mbs.group(1)) * dp))
    return degrees


def _checkpointing_unstated(r: dict[str, str]) -> bool:
    return not r["grad_checkpointing"].lower().startswith(("yes", "no"))


def _flash(text: str) -> bool:
    """FlashAttention, or SDPA, which runs the flash or memory-efficient kernel for 16-bit
    inputs on these GPUs: attention memory linear in the sequence either way."""
    t = text.lower()
    return not t.startswith("no") or "sdpa" in t


@cache
def _mean_lengths() -> dict[str, float]:
    with MEASURED_LENGTHS_CSV.open(newline="", encoding="utf-8") as f:
        return {row["source_prefix"]: float(row["mean_tokens_per_sample"])
                for row in csv.DictReader(f)}


def _mean_seq_len(source: str, seq_len: int) -> int | None:
    """The mean tokens per sample the source reports, when it is shorter than the longest."""
    for prefix, mean in _mean_lengths().items():
        if source.startswith(prefix) and round(mean) < seq_len:
            return round(mean)
    return None


def job_for_row(r: dict[str, str], arch: Architecture) -> JobSpec:
    """The estimator's inputs for one measurement row (see the module docstring)."""
    method, _ = METHOD_MAP[method_key(r["method"])]
    base = r["base_dtype"].lower()
    quant, upcast, double_quant = "none", True, True
    if "gptq" in base and "int8" not in base:
        quant, upcast = "gptq", False  # 4 bits + group scales; PEFT skips the fp32 upcast
    elif "nf4" in base or "int4" in base:
        quant = "nf4"
    elif "int8" in base:
        quant, upcast = "int8", "gptq" not in base
    if quant != "none" and method == "lora":
        method = "qlora"
    amp = _amp(base, r["optimizer"].lower(), r["sharding"].lower())
    dtype = "fp32" if base.startswith("fp32") and not amp else (
        "fp16" if "fp16" in base or "fp16 mixed" in r["sharding"].lower() else "bf16")
    sharding, offload = _sharding(r["sharding"])
    gpus = _int(r["num_gpus"], 1)
    # DeepSpeed ZeRO-3 and FSDP (accelerate ≥ 0.30) keep fp32 masters; otherwise a bf16
    # model trained with bf16=True is pure bf16 (FORMULAS §2.1)
    mixed = amp or (method == "full" and sharding != "none") or dtype == "fp32"
    optimizer = _optimizer(r["optimizer"].lower(), r["sharding"].lower())
    rank_text = r["lora_rank"]
    rank = _int(rank_text, 8)  # PEFT's and ms-swift's default r
    if r["method"] == "vera":
        rank = 8  # VeRA's r sizes frozen shared projections; it trains only two vectors
    targets = _targets(r["lora_targets"])
    if "110.4M trainable" in r["lora_targets"]:
        rank = 32  # 110.4M / (40 layers × Σ(d_in + d_out) of all linears = 86,272) = 32
    swift = "ms-swift" in r["source"]
    peft_readme = "README.md 'High performance" in r["source"]
    seq_default = SWIFT_DEFAULT_SEQ if swift else (PEFT_README_SEQ if peft_readme else 2048)
    virtual = _int(r["lora_targets"], 20) if method in ("prefix", "prompt") else 20
    if r["method"].startswith("llama_adapter"):
        virtual = _int(r["lora_targets"].split("adapter_len")[-1], 10)
    variable = not (any(re.search(m, r["notes"].lower()) for m in FIXED_LENGTH_MARKERS)
                    or any(src in r["source"]
                           for src in CACHE_EMPTYING_SOURCES + FIXED_LENGTH_SOURCES))
    seq_len = _int(r["seq_len"], seq_default)
    deepspeed = "deepspeed" in r["sharding"].lower()
    sixteen_bit_logits = quant == "none" and any(src in r["source"]
                                                 for src in SIXTEEN_BIT_LOSS_SOURCES)
    fp32_loss = not (sixteen_bit_logits
                     or (deepspeed and arch.model_type in NO_LOGIT_CAST_MODEL_TYPES))
    fields = dict(
        method=method, lora_rank=rank, lora_targets=targets, lora_dropout=_lora_dropout(r),
        num_virtual_tokens=virtual,
        dtype=dtype, quant=quant, double_quant=double_quant, upcast_non_quantized=upcast,
        optimizer=optimizer, mixed_precision=mixed,
        batch_size=_int(r["batch_size"], SWIFT_DEFAULT_BATCH),
        seq_len=seq_len, mean_seq_len=_mean_seq_len(r["source"], seq_len),
        decoder_seq_len=PEFT_README_TARGET if peft_readme and arch.arch == "encoder-decoder"
        else None,
        grad_accum=_int(r["grad_accum"], 1),
        grad_checkpointing=r["grad_checkpointing"].startswith("yes"),
        flash_attention=_flash(r["flash_attention"]),
        train_embeddings="modules_to_save" in r["lora_targets"], fp32_loss=fp32_loss,
        gpus=gpus, sharding=sharding if gpus > 1 or sharding != "none" else "none",
        offload=offload, variable_lengths=variable,
        overlap_comm=True if deepspeed and any(src in r["source"]
                                               for src in OVERLAP_COMM_SOURCES) else None,
    )
    # a row that names tensor and pipeline degrees runs a micro-batch its notes give
    return JobSpec.model_validate({**fields, **_model_parallel(r, gpus)})


def placement_for_row(r: dict[str, str], job: JobSpec, gpu: GpuSpec) -> Topology | None:
    """The row's machines when it states them (see MACHINES), else the default placement."""
    m = MACHINES.search(r["sharding"])
    if m is None or job.gpus <= 1:
        return None
    return topology(gpu, job.gpus, gpus_per_node=int(m.group(2)))


def _settings(job: JobSpec) -> str:
    parts = [f"{job.method}", f"bs{job.batch_size}x{job.seq_len}", job.dtype]
    if job.mean_seq_len is not None:
        parts.insert(2, f"timed at mean {job.mean_seq_len}")
    if job.quant != "none":
        parts.append(job.quant)
    if job.method in ("lora", "qlora", "dora"):
        parts.append(f"r{job.lora_rank}/{job.lora_targets}")
    parts.append("GC" if job.grad_checkpointing else "noGC")
    parts.append("FA" if job.flash_attention else "eager")
    if job.model_parallel > 1:
        layout = [f"tp{job.tensor_parallel}", f"pp{job.pipeline_parallel}",
                  f"vp{job.virtual_stages}", f"cp{job.context_parallel}"]
        parts.append(f"{job.gpus}x" + "+".join(p for p in layout if not p.endswith("p1"))
                     + (f" {job.sharding}" if job.sharding != "none" else "")
                     + f" {job.grad_accum} micro-batches")
    elif job.gpus > 1 or job.sharding != "none":
        parts.append(f"{job.gpus}x{job.sharding}")
    if job.offload != "none":
        parts.append(f"offload-{job.offload}")
    if not job.variable_lengths:
        parts.append("fixed-len")
    return " ".join(parts)


def predict(est: Estimate, metric: Metric) -> float | None:
    m = est.memory
    return {"allocated": m.allocated_gb, "reserved": m.reserved_gb,
            "device": m.peak_gb_per_gpu, "none": None}[metric]


# Rows measured with a framework whose preset this estimator has (`--framework`), by source:
# ms-swift's benchmark (its Unsloth section ran Unsloth's patched model), the LLaMA-Factory
# issue, and Qwen's finetune.py, a transformers Trainer with PEFT.
ROW_FRAMEWORKS = (("section 'unsloth'", "unsloth"), ("modelscope/ms-swift", "ms-swift"),
                  ("hiyouga/LlamaFactory", "llama-factory"), ("QwenLM/Qwen", "hf"))
# The preset-able settings the measurement file has no column for: a preset fills them on a
# row as it fills the options a user leaves out (the row's own columns win, as options do).
UNSTATED = ("loss", "activation_offloading", "compile", "fused_kernels",
            "checkpoint_offload", "optimizer_in_backward", "nf4_backend", "grad_clipping",
            "adapter_fp32", "base_fp32", "quantize_head", "embedding_grad", "logits_kept")


def row_framework(source: str) -> str | None:
    """The framework whose code ran a row, when this estimator has a preset for it."""
    return next((fw for marker, fw in ROW_FRAMEWORKS if marker in source), None)


def with_preset(job: JobSpec, framework: str, r: dict[str, str]) -> JobSpec:
    """`job` with `framework`'s preset filling the settings the row does not state (LoRA
    dropout too, unless the row's notes give it)."""
    from gpuscout.sizing.frameworks import fill

    unstated: set[str] = set(UNSTATED)
    if not re.search(r"dropout[ =][0-9.]", r["notes"].lower()):
        unstated.add("lora_dropout")
    given = {k: (None if k in unstated else v) for k, v in job.model_dump().items()}
    filled, _ = fill(framework, given)
    return JobSpec.model_validate(filled)


def calibrate(path: Path = MEASUREMENTS_CSV, presets: bool = False) -> list[CalibrationRow]:
    """Run the estimator on every measurement row; with `presets`, the rows of a framework's
    own runs (`row_framework`) get that framework's preset on the settings they leave out."""
    catalog = load_catalog()
    out: list[CalibrationRow] = []
    with path.open(newline="", encoding="utf-8") as f:
        for i, r in enumerate(csv.DictReader(f)):
            arch = lookup(model_id(r["model"]))
            modeled, exact = METHOD_MAP[method_key(r["method"])]
            gpu: GpuSpec = catalog.gpu(_gpu(r["gpu"]))
            job = job_for_row(r, arch)
            framework = row_framework(r["source"]) if presets else None
            if framework:
                job = with_preset(job, framework, r)
            placement = placement_for_row(r, job, gpu)
            est = estimate(arch, job, gpu, placement=placement)
            if _checkpointing_unstated(r) and not est.memory.fits:
                # the run happened on this GPU, so it fit: it must have recomputed
                job = job.model_copy(update={"grad_checkpointing": True})
                est = estimate(arch, job, gpu, placement=placement)
            metric = metric_of(r["memory_metric"])
            out.append(CalibrationRow(
                index=i, model=r["model"], method=r["method"], modeled_method=job.method,
                exact_method=exact and modeled == job.method or exact and job.quant != "none",
                settings=_settings(job), gpu_id=gpu.canonical_id, metric=metric,
                measured_gb=_float(r["measured_peak_gb"]), predicted_gb=predict(est, metric),
                measured_tokens_per_s=_float(r["tokens_per_s"]),
                predicted_tokens_per_s=est.time.tokens_per_s if est.time else None,
                naive_gb=_float(r["naive_pred_gb"]), accelerate_gb=_float(r["accelerate_pred_gb"]),
                gpu_class=gpu.architecture, gpus=job.gpus,
                bound=est.time.bound if est.time else None,
            ))
    return out


def summarize(errors: list[float]) -> Summary:
    if not errors:
        return Summary(rows=0, median_abs_error_pct=0.0, within_20_pct=0.0)
    abs_err = [abs(e) for e in errors]
    return Summary(rows=len(errors), median_abs_error_pct=round(statistics.median(abs_err), 2),
                   within_20_pct=round(sum(e <= 20.0 for e in abs_err) / len(errors), 4))
