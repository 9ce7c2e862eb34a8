from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest

from gpuscout.core.errors import DataError
from gpuscout.pipeline.profiles import (
    COLUMNS,
    FACTS,
    PROFILES_CSV,
    PROVIDERS,
    ProviderProfile,
    load_profiles,
    parse_profiles,
    profiles_table,
    read_profiles,
)

# Providers for which no source stating the billing granularity was found when the file was
# researched (2026-12-02). Unknown stays unknown; when a source turns up, add the row and drop
# the provider from this set (the test below insists the set is exact).
NO_BILLING_SOURCE = {"crusoe", "cudo", "datacrunch", "fluidstack", "paperspace",
                     "tensordock"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with PROFILES_CSV.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_header_and_every_row_is_sourced_and_dated(rows) -> None:
    with PROFILES_CSV.open(newline="", encoding="utf-8") as f:
        assert next(csv.reader(f)) == COLUMNS
    assert rows
    for r in rows:
        assert r["source_url"].startswith(("http://", "https://")), r
        assert date.fromisoformat(r["verified_at"]) >= date(2000, 1, 1), r


def test_no_fact_is_given_twice(rows) -> None:
    keys = [(r["provider"], r["fact"]) for r in rows]
    assert len(keys) == len(set(keys))


def test_values_parse_to_their_types() -> None:
    profiles = load_profiles()
    assert set(profiles) == set(PROVIDERS)
    for p in profiles.values():
        for fact in p.sources:
            value = getattr(p, fact)
            assert value is not None
            assert isinstance(value, int | float | bool | str)
        assert set(p.sources) == set(p.verified)


def test_every_provider_has_a_billing_increment_or_is_a_known_gap() -> None:
    profiles = load_profiles()
    missing = {p for p, prof in profiles.items() if prof.billing_increment_s is None}
    assert missing == NO_BILLING_SOURCE


@pytest.mark.parametrize(("provider", "fact", "value"), [
    ("aws", "billing_increment_s", 1),
    ("aws", "min_charge_s", 60),
    ("aws", "spot_notice_s", 120),
    ("azure", "multinode_fabric", "InfiniBand"),
    ("gcp", "spot_notice_s", 30),
    ("azure", "spot_notice_s", 30),
    ("runpod", "spot_notice_s", 5),
    ("runpod", "spot_pricing", "bid"),
    ("runpod", "storage_usd_per_gb_month", 0.07),
    ("lambda", "billing_increment_s", 60),
    ("lambda", "egress_usd_per_gb", 0.0),
    ("vultr", "billing_increment_s", 3600),
    ("vultr", "min_charge_s", 3600),
    ("coreweave", "min_charge_s", 0),
])
def test_pinned_facts(provider, fact, value) -> None:
    profile = load_profiles()[provider]
    assert getattr(profile, fact) == value
    assert profile.sources[fact].startswith("https://")


def test_aws_fabric_is_per_instance_type_not_per_provider() -> None:
    # EFA bandwidth differs by instance type (3200 Gb/s on p5, 400 on g6e.48xlarge, 100 on
    # g5.48xlarge): a provider-wide value would put every 8-GPU AWS machine on 3200 Gb/s. The
    # sourced per-type values are in adapters/aws_network.csv.
    aws = load_profiles()["aws"]
    assert (aws.multinode_fabric, aws.multinode_gbps) == (None, None)


def test_unknown_stays_none() -> None:
    profiles = load_profiles()
    assert profiles["datacrunch"] == ProviderProfile(provider="datacrunch")
    assert profiles["datacrunch"].last_verified is None
    # AWS egress was not found in a source: no default of "free" or "$0.09" creeps in.
    assert profiles["aws"].egress_usd_per_gb is None
    assert "egress_usd_per_gb" not in profiles["aws"].sources


def test_billed_seconds_rounds_up_and_applies_the_minimum() -> None:
    profiles = load_profiles()
    assert profiles["aws"].billed_seconds(30) == 60
    assert profiles["aws"].billed_seconds(61.2) == 62
    assert profiles["lambda"].billed_seconds(61) == 120
    assert profiles["vultr"].billed_seconds(1) == 3600
    assert profiles["crusoe"].billed_seconds(100) is None  # unknown increment, no guess


def test_arrow_table_has_one_row_per_provider() -> None:
    table = profiles_table()
    assert table.num_rows == len(PROVIDERS)
    assert sorted(table.column("provider").to_pylist()) == sorted(PROVIDERS)
    assert table.column_names == ["provider", *FACTS, "last_verified"]
    assert table.schema.field("billing_increment_s").type == pa.int64()
    assert table.schema.field("spot_available").type == pa.bool_()
    assert table.schema.field("last_verified").type == pa.date32()
    by_provider = {r["provider"]: r for r in table.to_pylist()}
    assert by_provider["aws"]["spot_notice_s"] == 120
    assert by_provider["datacrunch"]["billing_increment_s"] is None
    assert by_provider["vultr"]["last_verified"] == date(2025, 9, 15)


GOOD = {"provider": "aws", "fact": "spot_notice_s", "value": "120", "unit": "s",
        "source_url": "https://example.com/spot", "verified_at": "2026-01-02", "notes": ""}


@pytest.mark.parametrize(("change", "message"), [
    ({"fact": "spot_notice_minutes"}, "unknown fact"),
    ({"provider": "aws-gov"}, "unknown provider"),
    ({"value": "two minutes"}, "non-negative integer"),
    ({"unit": "min"}, "must have unit"),
    ({"source_url": "docs.aws.amazon.com"}, r"http\(s\) URL"),
    ({"source_url": ""}, r"http\(s\) URL"),
    ({"verified_at": "02/01/2026"}, "not an ISO date"),
    ({"fact": "ssh", "unit": "", "value": "true"}, "yes or no"),
    ({"fact": "spot_pricing", "unit": "", "value": "auction"}, "one of"),
    ({"fact": "multinode_fabric", "unit": "", "value": "NVLink"}, "one of"),
    ({"fact": "egress_usd_per_gb", "unit": "USD/GB", "value": "-0.01"}, "non-negative"),
    ({"fact": "billing_increment_s", "value": "0"}, "use 1 for per-second"),
])
def test_malformed_row_is_a_clear_error(change, message) -> None:
    with pytest.raises(DataError, match=message) as err:
        parse_profiles([{**GOOD, **change}])
    assert "provider_profiles.csv:2" in str(err.value)


def test_duplicate_fact_is_an_error() -> None:
    with pytest.raises(DataError, match="given twice"):
        parse_profiles([GOOD, GOOD])


def test_wrong_header_and_ragged_row_are_errors(tmp_path: Path) -> None:
    bad_header = tmp_path / "h.csv"
    bad_header.write_text("provider,fact,value,source_url,verified_at,notes\n")
    with pytest.raises(DataError, match="header"):
        read_profiles(bad_header)
    ragged = tmp_path / "r.csv"
    ragged.write_text(",".join(COLUMNS) + "\naws,ssh,yes,,https://x.example,2026-01-01\n")
    with pytest.raises(DataError, match="r.csv:2: wrong number of columns"):
        read_profiles(ragged)
