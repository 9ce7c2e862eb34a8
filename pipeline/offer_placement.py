"""An offer's placement facts as the time model reads them (`gpuscout estimate --offer`): the
GPU, how many sit in one machine, what joins them and the network between machines, from the
offer as stored and, where it is silent, as the recommendation reads them (pipeline/recommend/
facts.sql): the provider profile's fabric, then the assumed Gb/s of that fabric."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gpuscout.core.errors import UserInputError
from gpuscout.pipeline.profiles import ProviderProfile, load_profiles
from gpuscout.pipeline.recommend.plans import FABRIC_ASSUMED_GBPS
from gpuscout.sizing.choices import Interconnect, Network
from gpuscout.warehouse.queries import fetch_named

# The warehouse's link names (core.models.Interconnect, NetworkFabric) as the time model's.
# A machine the offer calls PCIe gets peer-to-peer unless its GPU is a consumer card
# (sizing.collectives.default_interconnect decides: None here).
INTERCONNECTS: dict[str, Interconnect] = {"NVSwitch": "nvswitch", "NVLink": "nvlink",
                                          "InfinityFabric": "xgmi"}
NETWORKS: dict[str, Network] = {"InfiniBand": "infiniband", "RoCE": "roce", "EFA": "efa",
                                "Ethernet": "ethernet"}


@dataclass(frozen=True)
class OfferPlacement:
    label: str  # provider:key, as found
    gpu_id: str
    gpus_per_machine: int
    interconnect: Interconnect | None  # None: the GPU's own (PCIe, or not stated)
    network: Network | None
    network_gbps: float | None
    network_source: str | None  # "offer", "provider profile"; None: no network named
    gbps_assumed: bool  # the Gb/s is FABRIC_ASSUMED_GBPS's, not the offer's or the profile's


def offer_placement(con: duckdb.DuckDBPyConnection, ref: str) -> OfferPlacement:
    """The offer `PROVIDER:KEY` (a key's unique start will do), or a UserInputError that lists
    the keys it could mean."""
    provider, sep, key = ref.partition(":")
    if not sep or not provider or not key:
        raise UserInputError(f"--offer {ref!r}: give PROVIDER:KEY (`gpuscout sql \"select "
                             f"provider, offer_key from current_offers\"` lists them)")
    columns, rows = fetch_named(con, "offer_placement", {"provider": provider, "key": key})
    found = [dict(zip(columns, r, strict=True)) for r in rows]
    if not found:
        raise UserInputError(f"--offer {ref!r}: no current offer of {provider} has that key")
    if found[0]["offer_key"] != key and len(found) > 1:
        keys = ", ".join(r["offer_key"] for r in found[:5])
        raise UserInputError(f"--offer {ref!r} could be any of: {keys}")
    row = found[0]
    if row["gpu_id"] is None:
        raise UserInputError(f"--offer {ref!r}: its GPU is not in the catalog")
    per_machine = row["gpus_per_machine"] or row["gpu_count"] or 1
    fabric, gbps, source = between_machines(row["network"], row["network_gbps"],
                                            load_profiles().get(provider))
    return OfferPlacement(
        label=f"{provider}:{row['offer_key']}", gpu_id=row["gpu_id"],
        gpus_per_machine=max(1, int(per_machine)),
        interconnect=INTERCONNECTS.get(row["interconnect"] or ""),
        network=NETWORKS.get(fabric or ""),
        network_gbps=gbps if gbps is not None else FABRIC_ASSUMED_GBPS.get(fabric or ""),
        network_source=source, gbps_assumed=fabric is not None and gbps is None)


def between_machines(network: str | None, gbps: float | None, profile: ProviderProfile | None
                     ) -> tuple[str | None, float | None, str | None]:
    """(fabric, Gb/s per machine, where the fabric was read) by the recommendation's rule: the
    offer's network and Gb/s; a network the offer does not name is the profile's, and the
    profile's Gb/s counts only for the fabric it describes."""
    named = network if network not in (None, "unknown") else None
    p_fabric = profile.multinode_fabric if profile else None
    p_gbps = profile.multinode_gbps if profile else None
    if named is not None:
        return named, gbps if gbps is not None else (p_gbps if p_fabric == named else None), \
            "offer"
    if p_fabric is not None:
        return p_fabric, p_gbps, "provider profile"
    return None, None, None
