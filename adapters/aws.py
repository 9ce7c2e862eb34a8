"""AWS EC2: on-demand list prices from the public bulk price list, spot prices from the spot price
feed, and interruption bands from Spot Advisor. No credentials.

fetch() follows the price list's own index chain: offer index -> EC2 region index -> one CSV offer
file per region, streamed to disk with `HttpClient.download`; then the spot price feed and Spot
Advisor. parse() sorts the captures by kind (told apart by URL) and hands each to the reader of
its source, each in its own module with its own tests:

- `aws_offers.py`: the per-region CSV offer files (on-demand), read in constant memory;
- `aws_spot.py`: the spot price feed (spot), with the machine specs of the offer files;
- `aws_advisor.py`: Spot Advisor's interruption bands and savings for the spot offers.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gpuscout.adapters import aws_advisor, aws_offers, aws_spot
from gpuscout.adapters.archive import Capture
from gpuscout.adapters.aws_offers import NAME
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import SNIPPET_CHARS, json_body, member, parse_error
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import ParseResult

logger = logging.getLogger(__name__)

PRICING_HOST = "https://pricing.us-east-1.amazonaws.com"
OFFER_INDEX_URL = f"{PRICING_HOST}/offers/v1.0/aws/index.json"
OFFER_CODE = "AmazonEC2"
REGION_CSV_RE = re.compile(rf"/offers/v1\.0/aws/{OFFER_CODE}/[^/]+/(?P<region>[^/]+)/index\.csv$")
# The feed behind aws.amazon.com/ec2/spot/pricing (plain JSON).
SPOT_PRICES_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"

SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()


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
    out = aws_offers.Collector()
    specs: dict[str, aws_offers.Specs] = {}
    empty: set[str] = set()
    for capture in kinds.region_files:
        if aws_offers.read_offer_file(capture, out, specs) == 0:
            # A header and no rows is a file cut or published broken, not a region that sells
            # nothing (every region file lists thousands of products): not read.
            empty.add(capture.url)
            out.reject("offer file has a header but no rows", capture.url)
    advisor = aws_advisor.read_advisor(kinds.advisor) if kinds.advisor else None
    if kinds.spot is not None:
        aws_spot.read_spot_feed(kinds.spot, advisor, specs, out)
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
                              snippet=json.dumps(entry)[:SNIPPET_CHARS])
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

