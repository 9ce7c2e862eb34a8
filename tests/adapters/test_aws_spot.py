"""adapters/aws_spot.py: the spot price feed, on the bundled three-region subset."""

from __future__ import annotations

import pytest
from aws_captures import (
    ALL,
    SNAP,
    SPOT,
    SPOT_SEEN,
    SPOT_URL,
    by_key,
    mutated,
    parsed,
)
from invariants import load_capture

from gpuscout.adapters import aws
from gpuscout.core.errors import ParseError
from gpuscout.core.models import NetworkFabric, PriceKind, PricingModel


def test_spot_prices_with_their_interruption_signal() -> None:
    offers = by_key(parsed(*ALL))
    expected = {  # key -> (price, GPUs, band, savings %)
        "us-east-1|p5.48xlarge|spot": (19.4933, 8, ">20%", 52),
        "us-west-2|p5.48xlarge|spot": (19.9678, 8, "5-10%", 46),
        "us-east-1|p5.4xlarge|spot": (2.6295, 1, None, None),  # not in the 2025-06 advisor
        "us-west-2|p5.4xlarge|spot": (2.6295, 1, None, None),
        "us-east-1|p5en.48xlarge|spot": (27.0749, 8, "<5%", 64),
        "us-west-2|p5e.48xlarge|spot": (24.8776, 8, None, None),
        "us-east-1|p4d.24xlarge|spot": (14.2313, 8, "10-15%", 67),
        "us-west-2|p6-b300.48xlarge|spot": (51.4782, 8, None, None),
        "us-east-1|g4dn.xlarge|spot": (0.3196, 1, "15-20%", 64),
        "af-south-1|g4dn.12xlarge|spot": (0.9625, 4, "<5%", 87),
        "af-south-1|g4dn.metal|spot": (10.381, 8, "<5%", 83),
    }
    got = {k: (offers[k].price_per_hour, offers[k].gpu_count,
               offers[k].provider_data["interruption_band"],
               offers[k].provider_data["savings_pct"]) for k in expected}
    assert got == expected
    p5 = offers["us-east-1|p5.48xlarge|spot"]
    assert (p5.region, p5.pricing_model, p5.price_kind, p5.currency) == (
        "us-east-1", PricingModel.SPOT, PriceKind.OBSERVED, "USD")
    assert (p5.network, p5.network_gbps) == (NetworkFabric.EFA, 3200.0)
    assert (p5.source_url, p5.observed_at) == (SPOT_URL, SPOT_SEEN)
    # The spot offer borrows the machine's specs only where the price list described it.
    assert offers["us-east-1|p4d.24xlarge|spot"].vcpus == 96.0
    assert p5.vcpus is None


def test_spot_rejects_and_their_reasons() -> None:
    rejects = {r.offer_key: r.reason for r in parsed(*ALL).rejects}
    assert rejects == {
        f"{region}|{t}|spot": f"{t}: no alias row, so no GPU model or count"
        for region, t in [("af-south-1", "inf1.24xlarge"), ("us-east-1", "g4ad.xlarge"),
                          ("us-east-1", "g5g.xlarge"), ("us-east-1", "g6f.xlarge"),
                          ("us-east-1", "g7e.2xlarge"), ("us-east-1", "inf2.xlarge"),
                          ("us-east-1", "trn1.32xlarge")]
    }


def test_sizes_the_feed_lists_twice_at_one_price_are_one_offer() -> None:
    keys = [o.offer_key for o in parsed(SPOT).offers]
    assert keys.count("us-east-1|g6.12xlarge|spot") == 1
    assert keys.count("us-west-2|p4de.24xlarge|spot") == 1


def test_a_size_listed_twice_at_two_prices_is_rejected_whole() -> None:
    spot = mutated(SPOT, '{"size":"g6.12xlarge","valueColumns":[{"name":"linux","prices":'
                          '{"USD":"2.846"}}', '{"size":"g6.12xlarge","valueColumns":[{"name":'
                          '"linux","prices":{"USD":"2.999"}}')
    # replace() changed both duplicates; put the first back to make them disagree
    body = spot.body.replace(b'"USD":"2.999"', b'"USD":"2.846"', 1)
    result = aws.parse([spot.model_copy(update={"body": body})])
    assert "us-east-1|g6.12xlarge|spot" not in by_key(result)
    reasons = [r.reason for r in result.rejects if r.offer_key == "us-east-1|g6.12xlarge|spot"]
    assert reasons == ["the source gives this offer two different prices"] * 2


def test_a_size_without_a_linux_spot_price_is_rejected() -> None:
    spot = mutated(SPOT, '{"size":"p3.2xlarge","valueColumns":[{"name":"linux","prices":'
                          '{"USD":"0.5509"}}', '{"size":"p3.2xlarge","valueColumns":[{"name":'
                          '"linux","prices":{"USD":"N/A*"}}')
    rejects = {r.offer_key: r.reason for r in aws.parse([spot]).rejects}
    assert rejects["us-east-1|p3.2xlarge|spot"] == "no Linux spot price ('N/A*')"


def test_a_spot_feed_that_is_not_json_is_a_parse_error() -> None:
    capture = load_capture(SNAP, SPOT).model_copy(update={"body": b"<html>Access Denied</html>"})
    with pytest.raises(ParseError, match="not JSON"):
        aws.parse([capture])


def test_a_renamed_spot_feed_field_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        aws.parse([mutated(SPOT, '"regions":', '"regionList":')])
    assert err.value.field == "config.regions"
    with pytest.raises(ParseError) as err:
        aws.parse([mutated(SPOT, '"size":', '"instanceType":')])
    assert err.value.field == "size"
