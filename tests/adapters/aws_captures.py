"""The AWS captures that the tests of adapters/aws*.py share: the bundled price-list chain, spot
feed and Spot Advisor (adapters/snapshots/aws/), the fixtures (tests/fixtures/aws/), and how a
test loads, parses and mutates them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from invariants import FIXTURES, load_capture, with_replaced

from gpuscout.adapters import aws
from gpuscout.adapters.archive import Capture
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.models import ParsedOffer, ParseResult

SNAP = SNAPSHOTS_DIR / "aws"
FIX = FIXTURES / "aws"
OFFER_INDEX = "offers_service_index_2025-09-12.json"
REGION_INDEX = "region_index_AmazonEC2_2025-05-23_us-east-1.json"
US_EAST_1 = "ec2_offer_us-east-1_assembled_2024-05-28.csv"
SPOT = "spot_price_feed_spotjson_3region_subset.json"
ADVISOR = "spot_advisor_data_2025-06-28.json"
SAMPLE = "ec2_offer_index_csv_sample_2025-09-12.csv"
FULL_REGION_INDEX = "region_index_AmazonEC2_2025-05-23.json"
SHARED_SPOT = "spot_price_feed_spotjs_af-south-1_subset.json"
P4D_JSON = "ec2_offer_us-east-1_p4d_excerpt_opencost_2024-05-28.json"
ALL = (OFFER_INDEX, REGION_INDEX, US_EAST_1, SPOT, ADVISOR)
SPOT_SEEN = datetime(2026, 8, 10, 6, 54, 2, tzinfo=UTC)
SPOT_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"


def caps(*files: str, folder: Path = SNAP) -> list[Capture]:
    return [load_capture(folder, f) for f in files]


def parsed(*files: str) -> ParseResult:
    return aws.parse(caps(*files))


def mutated(file: str, old: str, new: str, folder: Path = SNAP) -> Capture:
    """A recorded body with one string replaced: how a format change (or a filter case) looks."""
    capture = load_capture(folder, file)
    return with_replaced(capture, old, new)


def by_key(result: ParseResult) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in result.offers}
