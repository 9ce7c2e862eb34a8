"""The machine a probe runs on: device, driver, package versions, and the card's achieved rates."""

from __future__ import annotations

import platform
import shutil
import subprocess
import time
from importlib import metadata

import torch  # pyright: ignore[reportMissingImports]

from gpuscout.probe.rows import Env

PACKAGES = ("torch", "transformers", "peft", "bitsandbytes")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def driver_version() -> str | None:
    """The NVIDIA driver's version: NVML when nvidia-ml-py is there, else nvidia-smi."""
    try:
        import pynvml  # pyright: ignore[reportMissingImports]

        pynvml.nvmlInit()
        found = pynvml.nvmlSystemGetDriverVersion()
        return found.decode() if isinstance(found, bytes) else str(found)
    except Exception:  # no NVML or no library: ask the command line tool
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def pick_device(name: str | None = None) -> torch.device:
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_tflops(device: torch.device, n: int, reps: int = 20, warmup: int = 3) -> float:
    """Achieved rate of an n x n x n bf16 matrix product on random data."""
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    for _ in range(warmup):
        torch.mm(a, b)
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        torch.mm(a, b)
    sync(device)
    return 2.0 * n**3 * reps / (time.perf_counter() - start) / 1e12


def copy_gb_s(device: torch.device, mib: int, reps: int = 20, warmup: int = 3) -> float:
    """Bytes read plus bytes written per second by a device-to-device copy of one tensor."""
    src = torch.ones(mib * 2**20, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(warmup):
        dst.copy_(src)
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        dst.copy_(src)
    sync(device)
    return 2.0 * src.numel() * reps / (time.perf_counter() - start) / 1e9


def environment(device: torch.device, *, matmul_n: int | None = None,
                copy_mib: int | None = None) -> Env:
    """The machine, and (when sizes are given) the card's achieved matmul and copy rates."""
    cuda = device.type == "cuda"
    if cuda:
        props = torch.cuda.get_device_properties(device)
        name, memory_gib = props.name, props.total_memory / 2**30
    else:
        name, memory_gib = "cpu", None
    matmul = matmul_tflops(device, matmul_n) if matmul_n else None
    copy = copy_gb_s(device, copy_mib) if copy_mib else None
    if cuda:
        torch.cuda.empty_cache()
    return Env(device=name, cuda=cuda, memory_gib=memory_gib,
               driver=driver_version() if cuda else None,
               cuda_version=torch.version.cuda if cuda else None, versions=versions(),
               matmul_tflops=matmul, copy_gb_s=copy)
