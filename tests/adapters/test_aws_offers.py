"""adapters/aws_offers.py: the per-region CSV offer files (on-demand), read by the block scan
and by the text-line loop, on the bundled us-east-1 file and the real global CSV sample."""

from __future__ import annotations

import csv
import json
import os
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_captures import (
    ALL,
    FIX,
    P4D_JSON,
    SAMPLE,
    SNAP,
    US_EAST_1,
    by_key,
    caps,
    mutated,
    parsed,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from invariants import load_capture

from gpuscout.adapters import aws, aws_offers
from gpuscout.adapters.archive import Capture
from gpuscout.core.catalog import Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import NetworkFabric, PriceKind, PricingModel

# -- the offer-file rules -----------------------------------------------------------------------


def test_p4d_on_demand_offer_in_full() -> None:
    offer = by_key(parsed(*ALL))["us-east-1|p4d.24xlarge|on_demand"]
    assert offer.model_dump() == {
        "provider": "aws", "offer_key": "us-east-1|p4d.24xlarge|on_demand",
        "instance_type": "p4d.24xlarge", "gpu_label": "p4d.24xlarge", "gpu_count": 8.0,
        "vram_gb_per_gpu": None,  # the price list says "NA"; the catalog knows 40 GB
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 32.7726, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": "us-east-1", "zone": None, "vcpus": 96.0,
        "ram_gb": 1237.0,  # 1152 GiB
        "disk_gb": 8000.0,  # 8 x 1000 SSD
        "interconnect": None, "interconnect_gbps": None,
        "network": NetworkFabric.EFA, "network_gbps": 400.0, "billing_increment_s": None,
        "availability": "unknown", "available_count": None,
        "source_url": "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/"
                      "20250523232744/us-east-1/index.csv",
        "observed_at": datetime(2024, 5, 28, 20, 35, 22, tzinfo=UTC),
        "provider_data": {
            "sku": "H7NGEAC6UEHNTKSJ", "rate_code": "H7NGEAC6UEHNTKSJ.JRTCKXETXF.6YS6EN2CT7",
            "effective_date": "2024-05-01", "location": "US East (N. Virginia)",
            "network_performance": "400 Gigabit", "memory": "1152 GiB",
            "storage": "8 x 1000 SSD", "offer_version": "20250912225308",
            "publication_date": "2025-09-12T22:53:08Z",
        },
    }


def test_capacity_block_and_rhel_rows_are_filtered_not_rejected() -> None:
    result = parsed(US_EAST_1)
    assert [o.offer_key for o in result.offers] == ["us-east-1|p4d.24xlarge|on_demand"]
    assert result.rejects == []
    assert result.complete is False  # no region index, no spot feed: nothing proves the whole


def test_global_csv_sample_has_no_kept_row() -> None:
    # 44 real rows: reserved terms, Windows/RHEL/SUSE, dedicated hosts, capacity reservations.
    # The one GPU row (g5.48xlarge) is Dedicated, SUSE and UnusedCapacityReservation.
    result = aws.parse(caps(SAMPLE, folder=FIX))
    assert (result.offers, result.rejects) == ([], [])


G5_ROW_FILTER_FIELDS = ('"Dedicated",,"SUSE"', '"Shared",,"Linux"')


G5_CAPACITY = ('"APS2-UnusedDed:g5.48xlarge","RunInstances:000g","NA",'
               '"UnusedCapacityReservation"',
               '"APS2-UnusedDed:g5.48xlarge","RunInstances:000g","NA","Used"')


def _g5_made_shared_linux(instance_type: str = "g5.48xlarge") -> Capture:
    """The sample's g5.48xlarge row moved through the filter (tenancy, OS, capacity status)."""
    capture = mutated(SAMPLE, *G5_ROW_FILTER_FIELDS, folder=FIX)
    body = capture.body.replace(G5_CAPACITY[0].encode(), G5_CAPACITY[1].encode())
    body = body.replace(b'"AWS Region","g5.48xlarge"',
                        f'"AWS Region","{instance_type}"'.encode())
    return capture.model_copy(update={"body": body})


def test_a_gpu_row_that_passes_the_filter_becomes_an_offer() -> None:
    result = aws.parse([_g5_made_shared_linux()])
    (offer,) = result.offers
    assert (offer.offer_key, offer.price_per_hour, offer.gpu_count, offer.vram_gb_per_gpu,
            offer.region, offer.vcpus, offer.ram_gb, offer.disk_gb) == (
        "ap-southeast-2|g5.48xlarge|on_demand", 21.30264, 8.0, 24.0,  # 192 GB over 8 GPUs
        "ap-southeast-2", 192.0, 824.6, 7600.0)  # 768 GiB; 2 x 3800 GB NVMe SSD
    assert offer.network is None  # "100 Gigabit", but no AWS document on EFA in the table


def test_a_gpu_instance_without_alias_keeps_aws_count_and_its_own_label() -> None:
    # The same row relabelled to a type the alias table lacks: AWS's own "GPU" column counts.
    (offer,) = aws.parse([_g5_made_shared_linux("g4ad.16xlarge")]).offers
    assert (offer.gpu_label, offer.gpu_count) == ("g4ad.16xlarge", 8.0)
    assert isinstance(load_catalog().resolve("aws", offer.gpu_label), Unknown)


def test_a_cpu_row_that_passes_the_filter_is_not_an_offer() -> None:
    # The sample's us-east-1 c5d.2xlarge row with RHEL made Linux and its software NA.
    capture = mutated(SAMPLE, '"Shared",,"RHEL"', '"Shared",,"Linux"', folder=FIX)
    body = capture.body.replace(b'"OnDemand","16",,"SQL Web"', b'"OnDemand","16",,"NA"')
    result = aws.parse([capture.model_copy(update={"body": body})])
    assert (result.offers, result.rejects) == ([], [])


def test_bundled_p4d_rows_carry_the_json_excerpt_values() -> None:
    doc = json.loads((FIX / P4D_JSON).read_bytes())
    lines = (SNAP / US_EAST_1).read_text().splitlines()
    header = next(csv.reader([lines[5]]))
    rows = [dict(zip(header, r, strict=True)) for r in csv.reader(lines[7:])]
    assert [r["SKU"] for r in rows] == list(doc["products"])
    for row in rows:
        attrs = doc["products"][row["SKU"]]["attributes"]
        assert (row["Instance Type"], row["Tenancy"], row["CapacityStatus"],
                row["MarketOption"], row["Region Code"], row["GPU"]) == (
            attrs["instanceType"], attrs["tenancy"], attrs["capacitystatus"],
            attrs["marketoption"], attrs["regionCode"], attrs["gpu"])
        (term,) = doc["terms"]["OnDemand"][row["SKU"]].values()
        (dim,) = term["priceDimensions"].values()
        assert (row["RateCode"], row["PricePerUnit"]) == (dim["rateCode"],
                                                          dim["pricePerUnit"]["USD"])


def test_a_renamed_csv_column_is_a_parse_error() -> None:
    capture = mutated(US_EAST_1, '"PricePerUnit"', '"Price Per Unit"')
    with pytest.raises(ParseError) as err:
        aws.parse([capture])
    assert err.value.field == "PricePerUnit"


def test_a_csv_without_header_is_a_parse_error() -> None:
    capture = load_capture(SNAP, US_EAST_1).model_copy(update={"body": b'{"products": {}}'})
    with pytest.raises(ParseError) as err:
        aws.parse([capture])
    assert err.value.field == "SKU"


def test_network_table_rows_are_sourced_efa_rows() -> None:
    with aws_offers.NETWORK_CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["instance_type"]: (r["network"], float(r["network_gbps"])) for r in rows} == {
        "p4d.24xlarge": ("EFA", 400.0), "p5.48xlarge": ("EFA", 3200.0),
        "p5e.48xlarge": ("EFA", 3200.0), "g6e.48xlarge": ("EFA", 400.0)}
    assert all(r["source"].startswith(("https://docs.aws.amazon.com/", "https://aws.amazon.com/"))
               for r in rows)


def test_line_needles_are_the_quoted_row_filter_values() -> None:
    assert set(aws_offers.LINE_NEEDLES) == {f'"{v}"' for v in aws_offers.ROW_FILTER.values()
                                            if v != "NA"}


# -- the block scan of an offer file vs the text-line loop -------------------------------------

P4D_ON_DEMAND = '"$32.7726 per On Demand Linux p4d.24xlarge Instance Hour"'
P4D_BLOCK = '"$0.00 per Capacity Block Linux p4d.24xlarge Instance Hour"'
C5D_RHEL = '"$0.634 per On Demand RHEL with SQL Web c5d.2xlarge Instance Hour"'
# Tiny blocks put rows across block edges; 1 << 40 is one block for any test file.
BLOCK_SIZES = (97, 700, 4096, 1 << 40)


def _offer_body() -> bytes:
    """The bundled us-east-1 file then the sample's data rows: a kept row, filtered ones."""
    snapshot = (SNAP / US_EAST_1).read_bytes()
    sample = (FIX / SAMPLE).read_bytes().split(b"\n", 6)[6]
    return snapshot + sample


def _region_capture(body: bytes) -> Capture:
    return load_capture(SNAP, US_EAST_1).model_copy(update={"body": body})


def _file_result(fn: Any, capture: Capture, **kw: int) -> tuple[Any, ...]:
    out, specs = aws_offers.Collector(), {}
    try:
        n = fn(capture, out, specs, **kw)
    except ParseError as exc:
        return ("ParseError", exc.field)
    return bool(n), out.offers(), out.rejects, specs


def _assert_scan_is_line_loop(body: bytes,
                              sizes: tuple[int, ...] = BLOCK_SIZES) -> tuple[Any, ...]:
    """Every block size, one process and two, gives the text-line loop's offers, rejects,
    specs and empty-file verdict (or the same parse error)."""
    capture = _region_capture(body)
    expected = _file_result(aws_offers.read_offer_lines, capture)
    for size in sizes:
        for parallel_from in (0, 1 << 62):
            got = _file_result(aws_offers.read_offer_file, capture, block_size=size,
                               parallel_from=parallel_from)
            assert got == expected, (size, parallel_from)
    return expected


def test_block_scan_reads_the_bundled_file_as_the_line_loop() -> None:
    has_data, offers, rejects, _ = _assert_scan_is_line_loop((SNAP / US_EAST_1).read_bytes())
    assert (has_data, [o.offer_key for o in offers], rejects) == (
        True, ["us-east-1|p4d.24xlarge|on_demand"], [])


def test_bundled_chain_parses_the_same_with_the_line_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = parsed(*ALL)
    monkeypatch.setattr(aws_offers, "read_offer_file", aws_offers.read_offer_lines)
    assert parsed(*ALL) == scanned


def test_block_scan_with_quoted_newlines_in_a_kept_and_a_skipped_row() -> None:
    body = _offer_body()
    # The kept row; a filtered row holding every needle (a Capacity Block); a RHEL row.
    for old, new in ((P4D_ON_DEMAND, '"$32.7726 per On Demand Linux p4d.24xlarge\nInstance"'),
                     (P4D_BLOCK, '"Capacity Block\n\nLinux"'),
                     (C5D_RHEL, '"$0.634 per On Demand RHEL,\n with SQL Web c5d.2xlarge\n"')):
        assert body.count(old.encode()) >= 1
        body = body.replace(old.encode(), new.encode())
    _, offers, rejects, _ = _assert_scan_is_line_loop(body)
    assert [o.offer_key for o in offers] == ["us-east-1|p4d.24xlarge|on_demand"]
    assert rejects == []


def test_block_scan_of_a_field_holding_only_a_newline_or_a_comma() -> None:
    # '"\n"' has a quote on each side of its newline, the shape of a record boundary.
    body = _offer_body().replace(P4D_BLOCK.encode(), b'"\n"').replace(
        P4D_ON_DEMAND.encode(), b'"$32.7726 per On Demand, Linux"')
    _, offers, _, _ = _assert_scan_is_line_loop(body)
    assert offers[0].offer_key == "us-east-1|p4d.24xlarge|on_demand"


def test_block_scan_of_crlf_lines_and_bare_cr() -> None:
    body = _offer_body().replace(b"\n", b"\r\n")
    _, offers, _, _ = _assert_scan_is_line_loop(body)
    assert [o.offer_key for o in offers] == ["us-east-1|p4d.24xlarge|on_demand"]
    _assert_scan_is_line_loop(body.replace(C5D_RHEL.encode(), b'"RHEL\rSQL"'))


@pytest.mark.parametrize("cut", [40, 900, 1500])
def test_block_scan_of_a_truncated_last_line(cut: int) -> None:
    # The kept row moved to the end and cut: inside a field (odd quotes), at a field edge...
    body = _offer_body()
    lines = body.split(b"\n")
    kept = next(line for line in lines if P4D_ON_DEMAND.encode() in line)
    rest = b"\n".join(line for line in lines if line != kept)
    _assert_scan_is_line_loop(rest + kept[:cut])
    _assert_scan_is_line_loop(rest + kept[:cut] + b'"')


def test_a_row_cut_after_every_needle_is_a_reject_in_both() -> None:
    body = _offer_body()
    kept = next(line for line in body.split(b"\n") if P4D_ON_DEMAND.encode() in line)
    cut = kept[:kept.rindex(b',"OnDemand"') + len(b',"OnDemand"')]
    _, offers, rejects, _ = _assert_scan_is_line_loop(body + cut)
    assert [r.reason for r in rejects] == ["row has 79 columns, the header 91"]
    assert len(offers) == 1


def test_block_scan_of_malformed_quotes_and_bytes() -> None:
    body = _offer_body()
    # A stray quote: an odd line the line loop joins with the next ones.
    _assert_scan_is_line_loop(body.replace(b'"RHEL"', b'"RH"EL"'))
    # An unquoted value, a quote inside a value, a NUL.
    _assert_scan_is_line_loop(body.replace(P4D_ON_DEMAND.encode(), b"per On Demand Linux"))
    _assert_scan_is_line_loop(body.replace(P4D_ON_DEMAND.encode(), b'"per ""Linux"" hour"'))
    _assert_scan_is_line_loop(body.replace(P4D_ON_DEMAND.encode(), b'"a\0b"'))
    # Bytes that are not UTF-8 in a skipped row: both fail.
    assert _assert_scan_is_line_loop(body.replace(b'"RHEL"', b'"RH\xffEL"'))[0] == "ParseError"
    _assert_scan_is_line_loop(body.replace(b'"RHEL"', "\"RHEL é\"".encode()))


def test_block_scan_of_a_file_with_only_blank_data_lines() -> None:
    head = b"\n".join((SNAP / US_EAST_1).read_bytes().split(b"\n")[:6]) + b"\n"
    for tail in (b"", b"\n", b"\r\n \n\t\n", "\u00a0\n".encode(), b"x\n"):
        _assert_scan_is_line_loop(head + tail)
    assert _file_result(aws_offers.read_offer_file, _region_capture(head + b" \n"))[0] is False


def test_block_scan_keeps_the_order_of_rejects_across_blocks_and_processes() -> None:
    # The kept row at 300 prices and cut short every 7th time: rejects in many blocks.
    body = _offer_body()
    head, _, rows = body.partition(b'"SKU"')
    header, _, rows = (b'"SKU"' + rows).partition(b"\n")
    lines = rows.split(b"\n")
    kept = next(line for line in lines if P4D_ON_DEMAND.encode() in line)
    others = b"\n".join(line for line in lines if line != kept)
    parts = [head + header + b"\n"]
    for i in range(300):
        row = kept.replace(b'"32.7726000000"', f'"{30 + i / 100:.10f}"'.encode())
        parts.append(others + (row[:-40] if i % 7 == 0 else row) + b"\n")
    _, offers, rejects, _ = _assert_scan_is_line_loop(b"".join(parts), (4096, 65536, 1 << 40))
    assert offers == []
    # 43 cut rows, then the 257 prices of one key (a key at two prices is rejected whole).
    assert [r.reason.split(",")[0] for r in rejects].count("row has 87 columns") == 43
    assert len(rejects) == 300
    assert [r.offer_key for r in rejects].count("us-east-1|p4d.24xlarge|on_demand") == 257
    assert rejects[0].offer_key is None  # the first row is cut: file order is kept


def test_an_unquoted_offer_file_is_read_by_the_line_loop() -> None:
    body = _offer_body()
    lines = body.split(b"\n")
    unquoted = b"\n".join(lines[:5] + [line.replace(b'"', b"") for line in lines[5:]])
    assert _file_result(aws_offers.read_offer_file, _region_capture(unquoted)) == _file_result(
        aws_offers.read_offer_lines, _region_capture(unquoted))


# -- many kept rows: the per-row shortcut and the plain-line reading --------------------------

# (instance type, Instance Family, GPU column): two with an alias row, one AWS counts itself,
# one with no count at all (a reject), one CPU machine (nothing).
KEPT_TYPES = (("p4d.24xlarge", "GPU instance", "8"), ("g5.xlarge", "GPU instance", "1"),
              ("g9z.8xlarge", "GPU instance", "4"), ("g9z.2xlarge", "GPU instance", ""),
              ("c9x.large", "Compute optimized", ""))
CONFLICTED = "us-west-2|g5.xlarge|on_demand"  # listed at two prices in turn


def _kept_rows_body(n: int) -> tuple[bytes, list[tuple[str, str, str, str, str]]]:
    """The offer body with n variants of its kept row spread between its other rows, and the
    (type, family, GPU, region, price) of each: repeats, a conflict, zero prices, a quoted
    comma (read by `csv`) and unquoted values."""
    body = _offer_body()
    lines = body.split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b'"SKU"'))
    col = {name: i for i, name in enumerate(next(csv.reader([lines[at].decode()])))}
    kept = next(csv.reader([next(line for line in lines
                                 if P4D_ON_DEMAND.encode() in line).decode()]))
    others = [line for line in lines[at + 1:] if line and P4D_ON_DEMAND.encode() not in line]
    parts, variants = lines[:at + 1], []
    for i in range(n):
        itype, family, gpus = KEPT_TYPES[i % len(KEPT_TYPES)]
        region = ("us-east-1", "us-west-2")[i // len(KEPT_TYPES) % 2]
        price = f"{len(itype)}.{len(region)}000000000"
        if f"{region}|{itype}|on_demand" == CONFLICTED and i % 3 == 0:
            price = "9.2500000000"
        if i % 13 == 0:
            price = "0.0000000000"
        fields = [v.replace("p4d.24xlarge", itype) for v in kept]
        fields[col["Instance Family"]], fields[col["GPU"]] = family, gpus
        fields[col["Region Code"]], fields[col["PricePerUnit"]] = region, price
        if i % 7 == 0:
            fields[col["PriceDescription"]] += ", billed by the second"
        line = ",".join(f'"{v}"' if v else "" for v in fields)
        if i % 5 == 0:  # a value left unquoted, as `csv` reads it too
            line = line.replace(f'"{fields[0]}"', fields[0], 1)
        parts += [line.encode(), *others[i % len(others):i % len(others) + 3]]
        variants.append((itype, family, gpus, region, price))
    return b"\n".join([*parts, *others, b""]), variants


def _expected(variants: list[tuple[str, str, str, str, str]]) -> tuple[dict[str, float],
                                                                       list[str]]:
    """Offers (key -> price) and reject reasons, from the rules alone."""
    aliased = {"p4d.24xlarge", "g5.xlarge"}
    sightings: dict[str, list[float]] = {}
    reasons: list[str] = []
    for itype, family, gpus, region, price in variants:
        if itype not in aliased and family != "GPU instance":
            continue
        if itype not in aliased and not gpus:
            reasons.append(f"GPU instance {itype} has no alias row and no GPU count")
        elif float(price) <= 0:
            reasons.append(f"no positive hourly price: {price!r}")
        else:
            key = f"{region}|{itype}|on_demand"
            seen = sightings.setdefault(key, [])
            seen.append(float(price))
            if len(set(seen)) > 1:  # the held offer and this row, then each row after
                reasons += ["the source gives this offer two different prices"] * (
                    2 if len(set(seen[:-1])) == 1 else 1)
    offers = {k: seen[0] for k, seen in sightings.items() if len(set(seen)) == 1}
    return offers, reasons


def test_block_scan_of_many_kept_rows_matches_the_rules_and_the_line_loop() -> None:
    body, variants = _kept_rows_body(400)
    _, offers, rejects, specs = _assert_scan_is_line_loop(body, (4096, 65536, 1 << 40))
    want_offers, want_reasons = _expected(variants)
    assert CONFLICTED not in want_offers and len(want_offers) == 5
    assert {o.offer_key: o.price_per_hour for o in offers} == want_offers
    assert sorted(r.reason for r in rejects) == sorted(want_reasons)
    assert set(specs) == {"p4d.24xlarge", "g5.xlarge", "g9z.8xlarge"}


def test_each_kept_row_is_read_in_full_when_its_key_is_new() -> None:
    # Every row its own key: nothing is held before, so no row ends at the shortcut.
    body, variants = _kept_rows_body(40)
    distinct = body
    for i, (itype, *_rest) in enumerate(variants):
        distinct = distinct.replace(f'"{itype}"'.encode(), f'"{itype}-{i}"'.encode(), 1)
    _assert_scan_is_line_loop(distinct, (4096, 1 << 40))


def test_blocks_of_a_helper_that_dies_are_read_by_the_parent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sent = 0
    send = aws_offers._send

    def send_once(fd: int, message: Any) -> None:  # in the helper: one block, then gone
        nonlocal sent
        sent += 1
        if sent > 1:
            os._exit(1)
        send(fd, message)

    monkeypatch.setattr(aws_offers, "_send", send_once)
    body, _ = _kept_rows_body(200)
    _assert_scan_is_line_loop(body, (4096, 65536))

FIELD = st.text(alphabet='a",\r\0 \u00e9', max_size=4)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.lists(FIELD | st.sampled_from(['"a"', '""', '"a b"']), min_size=1, max_size=8))
def test_a_plain_line_is_read_as_csv_reads_it(fields: list[str]) -> None:
    line = ",".join(fields)
    assume(line)  # a candidate line holds the needles
    row = aws_offers._plain_row(line.encode())
    if all(f == "" or (len(f) > 1 and f[0] == f[-1] == '"' and not set(f[1:-1]) & set('",\r\0'))
           for f in fields):
        assert row is not None  # every field empty or one quoted value: always plain
    if row is not None:
        assert [row] == list(csv.reader([line]))
