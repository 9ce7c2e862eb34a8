"""The closed sets of job options, with no dependencies: the CLI imports them at start-up."""

from __future__ import annotations

from typing import Literal

Method = Literal["full", "lora", "qlora", "dora", "ia3", "prefix", "prompt", "adapter"]
LoraTargets = Literal["qv", "attn", "all-linear"]
# fp8: 16-bit weights, gradients and activations whose linear layers' GEMMs run in FP8
# (Transformer Engine, torchao float8)
Dtype = Literal["fp32", "fp16", "bf16", "fp8"]
Quant = Literal["none", "int8", "nf4", "gptq"]
Optimizer = Literal["adamw", "adamw-foreach", "adamw-8bit", "paged-adamw-8bit", "sgd",
                    "adafactor"]
# The two implementations of full-precision AdamW (fused, multi-tensor): the same states
ADAMW: tuple[Optimizer, ...] = ("adamw", "adamw-foreach")
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "params"]
Framework = Literal["hf", "trl", "axolotl", "unsloth", "torchtune", "litgpt", "llama-factory",
                    "ms-swift", "megatron"]
Loss = Literal["eager", "chunked", "fused", "cce", "unsloth"]
Nf4Backend = Literal["bitsandbytes", "torchao"]
# How --dtype fp8 scales and keeps its FP8 tensors: "te" is Transformer Engine's own default for
# the GPU (delayed scaling on Ada/Hopper, MXFP8 on Blackwell, current "tensorwise" scaling from
# compute capability 12); "torchao" is torchao.float8's dynamic tensorwise Float8Linear.
Fp8Recipe = Literal["te", "delayed", "tensorwise", "mxfp8", "torchao"]
# Between the GPUs of one machine (sizing/collectives.py): NVLink bridges or a direct mesh, an
# NVSwitch board, AMD's Infinity Fabric mesh, PCIe with peer-to-peer, or PCIe through host
# memory (consumer cards, whose driver refuses peer-to-peer)
Interconnect = Literal["nvlink", "nvswitch", "xgmi", "pcie", "pcie-no-p2p"]
# Between machines
Network = Literal["infiniband", "roce", "efa", "ethernet"]


CHOICES: dict[str, tuple[str, ...]] = {
    "method": Method.__args__,  # type: ignore[attr-defined]
    "lora_targets": LoraTargets.__args__,  # type: ignore[attr-defined]
    "dtype": Dtype.__args__,  # type: ignore[attr-defined]
    "quant": Quant.__args__,  # type: ignore[attr-defined]
    "optimizer": Optimizer.__args__,  # type: ignore[attr-defined]
    "sharding": Sharding.__args__,  # type: ignore[attr-defined]
    "offload": Offload.__args__,  # type: ignore[attr-defined]
    "framework": Framework.__args__,  # type: ignore[attr-defined]
    "loss": Loss.__args__,  # type: ignore[attr-defined]
    "nf4_backend": Nf4Backend.__args__,  # type: ignore[attr-defined]
    "fp8_recipe": Fp8Recipe.__args__,  # type: ignore[attr-defined]
    "interconnect": Interconnect.__args__,  # type: ignore[attr-defined]
    "network": Network.__args__,  # type: ignore[attr-defined]
}
