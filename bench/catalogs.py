"""A realistic synthetic market of current offers, and the same offers in the anchors' formats.

`market_offers(n)` draws n offers over seven providers that gpuscout, gpuhunt and SkyPilot all
know (aws, azure, lambda, runpod, nebius, oci, datacrunch = gpuhunt's verda, SkyPilot's verda),
20 GPUs of the catalog, 1/2/4/8 GPUs per machine, on-demand and spot, in the Arrow schema of the
load path. The draw is seeded, so every run benchmarks the same market.

The exports hold exactly those offers, one catalog row per gpuscout offer:

- gpuhunt: its v2 catalog CSV (`gpuhunt._internal.storage.CATALOG_V2_FIELDS`, one file per
  provider), zipped and laid out as its catalog bucket (`<root>/<provider>/version`,
  `<root>/<provider>/<version>/catalog.zip`), so `GPUHUNT_CATALOG_URL=file://<root>` makes
  `gpuhunt.query()` load it with urllib's file:// handler: no network.
- SkyPilot: `vms.csv` per cloud (`InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
  MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone`) under
  `<runtime dir>/.sky/catalogs/<schema version>/<cloud>/`. The instance type is the offer key,
  so SkyPilot's per-instance-type de-duplication keeps every offer; an on-demand offer fills
  Price, a spot offer SpotPrice.
"""

from __future__ import annotations

import csv
import io
import random
import zipfile
from datetime import datetime
from pathlib import Path

import pyarrow as pa

from gpuscout.warehouse.arrow import offer_schema

# gpu_id -> (base on-demand USD per GPU-hour, gpuhunt gpu_name, SkyPilot AcceleratorName, vendor)
GPUS: dict[str, tuple[float, str, str, str]] = {
    "h100-sxm-80gb": (2.50, "H100", "H100", "nvidia"),
    "h100-pcie-80gb": (2.10, "H100", "H100", "nvidia"),
    "h100-nvl-94gb": (2.40, "H100", "H100", "nvidia"),
    "h200-sxm-141gb": (3.40, "H200", "H200", "nvidia"),
    "b200-sxm-180gb": (5.00, "B200", "B200", "nvidia"),
    "gh200-96gb": (1.90, "GH200", "GH200", "nvidia"),
    "a100-sxm-80gb": (1.50, "A100", "A100-80GB", "nvidia"),
    "a100-sxm-40gb": (1.20, "A100", "A100", "nvidia"),
    "a100-pcie-80gb": (1.40, "A100", "A100-80GB", "nvidia"),
    "a100-pcie-40gb": (1.10, "A100", "A100", "nvidia"),
    "l40s-48gb": (0.95, "L40S", "L40S", "nvidia"),
    "l4-24gb": (0.60, "L4", "L4", "nvidia"),
    "a10g-24gb": (0.90, "A10G", "A10G", "nvidia"),
    "a10-24gb": (0.75, "A10", "A10", "nvidia"),
    "t4-16gb": (0.45, "T4", "T4", "nvidia"),
    "v100-sxm2-16gb": (0.90, "V100", "V100", "nvidia"),
    "rtx-a6000-48gb": (0.70, "RTXA6000", "RTXA6000", "nvidia"),
    "rtx-4090-24gb": (0.40, "RTX4090", "RTX4090", "nvidia"),
    "rtx-6000-ada-48gb": (0.90, "RTX6000Ada", "RTX6000-Ada", "nvidia"),
    "mi300x-192gb": (2.80, "MI300X", "MI300X", "amd"),
}
# provider -> (price factor, spot share, gpuhunt provider, SkyPilot cloud, regions+geography)
PROVIDERS: dict[str, tuple[float, float, str, str, tuple[tuple[str, str], ...]]] = {
    "aws": (1.6, 0.35, "aws", "aws", (
        ("us-east-1", "us"), ("us-east-2", "us"), ("us-west-2", "us"), ("eu-west-1", "europe"),
        ("eu-central-1", "europe"), ("ap-northeast-1", "asia"), ("ap-south-1", "asia"),
        ("ca-central-1", "canada"), ("sa-east-1", "latam"), ("ap-southeast-2", "oceania"))),
    "azure": (1.5, 0.35, "azure", "azure", (
        ("eastus", "us"), ("westus2", "us"), ("southcentralus", "us"),
        ("westeurope", "europe"), ("northeurope", "europe"), ("japaneast", "asia"),
        ("australiaeast", "oceania"), ("canadacentral", "canada"))),
    "lambda": (1.0, 0.0, "lambdalabs", "lambda", (
        ("us-east-1", "us"), ("us-west-1", "us"), ("us-south-1", "us"),
        ("europe-central-1", "europe"), ("asia-northeast-1", "asia"))),
    "runpod": (0.9, 0.4, "runpod", "runpod", (
        ("US-TX-3", "us"), ("US-GA-1", "us"), ("EU-RO-1", "europe"), ("EU-SE-1", "europe"),
        ("CA-MTL-1", "canada"), ("AP-JP-1", "asia"))),
    "nebius": (1.1, 0.3, "nebius", "nebius", (
        ("eu-north1", "europe"), ("eu-west1", "europe"), ("us-central1", "us"))),
    "oci": (1.3, 0.3, "oci", "oci", (
        ("us-ashburn-1", "us"), ("us-phoenix-1", "us"), ("eu-frankfurt-1", "europe"),
        ("uk-london-1", "europe"), ("ap-tokyo-1", "asia"))),
    "datacrunch": (0.95, 0.4, "verda", "verda", (
        ("FIN-01", "europe"), ("FIN-02", "europe"), ("ICE-01", "europe"))),
}
COUNTS = (1, 1, 2, 4, 8, 8)
SEED = 20261202


def market_offers(n: int, *, observed_at: datetime, seed: int = SEED) -> pa.Table:
    """n current offers over PROVIDERS × GPUS, column-wise into the load path's schema."""
    from gpuscout.core.catalog import load_catalog

    catalog = load_catalog()
    rnd = random.Random(seed)
    providers = list(PROVIDERS)
    gpu_ids = list(GPUS)
    cols: dict[str, list] = {name: [] for name in offer_schema().names}
    for i in range(n):
        provider = providers[i % len(providers)]
        factor, spot_share, _, _, regions = PROVIDERS[provider]
        gpu_id = gpu_ids[rnd.randrange(len(gpu_ids))]
        spec = catalog.gpu(gpu_id)
        count = COUNTS[rnd.randrange(len(COUNTS))]
        region, geography = regions[rnd.randrange(len(regions))]
        spot = rnd.random() < spot_share
        per_gpu = GPUS[gpu_id][0] * factor * rnd.uniform(0.85, 1.2)
        if spot:
            per_gpu *= rnd.uniform(0.35, 0.7)
        per_gpu = round(per_gpu, 4)
        price = round(per_gpu * count, 4)
        itype = f"{provider[:3]}-{gpu_id.split('-')[0]}-{count}x-v{rnd.randrange(4)}"
        sxm = spec.form_factor.value == "SXM"
        row = {
            "provider": provider,
            "offer_key": f"{region}|{itype}|{'spot' if spot else 'on_demand'}|{i}",
            "instance_type": itype, "gpu_label": spec.name, "gpu_id": gpu_id,
            "gpu_count": float(count), "fractional_gpu": False, "vram_gb": spec.vram_gb,
            "memory_type": spec.memory_type.value, "form_factor": spec.form_factor.value,
            "interconnect": "single" if count == 1 else ("NVSwitch" if sxm and count == 8
                                                          else "PCIe"),
            "interconnect_gbps": None, "network": "InfiniBand" if sxm and count == 8
            and rnd.random() < 0.5 else "unknown",
            "network_gbps": None, "pricing_model": "spot" if spot else "on_demand",
            "price_kind": "observed" if spot else "listed", "currency": "USD",
            "price_per_hour": price, "price_usd_per_hour": price,
            "price_usd_per_gpu_hour": price / count, "billing_increment_s": None,
            "region": region, "geography": geography, "zone": None,
            "vcpus": float(count * rnd.choice((8, 12, 16, 24))),
            "ram_gb": float(count * rnd.choice((32, 64, 96, 128))),
            "disk_gb": float(count * rnd.choice((100, 250, 500))),
            "availability": rnd.choice(("in_stock", "low", "unknown")),
            "available_count": None, "source_url": f"https://{provider}.bench.invalid/prices",
            "observed_at": observed_at, "provider_data": "{}",
        }
        for name, values in cols.items():
            values.append(row[name])
    return pa.Table.from_pydict(cols, schema=offer_schema())


def _rows(offers: pa.Table) -> list[dict]:
    return offers.select(["provider", "offer_key", "gpu_id", "gpu_count", "vram_gb",
                          "pricing_model", "price_usd_per_hour", "region", "vcpus", "ram_gb",
                          "disk_gb"]).to_pylist()


def export_gpuhunt(offers: pa.Table, root: Path, *, fields: list[str],
                   offline_providers: list[str], version: str = "bench") -> dict[str, int]:
    """gpuhunt's catalog bucket layout under root; returns rows per gpuhunt provider."""
    by_provider: dict[str, list[dict[str, str]]] = {p: [] for p in offline_providers}
    for r in _rows(offers):
        name, vendor = GPUS[r["gpu_id"]][1], GPUS[r["gpu_id"]][3]
        by_provider[PROVIDERS[r["provider"]][2]].append({
            "instance_name": r["offer_key"], "location": r["region"],
            "price": str(r["price_usd_per_hour"]), "cpu": str(int(r["vcpus"])),
            "memory": str(r["ram_gb"]), "gpu_count": str(int(r["gpu_count"])),
            "gpu_name": name, "gpu_memory": str(r["vram_gb"]),
            "spot": str(r["pricing_model"] == "spot"), "disk_size": str(r["disk_gb"]),
            "gpu_vendor": vendor, "flags": "", "cpu_arch": "x86", "provider_data": "{}",
        })
    counts = {}
    for provider, rows in by_provider.items():
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
        folder = root / provider / version
        folder.mkdir(parents=True, exist_ok=True)
        (root / provider / "version").write_text(version)
        with zipfile.ZipFile(folder / "catalog.zip", "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"{provider}.csv", text.getvalue())
        counts[provider] = len(rows)
    return counts


SKY_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB",
               "GpuInfo", "Price", "SpotPrice", "Region", "AvailabilityZone")


def export_skypilot(offers: pa.Table, catalog_dir: Path) -> dict[str, int]:
    """SkyPilot vms.csv per cloud under catalog_dir (= ~/.sky/catalogs/<schema version>)."""
    by_cloud: dict[str, list[dict[str, object]]] = {PROVIDERS[p][3]: [] for p in PROVIDERS}
    for r in _rows(offers):
        name, vendor = GPUS[r["gpu_id"]][2], GPUS[r["gpu_id"]][3]
        count = int(r["gpu_count"])
        mib = int(r["vram_gb"] * 1024)
        gpu_info = {"Gpus": [{"Name": name, "Manufacturer": vendor.upper(), "Count": float(count),
                              "MemoryInfo": {"SizeInMiB": mib}}],
                    "TotalGpuMemoryInMiB": mib * count}
        spot = r["pricing_model"] == "spot"
        by_cloud[PROVIDERS[r["provider"]][3]].append({
            "InstanceType": r["offer_key"], "AcceleratorName": name,
            "AcceleratorCount": float(count), "vCPUs": r["vcpus"], "MemoryGiB": r["ram_gb"],
            "GpuInfo": repr(gpu_info), "Price": "" if spot else r["price_usd_per_hour"],
            "SpotPrice": r["price_usd_per_hour"] if spot else "", "Region": r["region"],
            "AvailabilityZone": f"{r['region']}a",
        })
    counts = {}
    for cloud, rows in by_cloud.items():
        folder = catalog_dir / cloud
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "vms.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=SKY_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        counts[cloud] = len(rows)
    return counts
