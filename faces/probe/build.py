"""Build a grid point's model from its config.json with random bf16 weights, ready to train.

transformers and peft where they are installed (the path a user's fine-tuning takes), the
plain decoder and LoRA of `decoder.py` otherwise. QLoRA goes through transformers'
bitsandbytes loader, which quantizes while it loads a checkpoint: the random bf16 model is
saved once to a scratch directory (RAM-backed /dev/shm when there is one) and loaded back in
4-bit, then prepared as PEFT prepares a k-bit model (non-quantized weights upcast to fp32).
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch  # pyright: ignore[reportMissingImports]
from torch import nn  # pyright: ignore[reportMissingImports]

from gpuscout.probe.decoder import LINEAR_NAMES, Decoder, add_lora
from gpuscout.probe.grid import Arch, Grid, Method
from gpuscout.probe.machine import versions

Backend = Literal["auto", "transformers", "plain"]


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def qlora_unavailable(backend: Backend) -> str | None:
    """Why QLoRA cannot run here, or None when it can."""
    if backend == "plain" or not has("transformers"):
        return "QLoRA needs transformers' bitsandbytes loader"
    if not has("peft"):
        return "QLoRA needs peft"
    try:
        import bitsandbytes  # pyright: ignore[reportMissingImports]  # noqa: F401
    except Exception as exc:  # any failure to load its native library counts
        return f"bitsandbytes does not load ({type(exc).__name__}: {str(exc)[:120]})"
    return None


@dataclass
class Built:
    model: nn.Module
    trainable: list[nn.Parameter]
    params: int  # base parameters, counted on the unquantized model
    vocab: int
    builder: str  # for the row's notes
    checkpointing: Callable[[bool], None]

    @property
    def trainable_count(self) -> int:
        return sum(p.numel() for p in self.trainable)


def _quiet_transformers() -> None:
    from transformers.utils import logging  # pyright: ignore[reportMissingImports]

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    # transformers 5's renames (gradient_ -> activation_checkpointing) warn from inside peft
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")


def _hf_config(cfg: dict[str, Any]) -> Any:
    from transformers import AutoConfig  # pyright: ignore[reportMissingImports]

    fields = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures")}
    fields["use_cache"] = False
    return AutoConfig.for_model(cfg["model_type"], **fields)


def _hf_model(config: Any, device: torch.device | str) -> Any:
    """A transformers causal LM (typed Any: its class comes from the config)."""
    from transformers import AutoModelForCausalLM  # pyright: ignore[reportMissingImports]

    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16,
                                                attn_implementation="sdpa")


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied weights once


@contextmanager
def _scratch(need_bytes: int) -> Iterator[Path]:
    """A scratch directory: in RAM (/dev/shm) when it has room (containers often give it only
    64 MB), else the system's temporary directory."""
    shm = Path("/dev/shm")
    roomy = shm.is_dir() and shutil.disk_usage(shm).free > 1.2 * need_bytes
    where = tempfile.mkdtemp(prefix="gpuscout-probe-", dir=shm if roomy else None)
    try:
        yield Path(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _lora_config(grid: Grid) -> Any:
    from peft import LoraConfig  # pyright: ignore[reportMissingImports]

    return LoraConfig(r=grid.lora_rank, lora_alpha=grid.lora_alpha, lora_dropout=0.0,
                      target_modules=list(LINEAR_NAMES), task_type="CAUSAL_LM")


def _hf_checkpointing(model: nn.Module) -> Callable[[bool], None]:
    # transformers 5 renamed gradient_checkpointing_* to activation_checkpointing_*
    modern = hasattr(model, "activation_checkpointing_enable")
    enable = getattr(model, "activation_checkpointing_enable" if modern
                     else "gradient_checkpointing_enable")
    disable = getattr(model, "activation_checkpointing_disable" if modern
                      else "gradient_checkpointing_disable")

    def switch(on: bool) -> None:
        if on:
            enable({"use_reentrant": False})  # the kwargs for torch.utils.checkpoint
        else:
            disable()
    return switch


def _build_hf(arch: Arch, method: Method, grid: Grid, device: torch.device) -> Built:
    _quiet_transformers()
    cfg = arch.config_dict()
    config = _hf_config(cfg)
    v = versions()
    how = f"built by transformers {v.get('transformers')} AutoModelForCausalLM.from_config (sdpa)"
    if method == "qlora":
        model, params = _load_4bit(config, device)
        from peft import prepare_model_for_kbit_training  # pyright: ignore[reportMissingImports]

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
        how += (f", saved and reloaded in 4-bit by bitsandbytes {v.get('bitsandbytes')}, "
                f"peft prepare_model_for_kbit_training")
    else:
        model = _hf_model(config, device)
        params = _count(model)
    if method != "full":
        if has("peft"):
            from peft import get_peft_model  # pyright: ignore[reportMissingImports]

            model = get_peft_model(model, _lora_config(grid))
            how += f", peft {v.get('peft')} get_peft_model"
        else:
            model = add_lora(model, grid.lora_rank, grid.lora_alpha)
            how += ", LoRA of gpuscout.probe.decoder (peft not installed)"
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    return Built(model, trainable, params, cfg["vocab_size"], how, _hf_checkpointing(model))


def _load_4bit(config: Any, device: torch.device) -> tuple[Any, int]:
    """The model loaded in 4-bit from a saved random checkpoint, and its dense count."""
    from transformers import (  # pyright: ignore[reportMissingImports]
        AutoModelForCausalLM,
        BitsAndBytesConfig,
    )

    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
    dense = _hf_model(config, device)
    params = _count(dense)
    with _scratch(2 * params) as where:  # bf16
        dense.save_pretrained(where)
        del dense
        if device.type == "cuda":
            torch.cuda.empty_cache()
        index = device.index if device.type == "cuda" and device.index is not None else 0
        model = AutoModelForCausalLM.from_pretrained(
            where, quantization_config=quant, dtype=torch.bfloat16,
            device_map={"": index if device.type == "cuda" else device.type},
            attn_implementation="sdpa")
        return model, params


def _build_plain(arch: Arch, method: Method, grid: Grid, device: torch.device) -> Built:
    cfg = arch.config_dict()
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # built in bf16, never as an fp32 copy first
    try:
        with torch.device(device):
            model = Decoder(cfg)
    finally:
        torch.set_default_dtype(default)
    params = _count(model)
    how = "built by gpuscout.probe.decoder (plain PyTorch decoder, sdpa)"
    if method != "full":
        add_lora(model, grid.lora_rank, grid.lora_alpha)  # in place
        how += " with its LoRA"
    model.train()

    def switch(on: bool) -> None:
        model.checkpointing = on

    trainable = [p for p in model.parameters() if p.requires_grad]
    return Built(model, trainable, params, cfg["vocab_size"], how, switch)


def build(arch: Arch, method: Method, grid: Grid, device: torch.device,
          backend: Backend = "auto") -> Built:
    torch.manual_seed(0)
    use_hf = backend == "transformers" or (backend == "auto" and has("transformers"))
    if method == "qlora":
        why = qlora_unavailable(backend)
        if why:
            raise RuntimeError(why)
    return (_build_hf if use_hf else _build_plain)(arch, method, grid, device)
