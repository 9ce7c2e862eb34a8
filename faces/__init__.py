"""gpuscout: GPU cloud offers, their price history, and the one that runs your job best.

The Python API (see `gpuscout.api`): `refresh`, `offers`, `estimate`, `fit`, `recommend`,
`provider_checklist`, `provider_health`, `sql` and `export`, with `Job` for the job options,
and `gpuscout.runs` for your own runs. Names load on first use, so `import gpuscout` (and the
CLI's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuscout.api import (
        CurrentOffer,
        check,
        estimate,
        export,
        fit,
        offers,
        offers_table,
        provider_checklist,
        provider_health,
        recommend,
        refresh,
        sql,
    )
    from gpuscout.core.errors import DataError, GpuscoutError, UserInputError
    from gpuscout.pipeline.checklist import ChecklistRow
    from gpuscout.pipeline.health import ProviderHealth
    from gpuscout.pipeline.recommend import RankedOffer, Recommendation, RejectedOffer
    from gpuscout.pipeline.refresh import RunReport
    from gpuscout.sizing.job import Job
    from gpuscout.sizing.types import Estimate

_HOME = {
    **dict.fromkeys(["CurrentOffer", "check", "estimate", "export", "fit", "offers",
                     "offers_table", "provider_checklist", "provider_health",
                     "recommend", "refresh", "sql"], "gpuscout.api"),
    "ProviderHealth": "gpuscout.pipeline.health",
    **dict.fromkeys(["DataError", "GpuscoutError", "UserInputError"], "gpuscout.core.errors"),
    **dict.fromkeys(["RankedOffer", "Recommendation", "RejectedOffer"],
                    "gpuscout.pipeline.recommend"),
    "RunReport": "gpuscout.pipeline.refresh",
    "ChecklistRow": "gpuscout.pipeline.checklist",
    "Job": "gpuscout.sizing.job",
    "Estimate": "gpuscout.sizing.types",
}
__all__ = [
    "ChecklistRow", "CurrentOffer", "DataError", "Estimate", "GpuscoutError", "Job",
    "ProviderHealth", "RankedOffer", "Recommendation", "RejectedOffer", "RunReport",
    "UserInputError", "check", "estimate", "export", "fit",
    "offers", "offers_table", "provider_checklist", "provider_health", "recommend", "refresh",
    "sql",
]


def __getattr__(name: str) -> Any:
    if name == "runs":  # a module of its own: gpuscout.runs.add / list / compare
        return importlib.import_module("gpuscout.runs")
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'gpuscout' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
