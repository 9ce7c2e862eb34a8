"""The provider checklist: what makes a provider good for fine-tuning beyond the GPU price, one
row per provider, each answer with its source's age.

Every cell comes from one sourced fact in `pipeline/data/provider_profiles.csv`. A cell is
yes / no, a value (billing increment, USD per GB...), `varies` (the provider sets it per offer,
host or underlying cloud) or unknown (no public source found). A fact read more than a year
before `today` is stale: it is flagged, not dropped.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gpuscout.pipeline.profiles import ProviderProfile, load_profiles

STALE_AFTER_DAYS = 365

CellState = Literal["yes", "no", "value", "varies", "unknown"]
YES, NO, UNKNOWN, VARIES = "✓", "✗", "?", "~"


class ChecklistColumn(BaseModel):
    """One column: the fact it shows, a short header for a narrow terminal, and its meaning."""

    model_config = ConfigDict(frozen=True)

    key: str
    fact: str
    title: str


# The seed's checklist, in its order: billing, storage, egress, interruptible capacity,
# environment, multi-node, commitments.
COLUMNS: tuple[ChecklistColumn, ...] = tuple(
    ChecklistColumn(key=k, fact=f, title=t) for k, f, t in (
    ("bill", "billing_increment_s", "billing increment"),
    ("min", "min_charge_s", "minimum charge"),
    ("stor", "persistent_storage", "persistent storage"),
    ("$/GB", "storage_usd_per_gb_month", "storage, USD per GB-month"),
    ("stop", "storage_survives_stop", "storage survives a stop"),
    ("term", "storage_survives_termination", "storage survives termination"),
    ("egr$", "egress_usd_per_gb", "egress, USD per GB"),
    ("spot", "spot_available", "spot / interruptible capacity"),
    ("ntc", "spot_notice_s", "spot interruption notice"),
    ("ssh", "ssh", "SSH"),
    ("dck", "docker_images", "custom Docker images"),
    ("jup", "jupyter", "Jupyter"),
    ("root", "root_access", "root access"),
    ("img", "pinned_images", "images with pinned CUDA/driver versions"),
    ("fab", "multinode_fabric", "multi-node fabric"),
    ("cmt", "commitment_discounts", "commitment discounts"),
    ))

_FABRIC = {"InfiniBand": "IB", "RoCE": "RoCE", "EFA": "EFA", "Ethernet": "Eth"}


class ChecklistCell(BaseModel):
    """One fact of one provider as the checklist shows it."""

    model_config = ConfigDict(frozen=True)

    fact: str
    state: CellState
    value: bool | int | float | str | None = None
    text: str  # the short form a table shows: ✓ ✗ ? ~ 60s 0.07 IB
    source_url: str | None = None
    verified_at: date | None = None
    age_days: int | None = None
    stale: bool = False


class ChecklistRow(BaseModel):
    """One provider: a cell per column of `COLUMNS`, and the age of its oldest fact."""

    model_config = ConfigDict(frozen=True)

    provider: str
    cells: list[ChecklistCell]
    known: int  # cells with an answer (yes, no, a value or varies)
    oldest_verified: date | None = None
    age_days: int | None = None  # of the oldest fact in the row
    stale_facts: list[str]

    def flat(self) -> dict[str, Any]:
        """One mapping for CSV: per fact its value (or `unknown` / `varies`) and age in days."""
        out: dict[str, Any] = {"provider": self.provider, "known": self.known,
                               "age_days": self.age_days}
        for cell in self.cells:
            out[cell.fact] = cell.value if cell.state in ("yes", "no", "value") else cell.state
            out[f"{cell.fact}_age_days"] = cell.age_days
        return out


def duration(seconds: int) -> str:
    """60 -> 1m, 3600 -> 1h, 86400 -> 1d, 90 -> 90s, 0 -> 0: the unit that divides it evenly."""
    if seconds == 0:
        return "0"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def age(days: int) -> str:
    """A short age: 12d, 5mo, 3y."""
    if days < 60:
        return f"{days}d"
    if days < 730:
        return f"{days // 30}mo"
    return f"{days // 365}y"


def _text(fact: str, value: bool | int | float | str) -> str:
    if isinstance(value, bool):
        return YES if value else NO
    if fact == "multinode_fabric":
        return _FABRIC.get(str(value), str(value))
    if isinstance(value, int):
        return duration(value)
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)


def _cell(profile: ProviderProfile, fact: str, today: date) -> ChecklistCell:
    got = profile.fact(fact)
    days = (today - got.verified_at).days if got.verified_at else None
    common: dict[str, Any] = {"fact": fact, "source_url": got.source_url,
                              "verified_at": got.verified_at, "age_days": days,
                              "stale": days is not None and days > STALE_AFTER_DAYS}
    if got.state == "varies":
        return ChecklistCell(state="varies", text=VARIES, **common)
    if got.value is None:
        return ChecklistCell(state="unknown", text=UNKNOWN, **common)
    state: CellState = ("value" if not isinstance(got.value, bool)
                        else "yes" if got.value else "no")
    return ChecklistCell(state=state, value=got.value, text=_text(fact, got.value), **common)


def checklist_row(profile: ProviderProfile, today: date) -> ChecklistRow:
    cells = [_cell(profile, c.fact, today) for c in COLUMNS]
    dated = [c.verified_at for c in cells if c.verified_at is not None]
    oldest = min(dated, default=None)
    return ChecklistRow(
        provider=profile.provider, cells=cells,
        known=sum(c.state != "unknown" for c in cells), oldest_verified=oldest,
        age_days=(today - oldest).days if oldest else None,
        stale_facts=[c.fact for c in cells if c.stale])


def provider_checklist(*, today: date, profiles: dict[str, ProviderProfile] | None = None,
                       ) -> list[ChecklistRow]:
    """The checklist for every provider with a profile, most facts known first, then by name."""
    profiles = load_profiles() if profiles is None else profiles
    rows = [checklist_row(p, today) for p in profiles.values()]
    return sorted(rows, key=lambda r: (-r.known, r.provider))
