"""Configuration from the environment: the only module that reads environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_db_path() -> Path:
    return Path(user_data_dir("gpuscout", appauthor=False)) / "gpuscout.duckdb"


class Settings(BaseSettings):
    """`GPUSCOUT_*` variables. Provider credentials use the provider's own variable names."""

    model_config = SettingsConfigDict(env_prefix="GPUSCOUT_", extra="ignore")

    db: Path = Field(default_factory=default_db_path, description="warehouse DuckDB file")
    # Drift gate: hold back a refresh whose offer count falls below this share of the provider's
    # last good refresh (only when that refresh had at least `collapse_min_offers` offers).
    collapse_ratio: float = Field(default=0.5, gt=0, le=1)
    collapse_min_offers: int = Field(default=10, ge=1)
    # Drift gate: a field (VRAM, stock, region, interconnect, spot prices) the provider's last
    # good load carried on more than this share of its offers, carried by less tonight, holds
    # the refresh back as drift (a key renamed upstream reads as "not given" on every row).
    drift_field_share: float = Field(default=0.5, gt=0, lt=1)
    # Row gate: a price per GPU-hour outside this band (USD) is quarantined as absurd. The
    # cheapest real rows are shared consumer cards (~$0.03); the dearest list prices are ~$15.
    min_usd_per_gpu_hour: float = Field(default=0.01, gt=0)
    max_usd_per_gpu_hour: float = Field(default=100.0, gt=0)
    # Row gate: VRAM per GPU and GPUs per offer beyond these are not a machine anyone rents (the
    # largest today: 288 GB per GPU, 16 GPUs per offer) but a misread field.
    max_vram_gb: float = Field(default=1024.0, gt=0)
    max_gpu_count: float = Field(default=1024.0, gt=0)
    # Price band, per canonical GPU: a row more than `price_band_factor` times above or below
    # the median USD per GPU-hour of that GPU's open offers across all providers (the last good
    # data, when at least `price_band_min_offers` offers make the median) is quarantined. Real
    # offers of one GPU spread up to ~12x (old spot listings vs hyperscaler list prices); unit
    # mistakes are 60x (per minute), 100x (cents), 730x (per month).
    price_band_factor: float = Field(default=20.0, gt=1)
    price_band_min_offers: int = Field(default=3, ge=1)
    # Refresh gate: a row "jumped" when its price is absurd, outside its GPU's band, or more
    # than `price_jump_factor` times above or below the same offer's last good price. When more
    # than `price_jump_refuse_share` of the rows that can be checked jumped (and at least
    # `price_jump_min_rows` can), prices moved as a whole - a unit or currency change upstream,
    # per-instance read as per-GPU - and the refresh is refused rather than loaded. One offer
    # changing its price, even 10x, is loaded (and quarantined only when out of band).
    price_jump_factor: float = Field(default=3.0, gt=1)
    price_jump_refuse_share: float = Field(default=0.5, gt=0, le=1)
    price_jump_min_rows: int = Field(default=3, ge=1)


def credentials(names: tuple[str, ...]) -> dict[str, str]:
    """The provider secrets that are set, by variable name.

    From the environment; with `GPUSCOUT_SECRET_BLOCKS=1`, a variable that is not set is read
    from the Prefect Secret block of the same name in lower kebab case (`RUNPOD_API_KEY` ->
    `runpod-api-key`), so a deployment keeps its keys in Prefect rather than in its
    environment. Either way the refresh masks every value it got in whatever it logs, archives
    or stores (adapters/redaction.py).
    """
    found = {n: os.environ[n] for n in names if os.environ.get(n)}
    missing = [n for n in names if n not in found]
    if missing and os.environ.get("GPUSCOUT_SECRET_BLOCKS", "").lower() in ("1", "true", "yes"):
        found.update(_secret_blocks(missing))
    return found


def secret_block_name(variable: str) -> str:
    return variable.lower().replace("_", "-")


def _secret_blocks(names: list[str]) -> dict[str, str]:
    try:  # prefect is the flows' extra, imported only when asked for
        from prefect.blocks.system import Secret
    except ImportError:
        return {}
    out = {}
    for name in names:
        try:
            # A sync call outside an event loop returns the block (prefect's sync/async
            # dispatch); its annotation names the coroutine of the async path.
            block: Any = Secret.load(secret_block_name(name))
            value = block.get()
        except Exception:  # no such block, no Prefect API: the key stays unset
            continue
        if isinstance(value, str) and value:
            out[name] = value
    return out
