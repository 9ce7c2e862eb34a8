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
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from gpuscout.core.errors import UserInputError
from gpuscout.core.models import Availability, PricingModel
from gpuscout.sizing.job import Job

if TYPE_CHECKING:  # the heavy modules load when a function is called, not at import
    import pyarrow as pa

    from gpuscout.pipeline.check import CheckReport
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
    return job if job is not None else Job(**options)


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
    gpu_count: float
    vram_gb: float | None = Field(description="per GPU")
    memory_type: str | None
    form_factor: str | None
    interconnect: str
    pricing_model: PricingModel
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
    from gpuscout.warehouse.queries import offers_params, run_named

    params = offers_params(gpu=gpu, min_vram=min_vram, max_price=max_price, spot=spot,
                           providers=providers, region=region, sort=sort, limit=limit)
    with connect(_db(db), read_only=True) as con:
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
             **options: Any) -> Estimate:
    """Peak memory per GPU with a breakdown, and with `gpu` the tokens/s and (with `tokens`)
    the hours of one job. `options` are `Job`'s fields: model=..., method=..., ..."""
    from gpuscout.sizing.estimate import estimate as run_estimate

    arch, spec, warnings = _job(job, options).resolve()
    gpu_spec = _gpu(gpu) if gpu else None
    if tokens is not None and tokens < 1:
        raise UserInputError(f"--tokens must be at least 1, got {tokens:g}")
    if tokens is not None and gpu_spec is None:
        warnings.append("--tokens needs --gpu to turn into hours")
    est = run_estimate(arch, spec, gpu_spec, int(tokens) if tokens else None)
    return est.model_copy(update={"notes": [*warnings, *est.notes]})


def fit(job: Job | None = None, *, gpu: str, **options: Any) -> FitAdvice:
    """On `gpu`: the largest micro-batch and sequence length that fit, and the changes
    (checkpointing, 8-bit optimizer, QLoRA, fused loss, offload, more GPUs, ...) that make the
    job fit, each with its peak memory and its GPU-hours relative to the job as given."""
    from gpuscout.sizing.fit import fit_advice

    arch, spec, _ = _job(job, options).resolve()
    return fit_advice(arch, spec, _gpu(gpu))


def _gpu(gpu_id: str) -> Any:
    """The catalog GpuSpec for `gpu_id` or the one id it starts (`l4` → l4-24gb), else a
    UserInputError with the close ids."""
    import difflib

    from gpuscout.core.catalog import load_catalog

    catalog = load_catalog()
    key = gpu_id.strip().lower()
    if key in catalog.gpus:
        return catalog.gpu(key)
    starts = [g for g in catalog.gpus if g.startswith(key + "-")]
    if len(starts) == 1:
        return catalog.gpu(starts[0])
    if starts:
        raise UserInputError(f"GPU {gpu_id!r} names several: {', '.join(starts)}")
    close = difflib.get_close_matches(key, list(catalog.gpus), n=5, cutoff=0.5)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise UserInputError(f"unknown GPU {gpu_id!r}{hint}")


def recommend(job: Job | None = None, *, db: Path | str | None = None,
              tokens: float | None = None, dataset_tokens: float | None = None,
              epochs: float | None = None, objective: Objective = "cost",
              spot: SpotPolicy = "allow", max_hours: float | None = None,
              checkpoint_every_min: float | None = None,
              max_price_age_days: float | None = 7.0,
              storage_gb: float | None = None,
              providers: Sequence[str] | None = None, region: str | None = None,
              limit: int = 10, **options: Any) -> Recommendation:
    """Every current offer priced for the whole run (`tokens`, or `dataset_tokens` ×
    `epochs`) and ranked by `objective`, each with its reasons; `rejected_cheaper` says why
    the cheaper offers cannot run it. The parallelism is chosen per offer."""
    from gpuscout.pipeline.recommend import RecommendRequest, tokens_from_options
    from gpuscout.pipeline.recommend import recommend as run_recommend
    from gpuscout.warehouse.connection import connect

    arch, spec, warnings = _job(job, options).resolve_per_offer()
    request = RecommendRequest(
        tokens=tokens_from_options(tokens, dataset_tokens, epochs), objective=objective,
        spot=spot, max_hours=max_hours, checkpoint_every_min=checkpoint_every_min,
        max_price_age_days=max_price_age_days,
        storage_gb=storage_gb, providers=list(providers) if providers else None,
        region=region, limit=limit)
    with connect(_db(db), read_only=True) as con:
        rec = run_recommend(con, arch, spec, request)
    return rec.model_copy(update={"warnings": warnings})


def sql(query: str, *, db: Path | str | None = None, allow_files: bool = False) -> pa.Table:
    """Your own SQL over the warehouse's views, as an Arrow table. It reads the warehouse and
    nothing else (no files, extensions or settings) unless `allow_files`."""
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import run_sql

    with connect(_db(db), read_only=True) as con:
        return run_sql(con, query, allow_files=allow_files)


def export(views: Sequence[str] | None = None, *, db: Path | str | None = None,
           to: Path | str = "export", format: ExportFormat = "parquet") -> list[Path]:
    """Write `views` (all of them when None) to `<to>/<view>.<format>`; returns the files."""
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.export import export_views
    from gpuscout.warehouse.export import views as all_views

    with connect(_db(db), read_only=True) as con:
        names = list(views) if views is not None else all_views(con)
        return export_views(con, names, Path(to), format)
