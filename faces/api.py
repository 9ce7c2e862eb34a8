"""The Python API: what the CLI, the report and the nightly flow do, as functions.

    import gpuscout
    gpuscout.refresh(db="var/gpuscout.duckdb", offline=True)
    cheapest = gpuscout.offers(db="var/gpuscout.duckdb", gpu="h100", limit=5)
    est = gpuscout.estimate(model="meta-llama/Llama-3.1-8B", method="qlora", gpu="l4")
    rec = gpuscout.recommend(db="var/gpuscout.duckdb", model="meta-llama/Llama-3.1-8B",
                             method="qlora", tokens=1e8)

Every function returns pydantic models. The job options (`model`, `method`, `batch_size`, ...)
are the fields of `gpuscout.Job`: pass them as keywords or pass a `Job`. `db` defaults to
`$GPUSCOUT_DB`, else a per-user data directory. Errors a user can act on raise
`gpuscout.GpuscoutError` subclasses (`UserInputError`, `DataError`) with a one-line message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from gpuscout.core.errors import UserInputError
from gpuscout.core.models import Availability, PricingModel
from gpuscout.sizing.job import Job

if TYPE_CHECKING:  # the heavy modules load when a function is called, not at import
    import pyarrow as pa

    from gpuscout.pipeline.check import CheckReport
    from gpuscout.pipeline.checklist import ChecklistRow
    from gpuscout.pipeline.health import ProviderHealth
    from gpuscout.pipeline.recommend import Objective, Recommendation, SpotPolicy
    from gpuscout.pipeline.refresh import ProgressHook, RunReport, Source
    from gpuscout.sizing.fit import FitAdvice
    from gpuscout.sizing.types import Estimate

OfferSort = Literal["price", "gpu-hour", "vram-hour"]
ExportFormat = Literal["parquet", "csv"]


def _db(db: Path | str | None) -> Path | str:
    if db is not None:
        return db
    from gpuscout.pipeline.settings import Settings

    return Settings().db


def _job(job: Job | None, options: dict[str, Any]) -> Job:
    if job is not None and options:
        raise UserInputError(f"pass a Job or its options, not both ({', '.join(options)})")
    _known_options(options)
    return job if job is not None else Job(**options)


def _known_options(options: dict[str, Any]) -> None:
    """A misspelled keyword (`max_price_age=0` for `max_price_age_days`) is an error that
    names the close ones, not an option the Job silently drops."""
    import difflib
    import inspect

    known = set(Job.model_fields)
    keywords = {k for f in (estimate, fit, recommend) for k in inspect.signature(f).parameters
                if k not in ("job", "options")}
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known | keywords), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UserInputError(f"unknown option {name!r}{hint}")


def refresh(*, db: Path | str | None = None, providers: Sequence[str] | None = None,
            offline: bool = False, replay: Path | str | None = None,
            record: Path | str | None = None,
            progress: ProgressHook | None = None) -> RunReport:
    """Fetch, parse, normalize, gate and merge offers into the warehouse.

    `offline` replays the bundled snapshots, `replay` any recorded archive; otherwise live.
    `record` archives every response. The report's `status` is ok, partial or failed.
    """
    from gpuscout.pipeline.refresh import refresh as run_refresh

    return run_refresh(providers, db=_db(db), source=_source(offline, replay, record),
                       progress=progress)


def check(*, db: Path | str | None = None, providers: Sequence[str] | None = None,
          offline: bool = False, replay: Path | str | None = None,
          record: Path | str | None = None) -> CheckReport:
    """Fetch and parse every provider as a refresh would and write nothing: per provider,
    reached, format recognised, offers against the last good refresh in `db`."""
    from gpuscout.pipeline.check import check as run_check

    return run_check(providers, source=_source(offline, replay, record), db=_db(db))


def provider_health(*, db: Path | str | None = None,
                    now: datetime | None = None) -> list[ProviderHealth]:
    """Every registered provider at a glance: offers, last run and last success, its last
    failure, refusal or drift and why, the age of its newest price at `now`, and the keys its
    adapter reads, whether each is set and what it would add."""
    from gpuscout.core.clock import now_utc
    from gpuscout.pipeline.health import provider_health as run_health
    from gpuscout.warehouse.connection import connect

    with connect(_db(db), read_only=True) as con:
        return run_health(con, now=now or now_utc())


def _source(offline: bool, replay: Path | str | None, record: Path | str | None) -> Source:
    from gpuscout.pipeline.refresh import Source

    if offline and replay is not None:
        raise UserInputError("--offline and --replay are exclusive: --offline replays the "
                             "bundled snapshots")
    replay_dir = Path(replay) if replay is not None else None
    if replay_dir is not None and not replay_dir.is_dir():
        raise UserInputError(f"--replay {replay}: no such archive directory")
    record_dir = Path(record) if record is not None else None
    return (Source.offline(record_dir) if offline else
            Source("replay", replay_dir, record_dir) if replay_dir else
            Source("live", None, record_dir))


class CurrentOffer(BaseModel):
    """One current offer as `gpuscout offers` lists it (see the `current_offers` view)."""

    provider: str
    offer_key: str
    instance_type: str | None
    gpu_label: str
    gpu_id: str | None = Field(description="canonical GPU id; None when the label is unknown")
    gpu_variant_assumed: bool = Field(default=False, description="the label does not state "
                                      "the variant: gpu_id is the conservative one")
    gpu_count: float
    vram_gb: float | None = Field(description="per GPU")
    memory_type: str | None
    form_factor: str | None
    interconnect: str
    pricing_model: PricingModel
    term_kind: str | None = Field(default=None, description="how it is sold: on_demand, spot, "
                                  "bid, interruptible, committed")
    min_term_hours: float | None = Field(default=None, description="a committed offer's term")
    sold_as: str | None = Field(default=None, description="the term, as the table prints it")
    listings: int = Field(default=1, description="offers identical but for their key (a "
                          "marketplace's hosts), folded into this row")
    price_kind: str
    currency: str
    price_per_hour: float = Field(description="whole offer, provider currency")
    price_usd_per_hour: float
    price_usd_per_gpu_hour: float
    price_usd_per_vram_gb_hour: float | None
    region: str | None
    geography: str | None
    availability: Availability
    available_count: int | None
    interruption: str | None = Field(description="the provider's interruption band, if any")
    observed_at: datetime
    stale: bool = Field(description="the provider's last refresh failed: last good data")


def offers_table(*, db: Path | str | None = None, gpu: str | None = None,
                 min_vram: float | None = None, max_price: float | None = None,
                 spot: bool | None = None, providers: Sequence[str] | None = None,
                 region: str | None = None, sort: OfferSort = "gpu-hour",
                 limit: int = 50) -> pa.Table:
    """`offers()` as an Arrow table (for pandas, polars or DuckDB)."""
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import check_filter_values, offers_params, run_named

    params = offers_params(gpu=gpu, min_vram=min_vram, max_price=max_price, spot=spot,
                           providers=providers, region=region, sort=sort, limit=limit)
    with connect(_db(db), read_only=True) as con:
        check_filter_values(con, providers=providers, region=region)
        return run_named(con, "offers", params)


def offers(*, db: Path | str | None = None, gpu: str | None = None,
           min_vram: float | None = None, max_price: float | None = None,
           spot: bool | None = None, providers: Sequence[str] | None = None,
           region: str | None = None, sort: OfferSort = "gpu-hour",
           limit: int = 50) -> list[CurrentOffer]:
    """Current offers, cheapest first. `gpu` takes a canonical id or its start (`h100`);
    `region` a region code fragment or a geography (`us`, `europe`); `max_price` is per
    GPU-hour; `spot` True for spot only, False for on-demand only."""
    table = offers_table(db=db, gpu=gpu, min_vram=min_vram, max_price=max_price, spot=spot,
                         providers=providers, region=region, sort=sort, limit=limit)
    return [CurrentOffer.model_validate(row) for row in table.to_pylist()]


def estimate(job: Job | None = None, *, gpu: str | None = None, tokens: float | None = None,
             correction: bool = True, db: Path | str | None = None, offer: str | None = None,
             **options: Any) -> Estimate:
    """Peak memory per GPU with a breakdown, and with `gpu` the tokens/s and (with `tokens`)
    the hours of one job, with their range (`uncertainty`). With `correction`, the user's own
    runs of the same GPU, framework and method stored in `db` (`gpuscout.runs.add`) correct
    them (`correction` says by how many runs and how much). `offer` ("PROVIDER:KEY", a current
    offer in `db`) takes the GPU, the GPUs per machine and the links between them from that
    offer, as the recommendation does. `options` are `Job`'s fields: model=..., method=..."""
    from gpuscout.pipeline.measured import estimate_job, load_evidence
    from gpuscout.pipeline.measured.evidence import Evidence
    from gpuscout.pipeline.recommend.request import MAX_TOKENS

    the_job = _job(job, options)
    placement, offer_notes = None, []
    if offer is not None:
        gpu, placement, offer_notes = _offer_placement(the_job, gpu, offer, db)
    gpu_spec = _gpu(gpu) if gpu else None
    if tokens is not None and not 1 <= tokens <= MAX_TOKENS:  # NaN fails both comparisons
        raise UserInputError(f"--tokens must be between 1 and {MAX_TOKENS:.0e}, got {tokens:g}")
    evidence, notes = (load_evidence(_db(db)) if correction and gpu_spec is not None
                       else (Evidence.none(), []))
    est = estimate_job(the_job, gpu_spec, int(tokens) if tokens else None, evidence,
                       correction=correction, placement=placement)
    extra = ["--tokens needs --gpu to turn into hours"] if tokens is not None and not gpu else []
    return est.model_copy(update={"notes": [*extra, *offer_notes, *est.notes, *notes]})


def _offer_placement(job: Job, gpu: str | None, offer: str,
                     db: Path | str | None) -> tuple[str, Any, list[str]]:
    """(GPU id, placement, notes) of `job` on the machines of a stored offer."""
    from gpuscout.pipeline.offer_placement import offer_placement
    from gpuscout.sizing.collectives import topology
    from gpuscout.warehouse.connection import connect

    with connect(_db(db), read_only=True) as con:
        facts = offer_placement(con, offer)
    if gpu is not None and _gpu(gpu).canonical_id != facts.gpu_id:
        raise UserInputError(f"--gpu {gpu} is not the GPU of --offer {offer} "
                             f"({facts.gpu_id}): give one of them")
    if job.gpus <= 1:
        return facts.gpu_id, None, [f"GPU from offer {facts.label}"]
    placement = topology(_gpu(facts.gpu_id), job.gpus,
                         interconnect=job.interconnect or facts.interconnect,
                         network=job.network or facts.network,
                         network_gbps=job.network_gbps or facts.network_gbps,
                         gpus_per_node=min(job.gpus, facts.gpus_per_machine))
    if facts.network is None:
        between = "; neither it nor its provider names a network between machines"
    else:
        between = (f"; {facts.network} between machines ({facts.network_source}), "
                   f"{facts.network_gbps:g} Gb/s per machine"
                   + (" (not stated: assumed, as recommend does)" if facts.gbps_assumed else ""))
    return facts.gpu_id, placement, [
        f"placement from offer {facts.label}: {facts.gpus_per_machine} GPUs per machine"
        + between]


def fit(job: Job | None = None, *, gpu: str, **options: Any) -> FitAdvice:
    """On `gpu`: the largest micro-batch and sequence length that fit, and the changes
    (checkpointing, 8-bit optimizer, QLoRA, fused loss, offload, more GPUs, ...) that make the
    job fit, each with its peak memory and its GPU-hours relative to the job as given."""
    from gpuscout.sizing.fit import fit_advice

    arch, spec, _ = _job(job, options).resolve()
    return fit_advice(arch, spec, _gpu(gpu))


def _gpu(gpu_id: str) -> Any:
    """The catalog GpuSpec for `gpu_id`, the one id it starts (`l4` → l4-24gb) or a GPU's
    printed name, else a UserInputError with the close ids."""
    from gpuscout.core.catalog import load_catalog

    return load_catalog().find(gpu_id)


def recommend(job: Job | None = None, *, db: Path | str | None = None,
              tokens: float | None = None, dataset_tokens: float | None = None,
              epochs: float | None = None, objective: Objective = "cost",
              spot: SpotPolicy = "allow", max_hours: float | None = None,
              checkpoint_every_min: float | None = None,
              max_price_age_days: float | None = 7.0,
              storage_gb: float | None = None, keep_days: float = 0.0,
              download_gb: float | None = None,
              require: Sequence[str] | str | None = None,
              providers: Sequence[str] | None = None, region: str | None = None,
              limit: int = 10, commitment: str = "none", max_usd: float | None = None,
              min_reliability: float | None = None, correction: bool = True,
              pessimistic: bool = False, **options: Any) -> Recommendation:
    """Every current offer priced for the whole run (`tokens`, or `dataset_tokens` ×
    `epochs`) and ranked by `objective` ("cost", "time", or "balanced": the cheapest within
    25 % of the fastest's hours), each with its reasons and its range; `rejected_cheaper` says
    why the cheaper offers, and those a rule set aside, cannot run it; `set_aside` counts the
    offers set aside per reason. `commitment` is "none" (committed offers only where the job's
    own time covers their term), "allow" (all, at their whole-term cost) or "max-months=N";
    `max_usd` caps the whole run's cost; `min_reliability` (0 to 1) a marketplace host's
    reliability. The parallelism is chosen per offer. With `correction`, your runs stored in
    `db` correct the machines of their GPU, framework and method; `pessimistic` ranks every
    offer at the slow end of its range (and an unknown storage or egress price at the dearest
    sourced rate). The run's storage (base model, dataset and its tokenized cache, two
    checkpoints, final weights; `storage_gb` replaces the sum) is charged for its hours and
    `keep_days` after; the download at the end (`download_gb`, default the final weights) as
    egress. `require` (["docker", "per-second-billing"] or "docker,per-second-billing": ssh,
    docker, jupyter, persistent-storage, per-second-billing) sets aside offers whose provider
    lacks one or does not say."""
    from gpuscout.pipeline.recommend import (
        RecommendRequest,
        commitment_from_option,
        tokens_from_options,
    )
    from gpuscout.pipeline.recommend import recommend as run_recommend
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import check_filter_values

    the_job = _job(job, options)
    arch, spec, warnings = the_job.resolve_per_offer()
    policy, months = commitment_from_option(commitment)
    request = RecommendRequest(
        tokens=tokens_from_options(tokens, dataset_tokens, epochs), objective=objective,
        spot=spot, max_hours=max_hours, checkpoint_every_min=checkpoint_every_min,
        max_price_age_days=max_price_age_days,
        storage_gb=storage_gb, keep_days=keep_days, download_gb=download_gb,
        dataset_tokens=None if dataset_tokens is None else max(1, int(dataset_tokens)),
        require=_requirements(require), providers=list(providers) if providers else None,
        region=region, limit=limit, commitment=policy, max_commitment_months=months,
        max_usd=max_usd, min_reliability=min_reliability, framework=the_job.framework,
        correction=correction, pessimistic=pessimistic)
    with connect(_db(db), read_only=True) as con:
        check_filter_values(con, providers=request.providers, region=request.region)
        rec = run_recommend(con, arch, spec, request)
    return rec.model_copy(update={"warnings": warnings})


def _requirements(require: Sequence[str] | str | None) -> tuple[Any, ...]:
    """`require` as recommend takes it: names, or one comma-separated string."""
    from gpuscout.pipeline.profiles import parse_requirements

    if require is None:
        return ()
    if isinstance(require, str):
        return parse_requirements(require)
    if not all(isinstance(r, str) for r in require):
        raise UserInputError("require takes names such as 'ssh' or 'docker'")
    return parse_requirements(",".join(require))


def provider_checklist(*, today: date | None = None) -> list[ChecklistRow]:
    """Every provider's checklist: billing increment and minimum, persistent storage and its
    price, egress, spot, SSH / Docker / Jupyter / root / pinned images, multi-node fabric and
    commitments; per fact its value (or unknown, or `varies` per offer), source and age on
    `today` (default: today, UTC). Facts read over a year earlier are marked stale."""
    from gpuscout.core.clock import now_utc
    from gpuscout.pipeline.checklist import provider_checklist as build

    return build(today=today or now_utc().date())


def sql(query: str, *, db: Path | str | None = None, allow_files: bool = False) -> pa.Table:
    """Your own SQL over the warehouse's views, as an Arrow table. It reads the warehouse and
    nothing else (no files, extensions or settings) unless `allow_files`."""
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import run_sql

    if not isinstance(query, str):
        raise UserInputError(f"sql() takes the query as a string, not {type(query).__name__}")
    with connect(_db(db), read_only=True, allow_files=allow_files) as con:
        return run_sql(con, query, allow_files=allow_files)


def export(views: Sequence[str] | None = None, *, db: Path | str | None = None,
           to: Path | str = "export", format: ExportFormat = "parquet") -> list[Path]:
    """Write `views` (all of them when None) to `<to>/<view>.<format>`; returns the files."""
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.export import export_folder, export_views
    from gpuscout.warehouse.export import views as all_views

    folder = export_folder(to, format)
    with connect(_db(db), read_only=True, write_to=folder) as con:
        names = list(views) if views is not None else all_views(con)
        return export_views(con, names, folder, format)
