"""AWS Spot Advisor: the interruption band and savings AWS reports per region and instance
type (`spot-advisor-data.json`). It only annotates the spot offers (`aws_spot.py`): without it
they stay, with no band.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.aws_offers import NAME
from gpuscout.adapters.toolkit import SNIPPET_CHARS, json_body, member, parse_error


@dataclass(frozen=True)
class Advisor:
    bands: dict[int, str]  # range index -> label such as "<5%"
    by_region: dict[str, dict[str, Any]]  # region -> instance type -> {"s": savings, "r": band}


def read_advisor(capture: Capture) -> Advisor:
    doc = json_body(NAME, capture)
    ranges = member(NAME, capture, doc, "ranges", object)
    regions = member(NAME, capture, doc, "spot_advisor", object)
    try:
        bands = {int(r["index"]): str(r["label"]) for r in ranges}
        by_region = {code: dict(v.get("Linux", {})) for code, v in regions.items()}
    except (TypeError, KeyError, ValueError, AttributeError):
        raise parse_error(NAME, capture, "Spot Advisor ranges or regions of an unknown shape",
                          "ranges", snippet=json.dumps(ranges)[:SNIPPET_CHARS]) from None
    return Advisor(bands, by_region)
