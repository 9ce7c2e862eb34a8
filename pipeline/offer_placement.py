"""An offer's placement facts as the time model reads them (`gpuscout estimate --offer`): the
GPU, how many sit in one machine, what joins them and the network between machines, from the
offer as stored."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gpuscout.core.errors import UserInputError
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
    return OfferPlacement(
        label=f"{provider}:{row['offer_key']}", gpu_id=row["gpu_id"],
        gpus_per_machine=max(1, int(per_machine)),
        interconnect=INTERCONNECTS.get(row["interconnect"] or ""),
        network=NETWORKS.get(row["network"] or ""), network_gbps=row["network_gbps"])
