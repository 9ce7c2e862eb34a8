"""Provider region codes and location text to a coarse geography users filter on."""

from __future__ import annotations

import re

# ISO 3166 country code -> geography. Only what GPU clouds list; extend as providers appear.
_COUNTRY = {
    "US": "us", "CA": "canada", "MX": "latam", "BR": "latam", "CL": "latam", "AR": "latam",
    "GB": "europe", "UK": "europe", "IE": "europe", "FR": "europe", "DE": "europe",
    "NL": "europe", "BE": "europe", "LU": "europe", "ES": "europe", "PT": "europe",
    "IT": "europe", "CH": "europe", "AT": "europe", "PL": "europe", "CZ": "europe",
    "SE": "europe", "NO": "europe", "FI": "europe", "DK": "europe", "IS": "europe",
    "EE": "europe", "LV": "europe", "LT": "europe", "RO": "europe", "BG": "europe",
    "HU": "europe", "GR": "europe", "SK": "europe", "SI": "europe", "HR": "europe",
    "RS": "europe", "UA": "europe", "TR": "europe",
    "CN": "asia", "HK": "asia", "TW": "asia", "JP": "asia", "KR": "asia", "SG": "asia",
    "IN": "asia", "TH": "asia", "VN": "asia", "MY": "asia", "ID": "asia", "PH": "asia",
    "IL": "middle-east", "AE": "middle-east", "SA": "middle-east", "QA": "middle-east",
    "AU": "oceania", "NZ": "oceania", "ZA": "africa", "NG": "africa", "KE": "africa",
}
# Country names as location text spells them ("Chubbuck, Idaho, United States").
_COUNTRY_NAME = {
    "united states": "us", "usa": "us", "canada": "canada", "mexico": "latam",
    "brazil": "latam", "chile": "latam", "united kingdom": "europe", "ireland": "europe",
    "france": "europe", "germany": "europe", "netherlands": "europe", "belgium": "europe",
    "spain": "europe", "portugal": "europe", "italy": "europe", "switzerland": "europe",
    "austria": "europe", "poland": "europe", "czech republic": "europe", "czechia": "europe",
    "sweden": "europe", "norway": "europe", "finland": "europe", "denmark": "europe",
    "iceland": "europe", "romania": "europe", "bulgaria": "europe", "hungary": "europe",
    "greece": "europe", "ukraine": "europe", "turkey": "europe", "estonia": "europe",
    "japan": "asia", "south korea": "asia", "korea": "asia", "singapore": "asia",
    "india": "asia", "taiwan": "asia", "hong kong": "asia", "china": "asia",
    "thailand": "asia", "vietnam": "asia", "malaysia": "asia", "indonesia": "asia",
    "israel": "middle-east", "united arab emirates": "middle-east",
    "saudi arabia": "middle-east", "australia": "oceania", "new zealand": "oceania",
    "south africa": "africa", "nigeria": "africa", "kenya": "africa",
}
# Cloud region prefixes (AWS/GCP/Azure/OCI/Lambda style codes).
_PREFIX = [
    (r"^(us|usa)[-_ ]", "us"), (r"^(ca|canada)[-_ ]", "canada"),
    (r"^(eu|europe)[-_ ]", "europe"), (r"^(uk|fr|de|nl|se|no|fi|ch|it|pl|es)[-_ ]", "europe"),
    (r"^(ap|asia|india)[-_ ]", "asia"), (r"^(jp|kr|in|sg)[-_ ]", "asia"),
    (r"^(sa|southamerica)[-_ ]", "latam"), (r"^(me)[-_ ]", "middle-east"),
    (r"^(af)[-_ ]", "africa"), (r"^(au|australia)[-_ ]", "oceania"),
]
# Azure region names are one lowercase word ("eastus2", "germanywestcentral", "usgovvirginia").
_AZURE = [
    (r"^(east|west|central|northcentral|southcentral|westcentral)us\d?$|^usgov", "us"),
    (r"^canada", "canada"), (r"^(brazil|mexico|chile)", "latam"),
    (r"europe$|^(uk|france|germany|switzerland|norway|sweden|poland|italy|spain|austria"
     r"|belgium|denmark|finland)", "europe"),
    (r"asia$|india|^(japan|korea|indonesia|malaysia|taiwan)", "asia"),
    (r"^(australia|newzealand)", "oceania"), (r"^(uae|qatar|israel|saudi)", "middle-east"),
    (r"^southafrica", "africa"),
]


def geography(region: str | None) -> str | None:
    """'us-east-1' -> 'us'; 'Guangxi, CN' -> 'asia'; None when the region says nothing."""
    if not region:
        return None
    text = region.strip()
    m = re.search(r"(?:^|[,\s])([A-Z]{2})\s*$", text)  # "City, CC" as marketplaces write it
    if m and m.group(1) in _COUNTRY:
        return _COUNTRY[m.group(1)]
    if text.upper() in _COUNTRY:
        return _COUNTRY[text.upper()]
    low = text.lower()
    last = low.rsplit(",", 1)[-1].strip()  # "city, state, country": the country is last
    if last in _COUNTRY_NAME:
        return _COUNTRY_NAME[last]
    for pattern, geo in _PREFIX:
        if re.match(pattern, low):
            return geo
    if re.fullmatch(r"[a-z]+\d?", low):
        for pattern, geo in _AZURE:
            if re.search(pattern, low):
                return geo
    return None
