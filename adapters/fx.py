"""USD exchange rates from the ECB daily euro reference rates, for offers not priced in USD.

Offers keep the amount and currency the provider printed; normalization multiplies by
`FxTable.usd_per_unit[currency]` (`pipeline/normalize.py`). The ECB publishes, once per working
day (around 16:00 CET), how many units of each currency one euro buys, in an XML envelope:

    <gesmes:Envelope ...><Cube><Cube time='2025-05-09'>
        <Cube currency='USD' rate='1.1252'/> <Cube currency='JPY' rate='163.36'/> ...

So USD per euro is rate[USD], and USD per unit of C is rate[USD] / rate[C]. The file is fetched
through the shared client like any provider response, so it is archived and replays offline
(`adapters/snapshots/_fx/`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import parse_error, positive_decimal
from gpuscout.core.errors import ParseError

ECB_DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
# The archive folder (and HttpClient name) of the rates: not a provider, hence the underscore.
FX_SOURCE = "_fx"

# The two namespaces of the ECB file: the GESMES envelope and the eurofxref vocabulary.
_GESMES = "{http://www.gesmes.org/xml/2002-08-01}"
_EUROFXREF = "{http://www.ecb.int/vocabulary/2002-08-01/eurofxref}"


class FxTable(BaseModel):
    """USD per unit of each currency on one reference date ("USD" is 1.0, "EUR" the ECB rate)."""

    model_config = ConfigDict(frozen=True)

    as_of: date = Field(description="the ECB reference date the rates are for")
    usd_per_unit: dict[str, float]
    source_url: str = ECB_DAILY_URL


def fetch_rates(client: HttpClient) -> list[Capture]:
    """The ECB daily file, recorded by the client like any provider response."""
    return [client.get(ECB_DAILY_URL)]


def parse_rates(captures: Sequence[Capture]) -> FxTable:
    """The table of the newest reference date among the captures; ParseError on a bad file."""
    tables = [_table(capture) for capture in captures]
    if not tables:
        raise ParseError("no FX capture to read", provider=FX_SOURCE)
    return max(tables, key=lambda t: t.as_of)


# -- one file ---------------------------------------------------------------------------------


def _table(capture: Capture) -> FxTable:
    try:
        root = ET.fromstring(capture.body)
    except ET.ParseError as exc:
        raise parse_error(FX_SOURCE, capture, f"body is not XML ({exc})") from None
    if root.tag != f"{_GESMES}Envelope":
        raise parse_error(FX_SOURCE, capture,
                          f"root element is {root.tag!r}, not gesmes:Envelope", "Envelope")
    days = root.findall(f"{_EUROFXREF}Cube/{_EUROFXREF}Cube[@time]")
    if not days:
        raise parse_error(FX_SOURCE, capture, "no <Cube time='...'> with the day's rates",
                          "Cube/@time")
    # The daily file holds one day; the history files hold many, newest first: take the newest.
    day = max(days, key=lambda c: c.get("time", ""))
    try:
        as_of = date.fromisoformat(day.get("time", ""))
    except ValueError:
        raise parse_error(FX_SOURCE, capture,
                          f"reference date {day.get('time')!r} is not a date",
                          "Cube/@time") from None
    eur_rates = _eur_rates(day, capture)
    if "USD" not in eur_rates:
        raise parse_error(FX_SOURCE, capture, f"no USD rate on {as_of}", "Cube/@currency")
    usd = eur_rates["USD"]
    usd_per_unit = {"USD": 1.0, "EUR": usd}
    usd_per_unit.update({c: usd / r for c, r in eur_rates.items() if c != "USD"})
    return FxTable(as_of=as_of, usd_per_unit=usd_per_unit, source_url=capture.url)


def _eur_rates(day: ET.Element, capture: Capture) -> dict[str, float]:
    """Units of each currency per euro, as the ECB prints them."""
    rates: dict[str, float] = {}
    for cube in day.findall(f"{_EUROFXREF}Cube"):
        currency, text = cube.get("currency"), cube.get("rate")
        if currency is None or len(currency) != 3 or not currency.isalpha():
            raise parse_error(FX_SOURCE, capture,
                              f"currency code {currency!r} is not ISO 4217", "Cube/@currency")
        rate = positive_decimal(text)
        if rate is None:
            raise parse_error(FX_SOURCE, capture,
                              f"rate {text!r} for {currency} is not a positive number",
                              "Cube/@rate")
        if currency.upper() in rates:
            raise parse_error(FX_SOURCE, capture, f"{currency} is listed twice",
                              "Cube/@currency")
        rates[currency.upper()] = rate
    if not rates:
        raise parse_error(FX_SOURCE, capture, "the day's <Cube> lists no currency",
                          "Cube/@currency")
    return rates

