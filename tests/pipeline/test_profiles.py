from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.core.models import PricingModel
from gpuscout.pipeline.profiles import (
    COLUMNS,
    FACTS,
    PROFILES_CSV,
    PROVIDERS,
    ProviderProfile,
    Requirement,
    dearest,
    load_profiles,
    parse_profiles,
    parse_requirements,
    profiles_table,
    read_profiles,
)

# Providers for which no source stating the billing granularity has been found (researched
# 2026-12-02 and 2026-12-05). Unknown stays unknown; when a source turns up, add the row and drop
# the provider from this set (the test below insists the set is exact).
NO_BILLING_SOURCE = {
    "crusoe", "fluidstack", "gmicloud", "gpuai", "hotaisle", "hyperbolic", "lium",
    "primeintellect", "seeweb", "sesterce", "tensorpool", "together",
}


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
            if fact in p.varies:  # documented as set per offer: no single value
                assert value is None
                continue
            assert value is not None
            assert isinstance(value, int | float | bool | str)
        assert set(p.sources) == set(p.verified)


def test_every_provider_has_a_billing_increment_or_is_a_known_gap() -> None:
    profiles = load_profiles()
    missing = {p for p, prof in profiles.items() if prof.state("billing_increment_s") == "unknown"}
    assert missing == NO_BILLING_SOURCE


def test_every_registered_adapter_has_a_profile() -> None:
    from gpuscout.adapters.registry import PROVIDERS as REGISTERED

    assert set(REGISTERED) <= set(PROVIDERS)


@pytest.mark.parametrize(("provider", "fact", "value"), [
    ("aws", "billing_increment_s", 1),
    ("ibmcloud", "billing_increment_s", 1),
    ("ibmcloud", "min_charge_s", 0),
    ("deepinfra", "billing_increment_s", 60),
    ("oci", "egress_usd_per_gb", 0.0085),
    ("oci", "egress_free_gb_month", 10240),
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
    for p in profiles.values():  # a fact without a row is None, never a default
        for fact in FACTS:
            if fact not in p.sources:
                assert getattr(p, fact) is None and p.state(fact) == "unknown", (p.provider, fact)
    empty = [p for p in profiles.values() if not p.sources]
    assert all(p == ProviderProfile(provider=p.provider) for p in empty)
    assert all(p.last_verified is None for p in empty)


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
    assert by_provider[min(NO_BILLING_SOURCE)]["billing_increment_s"] is None
    for name, profile in load_profiles().items():  # the newest date any of its facts was read
        assert by_provider[name]["last_verified"] == max(profile.verified.values(), default=None)
    assert by_provider["ibmcloud"]["last_verified"] == date(2026, 8, 14)


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


def _row(fact: str, value: str, unit: str = "", provider: str = "aws") -> dict[str, str]:
    return {"provider": provider, "fact": fact, "value": value, "unit": unit,
            "source_url": "https://example.com/doc", "verified_at": "2026-11-30",
            "notes": "a sentence"}


def test_varies_is_documented_not_unknown() -> None:
    profile = parse_profiles([_row("storage_usd_per_gb_month", "varies", "USD/GB-month"),
                              _row("ssh", "varies")])["aws"]
    assert profile.storage_usd_per_gb_month is None  # no number to count with
    assert profile.state("storage_usd_per_gb_month") == "varies"
    assert profile.state("egress_usd_per_gb") == "unknown"
    rate = profile.storage_rate()
    assert (rate.state, rate.value, rate.source_url) == ("varies", None, "https://example.com/doc")
    assert profile.has("ssh") == "unknown"  # not promised for every offer
    # still checked: the unit, and that a fact is not given twice
    with pytest.raises(DataError, match="must have unit"):
        parse_profiles([_row("egress_usd_per_gb", "varies", "USD/GiB")])
    with pytest.raises(DataError, match="given twice"):
        parse_profiles([_row("ssh", "varies"), _row("ssh", "yes")])


@pytest.mark.parametrize(("fact", "value", "unit", "parsed"), [
    ("storage_kinds", "shared_fs, block", "", "block,shared_fs"),  # canonical order
    ("spot_max_runtime_s", "none", "s", 0),  # documented as unlimited
    ("spot_max_runtime_s", "86400", "s", 86400),
    ("ingress_usd_per_gb", "0", "USD/GB", 0.0),
    ("commitment_discounts", "yes", "", True),
])
def test_new_facts_parse(fact, value, unit, parsed) -> None:
    assert getattr(parse_profiles([_row(fact, value, unit)])["aws"], fact) == parsed


@pytest.mark.parametrize(("fact", "value", "unit", "message"), [
    ("storage_kinds", "nfs", "", "comma-separated list"),
    ("spot_max_runtime_s", "0", "s", "write none"),  # 0 would read as unlimited: say none
    ("object_storage_usd_per_gb_month", "0.02", "USD/GB", "must have unit"),
])
def test_new_facts_reject_bad_values(fact, value, unit, message) -> None:
    with pytest.raises(DataError, match=message):
        parse_profiles([_row(fact, value, unit)])


def test_accessors_carry_value_and_source() -> None:
    profile = parse_profiles([
        _row("storage_usd_per_gb_month", "0.07", "USD/GB-month"),
        _row("egress_usd_per_gb", "0.09", "USD/GB"),
        _row("egress_free_gb_month", "100", "GB/month"),
    ])["aws"]
    storage, egress, free = (profile.storage_rate(), profile.egress_rate(),
                             profile.egress_free_allowance())
    assert (storage.state, storage.value, storage.fact) == ("known", 0.07,
                                                            "storage_usd_per_gb_month")
    assert (egress.value, free.value) == (0.09, 100.0)
    assert storage.verified_at == date(2026, 11, 30) and storage.note == "a sentence"
    unknown = parse_profiles([])["aws"].egress_rate()
    assert (unknown.state, unknown.value, unknown.source_url) == ("unknown", None, None)


def test_billing_per_offer_kind() -> None:
    profile = parse_profiles([
        _row("billing_increment_s", "60", "s"), _row("min_charge_s", "600", "s"),
        _row("spot_billing_increment_s", "1", "s"),
    ])["aws"]
    on_demand = profile.billing(PricingModel.ON_DEMAND)
    spot = profile.billing("spot")
    assert (on_demand.increment_s.value, on_demand.min_charge_s.value) == (60, 600)
    # spot has its own increment; its minimum is the general one (no spot row)
    assert (spot.increment_s.value, spot.min_charge_s.value) == (1, 600)
    assert spot.increment_s.fact == "billing_increment_s" and spot.kind is PricingModel.SPOT
    assert profile.billing(PricingModel.RESERVED).increment_s.value == 60
    assert parse_profiles([])["aws"].billing().increment_s.state == "unknown"


@pytest.mark.parametrize(("rows", "requirement", "answer"), [
    ([_row("billing_increment_s", "1", "s")], "per-second-billing", "yes"),
    ([_row("billing_increment_s", "60", "s")], "per-second-billing", "no"),
    ([_row("billing_increment_s", "varies", "s")], "per-second-billing", "unknown"),
    ([], "per-second-billing", "unknown"),
    # a spot-only per-second increment does not make on-demand per-second
    ([_row("billing_increment_s", "3600", "s"), _row("spot_billing_increment_s", "1", "s")],
     "per-second-billing", "no"),
    ([_row("ssh", "yes")], "ssh", "yes"),
    ([_row("docker_images", "no")], Requirement.DOCKER, "no"),
    ([], "jupyter", "unknown"),
    ([_row("persistent_storage", "yes")], "persistent-storage", "yes"),
])
def test_has_answers_yes_no_unknown(rows, requirement, answer) -> None:
    assert parse_profiles(rows)["aws"].has(requirement) == answer


def test_parse_requirements() -> None:
    assert parse_requirements("docker, per-second-billing,docker") == (
        Requirement.DOCKER, Requirement.PER_SECOND_BILLING)
    assert parse_requirements("") == ()
    with pytest.raises(UserInputError, match="unknown requirement 'gpu'.*known: ssh"):
        parse_requirements("ssh,gpu")


def test_new_columns_load_into_the_warehouse(tmp_path: Path) -> None:
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.load import replace_provider_profiles

    table = profiles_table(parse_profiles([_row("commitment_discounts", "yes"),
                                           _row("storage_kinds", "block,object"),
                                           _row("egress_usd_per_gb", "varies", "USD/GB")]))
    with connect(tmp_path / "w.duckdb") as con:
        replace_provider_profiles(con, table)
        got = con.execute("SELECT commitment_discounts, storage_kinds, egress_usd_per_gb "
                          "FROM providers WHERE provider = 'aws'").fetchall()
    assert got == [(True, "block,object", None)]  # varies reaches SQL as NULL


def test_dearest_rate_is_the_highest_sourced_one_with_its_provider() -> None:
    profiles = parse_profiles([
        _row("storage_usd_per_gb_month", "0.08", "USD/GB-month"),
        _row("storage_usd_per_gb_month", "0.2", "USD/GB-month", provider="lambda"),
        _row("storage_usd_per_gb_month", "varies", "USD/GB-month", provider="vastai")])
    top = dearest("storage_usd_per_gb_month", profiles)
    assert top is not None
    assert (top.value, top.provider, top.source_url) == (0.2, "lambda", "https://example.com/doc")
    assert dearest("egress_usd_per_gb", profiles) is None  # nobody's egress is sourced
    with pytest.raises(KeyError):
        dearest("ssh", profiles)
