"""adapters/aws.py, the entry: the bundled price-list chain as a whole, how captures are told
apart and what makes a refresh complete, the GPU labels of every source, and fetch().
Each source's reader has its own tests: test_aws_offers.py, test_aws_spot.py,
test_aws_advisor.py."""

from __future__ import annotations

import csv
import json
import logging

import httpx
import pytest
from aws_captures import (
    ADVISOR,
    ALL,
    FIX,
    FULL_REGION_INDEX,
    OFFER_INDEX,
    REGION_INDEX,
    SAMPLE,
    SHARED_SPOT,
    SNAP,
    SPOT,
    SPOT_URL,
    US_EAST_1,
    caps,
    mutated,
    parsed,
)
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import aws
from gpuscout.adapters.archive import Capture, ReplayTransport, load_captures
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

# GPU and accelerator sizes in the bundled spot feed with no alias row: AMD Radeon (g4ad),
# T4G (g5g), fractional L4 (g6f), RTX PRO 6000 with no per-size count (g7e), Inferentia,
# Trainium. Each is a reject with its reason, never an offer.
EXPECTED_UNKNOWN = frozenset({"g4ad.xlarge", "g5g.xlarge", "g6f.xlarge", "g7e.2xlarge",
                              "inf1.24xlarge", "inf2.xlarge", "trn1.32xlarge"})


class TestAwsInvariants(OfferInvariants):
    NAME = "aws"
    EXPECTED_UNKNOWN = frozenset()  # every offer's label resolves; the unknown ones are rejects

    @pytest.fixture(params=[ALL, (US_EAST_1,), (SPOT, ADVISOR)],
                    ids=["bundled chain", "us-east-1 csv", "spot feed"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return parsed(*request.param).offers


# -- the bundled chain ------------------------------------------------------------------------


def test_bundled_chain_counts_and_completeness() -> None:
    result = parsed(*ALL)
    on_demand = [o for o in result.offers if o.pricing_model is PricingModel.ON_DEMAND]
    spot = [o for o in result.offers if o.pricing_model is PricingModel.SPOT]
    assert (len(on_demand), len(spot), len(result.rejects)) == (1, 33, 7)
    assert result.complete is True
    assert {o.price_kind for o in on_demand} == {PriceKind.LISTED}
    assert {o.price_kind for o in spot} == {PriceKind.OBSERVED}
    assert {o.region for o in spot} == {"af-south-1", "us-east-1", "us-west-2"}


def test_without_the_region_file_or_the_spot_feed_the_refresh_is_incomplete() -> None:
    assert parsed(OFFER_INDEX, REGION_INDEX, SPOT, ADVISOR).complete is False
    assert parsed(OFFER_INDEX, REGION_INDEX, US_EAST_1, ADVISOR).complete is False
    # The full index lists 101 regions: one region file is not the whole price list.
    full = load_capture(FIX, FULL_REGION_INDEX)
    assert aws.parse([full, *caps(US_EAST_1, SPOT, ADVISOR)]).complete is False


# -- the real global CSV sample ---------------------------------------------------------------


# -- wrong shapes ------------------------------------------------------------------------------


def test_index_shapes_are_checked() -> None:
    with pytest.raises(ParseError) as err:
        aws.parse([mutated(REGION_INDEX, '"regions" :', '"areas" :')])
    assert err.value.field == "regions"
    with pytest.raises(ParseError) as err:
        aws.fetch(_FixedClient(mutated(OFFER_INDEX, '"AmazonEC2" :', '"AmazonEC2x" :')), {})
    assert err.value.field == "offers.AmazonEC2.currentRegionIndexUrl"


def test_a_capture_of_no_known_kind_is_a_parse_error() -> None:
    capture = load_capture(SNAP, SPOT).model_copy(update={"url": "https://example.test/x"})
    with pytest.raises(ParseError, match="no known kind"):
        aws.parse([capture])


class _FixedClient:
    """Stands in for HttpClient where only the first response matters."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture

    def get(self, url: str) -> Capture:
        return self.capture


# -- labels, data tables -----------------------------------------------------------------------


def _raw_gpu_labels() -> set[str]:
    labels = set()
    for folder, name in ((SNAP, SPOT), (FIX, SHARED_SPOT)):
        doc = json.loads((folder / name).read_bytes())
        labels |= {s["size"] for r in doc["config"]["regions"] for g in r["instanceTypes"]
                   if "gpu" in g["type"].lower() for s in g["sizes"]}
    for folder, name in ((SNAP, US_EAST_1), (FIX, SAMPLE)):
        lines = (folder / name).read_text().splitlines()
        header = next(csv.reader([lines[5]]))
        labels |= {row["Instance Type"] for row in csv.DictReader(lines[6:], fieldnames=header)
                   if row["Instance Family"] == "GPU instance"}
    return labels


def test_every_raw_gpu_label_resolves_or_is_known_unknown() -> None:
    catalog = load_catalog()
    expected = {  # the GPU sizes of the snapshots and fixtures -> canonical GPU
        "g4dn.12xlarge": "t4-16gb", "g4dn.16xlarge": "t4-16gb", "g4dn.2xlarge": "t4-16gb",
        "g4dn.4xlarge": "t4-16gb", "g4dn.8xlarge": "t4-16gb", "g4dn.metal": "t4-16gb",
        "g4dn.xlarge": "t4-16gb", "g5.48xlarge": "a10g-24gb", "g5.xlarge": "a10g-24gb",
        "g6.12xlarge": "l4-24gb", "g6e.xlarge": "l40s-48gb", "gr6.4xlarge": "l4-24gb",
        "p3.2xlarge": "v100-sxm2-16gb", "p4d.24xlarge": "a100-sxm-40gb",
        "p4de.24xlarge": "a100-sxm-80gb", "p5.48xlarge": "h100-sxm-80gb",
        "p5.4xlarge": "h100-sxm-80gb", "p5e.48xlarge": "h200-sxm-141gb",
        "p5en.48xlarge": "h200-sxm-141gb", "p6-b200.48xlarge": "b200-sxm-180gb",
        "p6-b300.48xlarge": "b300-sxm-288gb",
    }
    resolved, unknown = {}, set()
    for label in _raw_gpu_labels():
        res = catalog.resolve("aws", label)
        if isinstance(res, Resolved):
            resolved[label] = res.gpu_id
        else:
            unknown.add(label)
    assert resolved == expected
    assert unknown == EXPECTED_UNKNOWN


# -- fetch -------------------------------------------------------------------------------------


def test_offline_fetch_replays_the_bundled_chain() -> None:
    with HttpClient(aws.NAME, transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = aws.fetch(client, {})
        assert client.requests_made == 5
    assert [c.url for c in captures] == [
        "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/index.json",
        "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/"
        "region_index.json",
        "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/20250523232744/"
        "us-east-1/index.csv",
        SPOT_URL,
        "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json",
    ]
    region_file = captures[2]
    assert region_file.body_path == SNAP / US_EAST_1  # streamed, read in place, not copied
    assert region_file.body == b""
    assert aws.parse(captures) == aws.parse(load_captures(SNAPSHOTS_DIR, aws.NAME))


class _MissingRegionFile(httpx.BaseTransport):
    """The bundled replay, except that the region file answers 404."""

    def __init__(self) -> None:
        self.replay = ReplayTransport(SNAPSHOTS_DIR)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/index.csv"):
            return httpx.Response(404, request=request)
        return self.replay.handle_request(request)


def test_a_region_that_cannot_be_read_is_skipped_and_the_refresh_incomplete(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.aws"), \
            HttpClient(aws.NAME, transport=_MissingRegionFile()) as client:
        captures = aws.fetch(client, {})
    assert len(captures) == 4
    assert "region us-east-1 not read" in caplog.text
    result = aws.parse(captures)
    assert result.complete is False
    assert {o.pricing_model for o in result.offers} == {PricingModel.SPOT}


