"""adapters/aws_advisor.py: Spot Advisor's interruption bands, which only annotate spot offers."""

from __future__ import annotations

import pytest
from aws_captures import (
    ADVISOR,
    OFFER_INDEX,
    REGION_INDEX,
    SPOT,
    US_EAST_1,
    caps,
    mutated,
    parsed,
)

from gpuscout.adapters import aws, aws_advisor
from gpuscout.core.errors import ParseError


def test_without_spot_advisor_the_offers_stay_and_carry_no_band() -> None:
    result = parsed(OFFER_INDEX, REGION_INDEX, US_EAST_1, SPOT)
    assert result.complete is True  # the advisor annotates; no offer depends on it
    assert len(result.offers) == 34
    assert {o.provider_data.get("interruption_band") for o in result.offers} == {None}


def test_a_renamed_advisor_field_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        aws.parse([*caps(SPOT), mutated(ADVISOR, '"ranges":', '"bands":')])
    assert err.value.field == "ranges"


def test_bands_and_per_region_advice_of_the_bundled_file() -> None:
    (capture,) = caps(ADVISOR)
    advisor = aws_advisor.read_advisor(capture)
    assert advisor.bands == {0: "<5%", 1: "5-10%", 2: "10-15%", 3: "15-20%", 4: ">20%"}
    assert len(advisor.by_region) == 33
    # savings % and band index per Linux instance type, as the file gives them
    assert advisor.by_region["us-east-1"]["p5.48xlarge"] == {"s": 52, "r": 4}
    assert advisor.by_region["us-west-2"]["p5.48xlarge"] == {"s": 46, "r": 1}


def test_ranges_of_another_shape_are_a_parse_error() -> None:
    capture = mutated(ADVISOR, '"label":', '"name":')
    with pytest.raises(ParseError, match="unknown shape") as err:
        aws_advisor.read_advisor(capture)
    assert err.value.field == "ranges"

