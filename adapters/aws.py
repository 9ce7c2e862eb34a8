"""AWS EC2: on-demand list prices from the public bulk price list, spot prices from the spot price
feed, and interruption bands from Spot Advisor. No credentials.

fetch() follows the price list's own index chain: offer index -> EC2 region index -> one CSV offer
file per region. Those files run from MBs to GBs (us-east-1), so each is streamed to disk with
`HttpClient.download` and parse() reads it line by line with `csv`, in constant memory. It keeps
a row only when it is a Linux, shared-tenancy, on-demand hourly price of a GPU instance (the
filter is `ROW_FILTER`); everything else in the file - Windows, dedicated hosts, reserved terms,
capacity blocks and reservations, storage, CPU machines - is skipped.

GPU model and count come from the alias table (`pipeline/data/gpu_aliases.csv`, provider `aws`,
one row per instance type); a row AWS itself files under Instance Family "GPU instance" but the
table does not know keeps its label (reported unknown downstream) with AWS's own "GPU" count.
Spot prices are market quotes (`price_kind` observed); Spot Advisor adds the interruption band
and the savings it reports (`provider_data`). The multi-node network is EFA only where an AWS
document says so (`adapters/aws_network.csv`, a source per row).
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    OneOfferPerKey,
    json_body,
    member,
    parse_error,
    positive_decimal,
)
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import (
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    Reject,
)

logger = logging.getLogger(__name__)

PRICING_HOST = "https://pricing.us-east-1.amazonaws.com"
OFFER_INDEX_URL = f"{PRICING_HOST}/offers/v1.0/aws/index.json"
OFFER_CODE = "AmazonEC2"
# The feed behind aws.amazon.com/ec2/spot/pricing (plain JSON).
SPOT_PRICES_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
NETWORK_CSV = Path(__file__).with_name("aws_network.csv")

NAME = "aws"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

# A kept offer-file row: one of these product families (bare metal too: g4dn.metal is a GPU
# offer) and every ROW_FILTER column equal to its value. MarketOption tells on-demand from
# Capacity Blocks, which share TermType "OnDemand".
PRODUCT_FAMILIES = frozenset({"Compute Instance", "Compute Instance (bare metal)"})
ROW_FILTER = {
    "TermType": "OnDemand", "Operating System": "Linux", "Tenancy": "Shared",
    "Pre Installed S/W": "NA", "CapacityStatus": "Used", "MarketOption": "OnDemand",
    "Unit": "Hrs",
}
# The ROW_FILTER values as they appear quoted in a line, the rarest first (most rows are for
# other operating systems); "NA" is left out, it fills many other columns.
LINE_NEEDLES = ('"Linux"', '"Shared"', '"Used"', '"OnDemand"', '"Hrs"')
GPU_INSTANCE_FAMILY = "GPU instance"  # AWS's "Instance Family" value for its GPU machines
REQUIRED_COLUMNS = (
    "SKU", "RateCode", "PricePerUnit", "Currency", "EffectiveDate", "Product Family",
    "Location", "Region Code", "Instance Type", "Instance Family", "vCPU", "Memory", "Storage",
    "Network Performance", "GPU", "GPU Memory", *ROW_FILTER,
)
# The offer file starts with a few "name","value" metadata lines, then the header row.
HEADER_SEARCH_ROWS = 20
REGION_CSV_RE = re.compile(rf"/offers/v1\.0/aws/{OFFER_CODE}/[^/]+/(?P<region>[^/]+)/index\.csv$")
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GiB|GB|TiB|TB)\s*$", re.IGNORECASE)
STORAGE_RE = re.compile(r"^\s*(\d+)\s*x\s*(\d+(?:\.\d+)?)\b")
UNIT_GB = {"gib": 2**30 / 1e9, "gb": 1.0, "tib": 2**40 / 1e9, "tb": 1e3}
SNIPPET = 200


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Index chain, one streamed CSV per region, then the two spot feeds.

    A region file or spot feed that cannot be read is skipped (parse() then reports the refresh
    incomplete); the two indexes are needed for anything at all, so their errors propagate.
    """
    head, parts = fetch_parts(client, creds)
    captures = list(head)
    skipped: list[str] = []
    for part in parts:
        got = fetch_part(client, creds, head, part)
        captures += got
        if not got:
            skipped.append(part)
    if skipped:
        logger.warning("aws: %d source(s) not read: %s", len(skipped), ", ".join(skipped))
    return captures


# -- fetching in parts (a scaled-out refresh fetches each part in its own task) ---------------

SPOT_PART = "spot"


def fetch_parts(client: HttpClient, creds: Mapping[str, str]) -> tuple[list[Capture], list[str]]:
    """The two indexes, and the parts the rest is fetched in: one per region, then the spot
    feeds. `fetch` is these parts fetched in turn."""
    offer_index = client.get(OFFER_INDEX_URL)
    region_index = client.get(_region_index_url(offer_index))
    return ([offer_index, region_index],
            [region for region, _ in _region_csv_urls(region_index)] + [SPOT_PART])


def fetch_part(client: HttpClient, creds: Mapping[str, str], head: Sequence[Capture],
               part: str) -> list[Capture]:
    """One part: a region's offer file, or the two spot feeds. What cannot be read is left
    out with a warning (parse() then reports the refresh incomplete)."""
    if part == SPOT_PART:
        captures: list[Capture] = []
        for url in (SPOT_PRICES_URL, SPOT_ADVISOR_URL):
            try:
                captures.append(client.get(url))
            except FetchError as exc:
                logger.warning("aws: %s not read: %s", url, exc)
        return captures
    urls = dict(_region_csv_urls(head[1]))
    if part not in urls:
        raise FetchError(f"aws: no region {part!r} in the region index", provider=NAME,
                         transient=False)
    try:
        return [client.download(urls[part])]
    except FetchError as exc:
        logger.warning("aws: region %s not read: %s", part, exc)
        return []


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture, by kind (told apart by URL); a URL of no known kind is an error.

    complete: the region index was read, every region it lists has its offer file here, and the
    spot feed is here (Spot Advisor only annotates, so its absence loses no offer).
    """
    kinds = _sort_captures(captures)
    out = _Collector()
    specs: dict[str, _Specs] = {}
    empty: set[str] = set()
    for capture in kinds.region_files:
        if _parse_offer_file(capture, out, specs) == 0:
            # A header and no rows is a file cut or published broken, not a region that sells
            # nothing (every region file lists thousands of products): not read.
            empty.add(capture.url)
            out.reject("offer file has a header but no rows", capture.url)
    advisor = _advisor(kinds.advisor) if kinds.advisor else None
    if kinds.spot is not None:
        _parse_spot_feed(kinds.spot, advisor, specs, out)
    listed = _listed_regions(kinds.region_index) if kinds.region_index else None
    read = {m.group("region") for c in kinds.region_files
            if c.url not in empty and (m := REGION_CSV_RE.search(urlsplit(c.url).path))}
    complete = listed is not None and listed <= read and kinds.spot is not None
    return ParseResult(offers=out.offers(), rejects=out.rejects, complete=complete)


# -- captures and indexes ---------------------------------------------------------------------


@dataclass
class _Kinds:
    offer_index: Capture | None = None
    region_index: Capture | None = None
    region_files: list[Capture] = field(default_factory=list)
    spot: Capture | None = None
    advisor: Capture | None = None


def _sort_captures(captures: Sequence[Capture]) -> _Kinds:
    kinds = _Kinds()
    for c in sorted(captures, key=lambda c: c.fetched_at):
        path = urlsplit(c.url).path
        if c.url == OFFER_INDEX_URL:
            kinds.offer_index = c
        elif path.endswith("/region_index.json"):
            kinds.region_index = c
        elif path.endswith("/index.csv"):
            kinds.region_files.append(c)
        elif path.endswith("/spot.json"):
            kinds.spot = c
        elif path.endswith("/spot-advisor-data.json"):
            kinds.advisor = c
        else:
            raise ParseError("capture of no known kind", provider=NAME, url=c.url)
    return kinds


def _region_index_url(offer_index: Capture) -> str:
    offers = _json_field(offer_index, "offers")
    entry = offers.get(OFFER_CODE) if isinstance(offers, dict) else None
    path = entry.get("currentRegionIndexUrl") if isinstance(entry, dict) else None
    if not isinstance(path, str) or not path.startswith("/"):
        raise parse_error(NAME, offer_index, "no AmazonEC2 region index in the offer index",
                          f"offers.{OFFER_CODE}.currentRegionIndexUrl")
    return PRICING_HOST + path


def _region_entries(region_index: Capture) -> dict[str, str]:
    """Region code -> path of its current offer file (JSON form), as the index lists them."""
    regions = _json_field(region_index, "regions")
    out: dict[str, str] = {}
    for code, entry in regions.items() if isinstance(regions, dict) else ():
        path = entry.get("currentVersionUrl") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not path.endswith("/index.json"):
            raise parse_error(NAME, region_index, "region without a currentVersionUrl",
                              f"regions.{code}.currentVersionUrl",
                              snippet=json.dumps(entry)[:SNIPPET])
        out[code] = path
    if not out:
        raise parse_error(NAME, region_index, "region index lists no regions", "regions")
    return out


def _region_csv_urls(region_index: Capture) -> list[tuple[str, str]]:
    # Every price list file is published as index.json and index.csv side by side; the CSV is
    # the form that can be read a row at a time.
    return [(code, PRICING_HOST + path.removesuffix(".json") + ".csv")
            for code, path in sorted(_region_entries(region_index).items())]


def _listed_regions(region_index: Capture) -> set[str]:
    return set(_region_entries(region_index))


def _json_field(capture: Capture, name: str) -> Any:
    return member(NAME, capture, json_body(NAME, capture), name, object)


# -- on-demand: the per-region CSV offer files ------------------------------------------------


@dataclass(frozen=True)
class _Specs:
    vcpus: float | None
    ram_gb: float | None
    disk_gb: float | None


class _Collector(OneOfferPerKey):
    """Offers by key under the toolkit's duplicate-key rule (a key seen again at the same price
    is the same offer; at another price every row of that key is rejected), and the rejects of
    rows that are no offer."""

    def __init__(self) -> None:
        super().__init__(NAME)

    def reject(self, reason: str, raw: str, offer_key: str | None = None) -> None:
        self.rejects.append(Reject(provider=NAME, reason=reason, raw=raw[:2000],
                                   offer_key=offer_key))


def _parse_offer_file(capture: Capture, out: _Collector, specs: dict[str, _Specs]) -> int:
    """Read one region's offer file into `out`; return how many data lines it has."""
    lines = capture.iter_lines()
    meta, header, quoted = _read_preamble(lines, capture)
    col = {name: i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED_COLUMNS if c not in col]
    if missing:
        raise parse_error(NAME, capture, f"offer file has no '{missing[0]}' column", missing[0],
                          snippet=",".join(header)[:SNIPPET])
    width = len(header)
    key_columns = itemgetter(*(col[name] for name in ROW_FILTER))
    wanted = tuple(ROW_FILTER.values())
    i_family, i_type = col["Product Family"], col["Instance Type"]
    data_lines = 0

    def counted(body: Iterator[str]) -> Iterator[str]:
        nonlocal data_lines
        for line in body:
            data_lines += bool(line.strip())
            yield line

    body = counted(lines)
    try:
        for row in csv.reader(_candidate_lines(body) if quoted else body):
            if len(row) != width:
                if row:
                    out.reject(f"row has {len(row)} columns, the header {width}",
                               ",".join(row))
                continue
            if key_columns(row) != wanted or row[i_family] not in PRODUCT_FAMILIES:
                continue
            if row[i_type]:
                _on_demand_row(dict(zip(header, row, strict=True)), capture, meta, out, specs)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise parse_error(NAME, capture,
                          f"offer file is not CSV after line {data_lines}: {exc}") from None
    return data_lines


def _read_preamble(lines: Iterator[str],
                   capture: Capture) -> tuple[dict[str, str], list[str], bool]:
    """The "name","value" metadata lines, the header row, and whether values are quoted."""
    meta: dict[str, str] = {}
    try:
        for line in islice(lines, HEADER_SEARCH_ROWS):
            row = next(csv.reader([line]), [])
            if row and row[0] == "SKU":
                return meta, row, line.startswith('"')
            if len(row) == 2:
                meta[row[0]] = row[1]
    except (csv.Error, UnicodeDecodeError) as exc:
        raise parse_error(NAME, capture, f"not a CSV offer file: {exc}") from None
    raise parse_error(NAME, capture, "no header row starting with SKU", "SKU")


def _candidate_lines(lines: Iterator[str]) -> Iterator[str]:
    """The lines that can hold a kept row, in a file whose values are all quoted.

    A kept row holds every ROW_FILTER value as a quoted field, so a line missing one of them is
    dropped before the much slower CSV parse: most of a region file goes no further. A record
    broken over several lines by a quoted newline (odd quote count) is passed on whole.
    """
    first, *rest = LINE_NEEDLES
    pending = ""
    for line in lines:
        if pending:
            pending += line
            if pending.count('"') % 2 == 0:
                yield pending
                pending = ""
        elif line.count('"') % 2:
            pending = line
        elif first in line and all(n in line for n in rest):
            yield line
    if pending:
        yield pending


def _on_demand_row(row: dict[str, str], capture: Capture, meta: Mapping[str, str],
                   out: _Collector, specs: dict[str, _Specs]) -> None:
    itype, region = row["Instance Type"], row["Region Code"]
    key = f"{region}|{itype}|on_demand"
    count = _alias_count(itype)
    if count is None:
        if row["Instance Family"] != GPU_INSTANCE_FAMILY:
            return  # not a GPU machine: CPU, FPGA and ML-ASIC families are out of scope
        count = positive_decimal(row["GPU"])
        if count is None:
            out.reject(f"GPU instance {itype} has no alias row and no GPU count",
                       json.dumps(row), key)
            return
    price = positive_decimal(row["PricePerUnit"])
    if price is None:
        out.reject(f"no positive hourly price: {row['PricePerUnit']!r}", json.dumps(row), key)
        return
    if out.holds(key, price):
        return
    spec = _Specs(vcpus=positive_decimal(row["vCPU"]), ram_gb=_size_gb(row["Memory"]),
                  disk_gb=_storage_gb(row["Storage"]))
    specs.setdefault(itype, spec)
    vram_total = _size_gb(row["GPU Memory"])
    network, network_gbps = _network(itype)
    try:
        offer = ParsedOffer(
            provider=NAME, offer_key=key, instance_type=itype, gpu_label=itype,
            gpu_count=count, vram_gb_per_gpu=vram_total / count if vram_total else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=price,
            currency=row["Currency"], price_kind=PriceKind.LISTED, region=region,
            vcpus=spec.vcpus, ram_gb=spec.ram_gb, disk_gb=spec.disk_gb,
            network=network, network_gbps=network_gbps,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={
                "sku": row["SKU"], "rate_code": row["RateCode"],
                "effective_date": row["EffectiveDate"], "location": row["Location"],
                "network_performance": row["Network Performance"],
                "memory": row["Memory"], "storage": row["Storage"],
                "offer_version": meta.get("Version"),
                "publication_date": meta.get("Publication Date"),
            },
        )
    except ValidationError as exc:
        out.reject(f"invalid offer: {exc.errors()[0]['msg']}", json.dumps(row), key)
        return
    out.add(offer)


# -- spot: the spot price feed and Spot Advisor -----------------------------------------------


@dataclass(frozen=True)
class _Advisor:
    bands: dict[int, str]  # range index -> label such as "<5%"
    by_region: dict[str, dict[str, Any]]  # region -> instance type -> {"s": savings, "r": band}


def _advisor(capture: Capture) -> _Advisor:
    ranges = _json_field(capture, "ranges")
    regions = _json_field(capture, "spot_advisor")
    try:
        bands = {int(r["index"]): str(r["label"]) for r in ranges}
        by_region = {code: dict(v.get("Linux", {})) for code, v in regions.items()}
    except (TypeError, KeyError, ValueError, AttributeError):
        raise parse_error(NAME, capture, "Spot Advisor ranges or regions of an unknown shape",
                          "ranges", snippet=json.dumps(ranges)[:SNIPPET]) from None
    return _Advisor(bands, by_region)


def _spot_document(capture: Capture) -> dict[str, Any]:
    doc = json_body(NAME, capture)
    if not isinstance(doc, dict):
        raise parse_error(NAME, capture, "spot price feed is not an object")
    return doc


def _parse_spot_feed(capture: Capture, advisor: _Advisor | None, specs: Mapping[str, _Specs],
                     out: _Collector) -> None:
    doc = _spot_document(capture)
    config = doc.get("config")
    regions = config.get("regions") if isinstance(config, dict) else None
    if not isinstance(regions, list):
        raise parse_error(NAME, capture, "no config.regions in the spot price feed",
                          "config.regions", snippet=json.dumps(doc)[:SNIPPET])
    for region in regions:
        code = _field(region, "region", capture)
        for group in _list_field(region, "instanceTypes", capture):
            gpu_group = "gpu" in str(_field(group, "type", capture)).lower()
            for size in _list_field(group, "sizes", capture):
                _spot_size(size, code, gpu_group, capture, advisor, specs, out)


def _spot_size(size: Any, region: str, gpu_group: bool, capture: Capture,
               advisor: _Advisor | None, specs: Mapping[str, _Specs], out: _Collector) -> None:
    itype = _field(size, "size", capture)
    if not isinstance(itype, str):
        raise parse_error(NAME, capture, "spot size whose name is not a string", "size",
                          snippet=json.dumps(size)[:SNIPPET])
    count = _alias_count(itype)
    raw = json.dumps({"region": region, **size})
    key = f"{region}|{itype}|spot"
    if count is None:
        if gpu_group:  # an accelerator AWS lists with its GPU machines, but no alias: say so
            out.reject(f"{itype}: no alias row, so no GPU model or count", raw, key)
        return
    columns = _field(size, "valueColumns", capture)
    if not isinstance(columns, list):
        raise parse_error(NAME, capture, "spot size whose valueColumns is not a list",
                          "valueColumns", snippet=raw[:SNIPPET])
    prices = {vc.get("name"): vc.get("prices", {}) for vc in columns
              if isinstance(vc, dict) and isinstance(vc.get("name"), str)}
    if "linux" not in prices:
        raise parse_error(NAME, capture, "spot size without a linux price column",
                          "valueColumns.linux", snippet=raw[:SNIPPET])
    quotes = prices["linux"] if isinstance(prices["linux"], dict) else {}
    if len(quotes) != 1:
        out.reject(f"expected one Linux spot price, found {quotes!r}", raw, key)
        return
    (currency, quote), = quotes.items()
    price = positive_decimal(quote) if isinstance(quote, str) else None
    if price is None:  # "N/A*": not sold as spot there (see the region's footnotes)
        out.reject(f"no Linux spot price ({quote!r})", raw, key)
        return
    advice = advisor.by_region.get(region, {}).get(itype) if advisor else None
    advice = advice if isinstance(advice, dict) else None
    band = advice.get("r") if advice else None
    spec = specs.get(itype, _Specs(None, None, None))
    network, network_gbps = _network(itype)
    try:
        offer = ParsedOffer(
            provider=NAME, offer_key=key, instance_type=itype, gpu_label=itype,
            gpu_count=count, pricing_model=PricingModel.SPOT, price_per_hour=price,
            currency=currency, price_kind=PriceKind.OBSERVED, region=region,
            vcpus=spec.vcpus, ram_gb=spec.ram_gb, disk_gb=spec.disk_gb, network=network,
            network_gbps=network_gbps, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={
                "interruption_band": advisor.bands.get(band)
                if advisor and isinstance(band, int) else None,
                "savings_pct": advice.get("s") if advice else None,
            },
        )
    except ValidationError as exc:  # a currency that is no currency code, a wrong type...
        out.reject(f"invalid offer: {exc.errors()[0]['msg']}", raw, key)
        return
    out.add(offer)


def _list_field(obj: Any, name: str, capture: Capture) -> list[Any]:
    value = _field(obj, name, capture)
    if not isinstance(value, list):
        raise parse_error(NAME, capture, f"spot price feed field '{name}' is not a list", name,
                          snippet=json.dumps(obj)[:SNIPPET])
    return value


def _field(obj: Any, name: str, capture: Capture) -> Any:
    if not isinstance(obj, dict) or name not in obj:
        raise parse_error(NAME, capture, f"spot price feed entry without '{name}'", name,
                          snippet=json.dumps(obj)[:SNIPPET])
    return obj[name]


# -- shared helpers ---------------------------------------------------------------------------


def _alias_count(instance_type: str) -> float | None:
    """GPUs per instance from the alias table, None when it has no row for the type."""
    res = load_catalog().resolve(NAME, instance_type)
    return res.gpu_count if isinstance(res, Resolved) else None


@cache
def _network_table() -> dict[str, tuple[NetworkFabric, float]]:
    with NETWORK_CSV.open(newline="", encoding="utf-8") as f:
        return {r["instance_type"]: (NetworkFabric(r["network"]), float(r["network_gbps"]))
                for r in csv.DictReader(f)}


def _network(instance_type: str) -> tuple[NetworkFabric | None, float | None]:
    return _network_table().get(instance_type, (None, None))


def _size_gb(text: str) -> float | None:
    m = SIZE_RE.match(text)
    return round(float(m.group(1)) * UNIT_GB[m.group(2).lower()], 1) if m else None


def _storage_gb(text: str) -> float | None:
    """'8 x 1000 SSD', '2 x 3800 GB NVMe SSD' -> GB; 'EBS only' -> None (no local disk)."""
    m = STORAGE_RE.match(text)
    return float(m.group(1)) * float(m.group(2)) if m else None
