"""Configuration from the environment: the only module that reads environment variables."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_db_path() -> Path:
    return Path(user_data_dir("gpuscout", appauthor=False)) / "gpuscout.duckdb"


class Settings(BaseSettings):
    """`GPUSCOUT_*` variables. Provider credentials use the provider's own variable names."""

    model_config = SettingsConfigDict(env_prefix="GPUSCOUT_", extra="ignore")

    db: Path = Field(default_factory=default_db_path, description="warehouse DuckDB file")
    # Refresh gate: refuse a refresh whose offer count falls below this share of the provider's
    # last good refresh (only when that refresh had at least `collapse_min_offers` offers).
    collapse_ratio: float = Field(0.5, gt=0, le=1)
    collapse_min_offers: int = Field(10, ge=1)
    # Row gate: a price per GPU-hour outside this band (USD) is quarantined as absurd. The
    # cheapest real rows are shared consumer cards (~$0.03); the dearest list prices are ~$15.
    min_usd_per_gpu_hour: float = Field(0.01, gt=0)
    max_usd_per_gpu_hour: float = Field(100.0, gt=0)


def credentials(names: tuple[str, ...]) -> dict[str, str]:
    """The provider secrets that are set, by variable name."""
    return {n: os.environ[n] for n in names if os.environ.get(n)}
