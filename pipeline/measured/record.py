"""One measured run: a log's reading joined to the job it ran, in the model's own token count.

What the log states wins over a job option left at its default, and an option given that
contradicts the log is an error; what the log does not state comes from the options (or their
defaults), and `field_sources` records which came from where: `log`, `option`, `default`, or
`derived: …` with how. The measured rate is turned into the tokens the sizing model counts,
those of the micro-batches at the job's mean sequence length:

- a rate of all GPUs is taken as it is, one of one GPU times the GPUs;
- the HF Trainer's total_flos is 6 × the padded slots × the model's non-embedding parameters
  (the catalog's architecture, with the adapter's parameters, less its embeddings), so it
  gives the padded slots, and their mean per sample the timed length when none is given;
- samples alone (Unsloth, older litgpt, a results file without flos) are multiplied by the
  job's mean sequence length (--mean-seq-len, else --seq-len).

The prediction stored with the run is the sizing model's for that job on that GPU, when added.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gpuscout.core.catalog import GpuSpec, load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.runlogs import LogReading
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.job import Job
from gpuscout.sizing.peft import adapter_flops_params
from gpuscout.sizing.types import Estimate, JobSpec

# The job options a run always records the source of (the others only when given or read).
KEY_FIELDS = ("model", "gpus", "sharding", "framework", "method", "batch_size", "seq_len",
              "mean_seq_len", "grad_accum", "packed")
# A log's figures that identify its run: the same run read from two files is one run.
FINGERPRINT = ("runtime_s", "samples_per_s", "tokens_per_s", "tokens_per_s_per_gpu", "tokens",
               "total_flos", "peak_gb", "steps", "started_at")


class MeasuredRun(BaseModel):
    """A row of `measured_runs` (warehouse/migrations/0010_measured_runs.sql)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    added_at: datetime
    source_path: str
    source_format: str
    model: str
    gpu_id: str
    gpus: int
    framework: str
    method: str
    batch_size: int
    seq_len: int
    mean_seq_len: int | None
    grad_accum: int
    job: Job
    field_sources: dict[str, str]
    tokens_per_s: float | None
    token_count: str | None
    token_basis: str | None
    peak_gb: float | None
    memory_metric: str | None
    runtime_s: float | None
    log_started_at: datetime | None
    log_finished_at: datetime | None
    predicted_tokens_per_s: float | None
    predicted_peak_gb: float | None
    tokens_error_pct: float | None
    memory_error_pct: float | None
    gpuscout_version: str
    notes: list[str]

    def row(self) -> dict[str, Any]:
        """The run as the warehouse's Arrow schema takes it."""
        out = self.model_dump(exclude={"job", "field_sources"})
        return {**out, "job": self.job.model_dump_json(exclude_defaults=True),
                "field_sources": sorted(self.field_sources.items())}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MeasuredRun:
        sources = row["field_sources"]
        return cls.model_validate({**row, "job": Job.model_validate_json(row["job"]),
                                   "field_sources": dict(sources) if sources else {}})


def gpuscout_version() -> str:
    try:
        return version("gpuscout")
    except PackageNotFoundError:
        return "unknown"


def run_id(reading: LogReading) -> str:
    """A log's own figures (a CSV row: with its model, GPU and settings) hashed."""
    figures = {k: getattr(reading, k) for k in FINGERPRINT if getattr(reading, k) is not None}
    if reading.format == "csv":
        figures.update(model=reading.model, gpu=reading.gpu_name, method=reading.method,
                       settings=reading.settings)
    text = json.dumps({"format": reading.format, **figures}, sort_keys=True, default=str)
    return "r-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


class _Fields:
    """The job's options with their sources, as the log and the options settle them."""

    def __init__(self, job: Job, given: set[str]) -> None:
        self.values = job.model_dump()
        self.given = given
        self.sources = {name: "option" for name in given}

    def from_log(self, name: str, value: Any, source: str = "log") -> None:
        if value is None:
            return
        if name in self.given and str(self.values[name]).lower() != str(value).lower():
            raise UserInputError(f"{_flag(name)} {self.values[name]} contradicts the log "
                                 f"({value}); leave it out or fix it")
        if name not in self.given:
            self.values[name] = value
            self.sources[name] = source

    def known(self, name: str) -> bool:
        return name in self.sources

    def job(self) -> Job:
        try:
            return Job(**self.values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UserInputError(f"{_flag(where)}: {first['msg']}") from exc


def _gpu(reading: LogReading, gpu: str | None, sources: dict[str, str]) -> GpuSpec:
    catalog = load_catalog()
    named = catalog.find(reading.gpu_name) if reading.gpu_name else None
    given = catalog.find(gpu) if gpu else None
    if named and given and named.canonical_id != given.canonical_id:
        raise UserInputError(f"--gpu {gpu} contradicts the log ({reading.gpu_name} is "
                             f"{named.canonical_id})")
    chosen = named or given
    if chosen is None:
        raise UserInputError(f"{reading.source}: the log does not name its GPU; give --gpu")
    sources["gpu"] = "log" if named else "option"
    return chosen


def _settle_parallelism(f: _Fields, reading: LogReading, notes: list[str]) -> None:
    """GPUs and accumulation from the samples per optimizer step, where the log has both."""
    if reading.samples is None or not reading.steps:
        return
    per_step = reading.samples / reading.steps
    batch = int(f.values["batch_size"])
    if f.known("grad_accum") and not f.known("gpus"):
        gpus = round(per_step / (batch * int(f.values["grad_accum"])))
        if gpus >= 1:
            f.from_log("gpus", gpus, f"derived: {per_step:.3g} samples a step ÷ (micro-batch "
                                     f"{batch} × accumulation {f.values['grad_accum']})")
    elif not f.known("grad_accum"):
        gpus = int(f.values["gpus"])
        accum = round(per_step / (batch * gpus))
        if accum >= 1:
            f.from_log("grad_accum", accum, f"derived: {per_step:.3g} samples a step ÷ "
                                            f"(micro-batch {batch} × {gpus} GPU(s))")
        if not f.known("gpus"):
            f.sources["gpus"] = "default: one GPU (give --gpus for more)"
    expected = batch * int(f.values["grad_accum"]) * int(f.values["gpus"])
    if abs(expected - per_step) > 0.1 * per_step:
        notes.append(f"the log has {per_step:.3g} samples a step, the job {expected}: check "
                     "--batch-size, --grad-accum and --gpus")


def _job_from(reading: LogReading, job: Job, given: set[str],
              notes: list[str]) -> tuple[_Fields, Job]:
    f = _Fields(job, given)
    f.from_log("model", reading.model)
    f.from_log("method", reading.method)
    f.from_log("framework", reading.framework)
    f.from_log("batch_size", reading.batch_size)
    f.from_log("grad_accum", reading.grad_accum)
    f.from_log("gpus", reading.gpus)
    f.from_log("seq_len", reading.seq_len)
    for name, value in reading.settings.items():
        if name not in Job.model_fields:
            raise UserInputError(f"{reading.source}: column {name!r} is not a job option")
        f.from_log(name, value)
    if f.values.get("model") is None and f.values.get("config") is None \
            and f.values.get("params") is None:
        raise UserInputError(f"{reading.source}: the log does not name its model; give --model")
    _settle_parallelism(f, reading, notes)
    if int(f.values["gpus"]) > 1 and f.values["sharding"] == "none":
        f.values["sharding"] = "ddp"
        f.sources["sharding"] = "default: DDP, how a trainer runs several processes unless told"
    return f, f.job()


def non_embedding_params(arch: Architecture, spec: JobSpec) -> float:
    """`num_parameters(exclude_embeddings=True)` of the model the Trainer trains: every
    parameter but the nn.Embedding ones (a tied head goes with them), adapters included."""
    adapters = 0 if spec.method == "full" else adapter_flops_params(arch, spec)
    return arch.total_params - arch.embedding_params + adapters


def _rate(reading: LogReading, f: _Fields, arch: Architecture, spec: JobSpec,
          notes: list[str]) -> tuple[float | None, str | None, str | None]:
    """Tokens/s of the whole job as the model counts them, how it was had, and what the
    tokens counted (padded | non-padding | labels | samples)."""
    gpus = int(f.values["gpus"])
    said = f"{reading.token_note}" if reading.token_note else "the log's rate"
    counted = reading.token_count
    if reading.tokens_per_s is not None:
        return reading.tokens_per_s, f"log: {said}", counted
    if reading.tokens_per_s_per_gpu is not None:
        return (reading.tokens_per_s_per_gpu * gpus,
                f"log per GPU × {gpus} GPU(s): {said}", counted)
    if reading.tokens is not None and reading.runtime_s:
        return reading.tokens / reading.runtime_s, f"log: {said} over the runtime", counted
    if reading.total_flos and reading.runtime_s:
        params = non_embedding_params(arch, spec)
        tokens = reading.total_flos / (6 * params)
        if spec.quant != "none":
            notes.append("total_flos of a quantized base: transformers' parameter count of "
                         "4-bit weights differs between versions")
        if reading.samples and not f.known("mean_seq_len"):
            mean = round(tokens / reading.samples)
            if 1 <= mean <= int(f.values["seq_len"]):
                f.from_log("mean_seq_len", mean, "derived: total_flos padded slots ÷ samples")
        return (tokens / reading.runtime_s,
                f"derived: total_flos ÷ (6 × {params:,.0f} non-embedding parameters) = "
                f"{tokens:,.0f} padded slots over train_runtime", "padded")
    if reading.samples_per_s is not None:
        length = f.values["mean_seq_len"] or f.values["seq_len"]
        which = "--mean-seq-len" if f.values["mean_seq_len"] else "--seq-len"
        return (reading.samples_per_s * int(length),
                f"derived: {reading.samples_per_s:.4g} samples/s × {which} {length} "
                f"({f.sources.get(which[2:].replace('-', '_'), 'default')})", "samples")
    return None, None, None


def _predicted_memory(est: Estimate, metric: str | None) -> float | None:
    m = est.memory
    return {"allocated": m.allocated_gb, "active": m.allocated_gb, "reserved": m.reserved_gb,
            "device": m.peak_gb_per_gpu}.get(metric or "")


def _error(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or not measured:
        return None
    return 100.0 * (predicted - measured) / measured


def measure(reading: LogReading, job: Job, given: set[str], gpu: str | None, path: str,
            now: datetime) -> MeasuredRun:
    """The run `reading` describes, of the job `job` (whose explicitly given options are
    `given`) on `gpu` unless the log names its GPU."""
    notes = list(reading.notes)
    f, resolved_job = _job_from(reading, job, given, notes)
    gpu_spec = _gpu(reading, gpu, f.sources)
    arch, spec, warnings = resolved_job.resolve()
    tokens_per_s, basis, counted = _rate(reading, f, arch, spec, notes)
    if f.known("mean_seq_len") and f.values["mean_seq_len"] != resolved_job.mean_seq_len:
        resolved_job = f.job()  # the timed length the log gave
        arch, spec, warnings = resolved_job.resolve()
    for name in KEY_FIELDS:
        f.sources.setdefault(name, "default")
    if reading.token_count in ("labels", "non-padding"):
        notes.append(f"the log counts {reading.token_count} tokens; the model times the "
                     "micro-batches at the job's mean sequence length")
    est = estimate(arch, spec, gpu_spec)
    predicted = est.time.tokens_per_s if est.time else None
    predicted_gb = _predicted_memory(est, reading.memory_metric)
    return MeasuredRun(
        run_id=run_id(reading), added_at=now, source_path=path, source_format=reading.format,
        model=arch.model_id, gpu_id=gpu_spec.canonical_id, gpus=spec.gpus,
        framework=resolved_job.framework, method=spec.method, batch_size=spec.batch_size,
        seq_len=spec.seq_len, mean_seq_len=spec.mean_seq_len, grad_accum=spec.grad_accum,
        job=resolved_job, field_sources={**f.sources}, tokens_per_s=tokens_per_s,
        token_count=counted, token_basis=basis, peak_gb=reading.peak_gb,
        memory_metric=reading.memory_metric, runtime_s=reading.runtime_s,
        log_started_at=reading.started_at, log_finished_at=reading.finished_at,
        predicted_tokens_per_s=predicted, predicted_peak_gb=predicted_gb,
        tokens_error_pct=_error(predicted, tokens_per_s),
        memory_error_pct=_error(predicted_gb, reading.peak_gb),
        gpuscout_version=gpuscout_version(), notes=[*notes, *warnings])
