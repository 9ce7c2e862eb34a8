"""The explicit list of providers. A module not listed here is not run (a meta-test checks)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import cast

from gpuscout.adapters.base import Adapter

SNAPSHOTS_DIR = Path(__file__).parent / "snapshots"

# provider name (as in the warehouse, the alias table and the CLI) -> module in adapters/
PROVIDERS: dict[str, str] = {
    "aws": "aws",
    "azure": "azure",
    "civo": "civo",
    "computepulse": "computepulse",
    "coreweave": "coreweave",
    "crusoe": "crusoe",
    "cudo": "cudo",
    "datacrunch": "datacrunch",
    "daytona": "daytona",
    "deepinfra": "deepinfra",
    "digitalocean": "digitalocean",
    "e2e": "e2e",
    "fal": "fal",
    "fluidstack": "fluidstack",
    "gcp": "gcp",
    "gpuai": "gpuai",
    "hotaisle": "hotaisle",
    "huggingface": "huggingface",
    "hyperbolic": "hyperbolic",
    "hyperstack": "hyperstack",
    "ibmcloud": "ibmcloud",
    "jarvislabs": "jarvislabs",
    "lambda": "lambdalabs",
    "latitude": "latitude",
    "linode": "linode",
    "lium": "lium",
    "massedcompute": "massedcompute",
    "nebius": "nebius",
    "oci": "oci",
    "ovhcloud": "ovhcloud",
    "paperspace": "paperspace",
    "primeintellect": "primeintellect",
    "runpod": "runpod",
    "scaleway": "scaleway",
    "seeweb": "seeweb",
    "sesterce": "sesterce",
    "shadeform": "shadeform",
    "tensordock": "tensordock",
    "tensorpool": "tensorpool",
    "together": "together",
    "vastai": "vastai",
    "voltagepark": "voltagepark",
    "vultr": "vultr",
}


def get_adapter(name: str) -> Adapter:
    """The provider module for `name`; KeyError for a provider that is not registered."""
    module = importlib.import_module(f"gpuscout.adapters.{PROVIDERS[name]}")
    if module.NAME != name:
        raise RuntimeError(f"gpuscout.adapters.{PROVIDERS[name]}.NAME is {module.NAME!r}, "
                           f"not {name!r}")
    return cast(Adapter, module)
