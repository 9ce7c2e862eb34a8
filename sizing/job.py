"""A fine-tuning job as a user describes it, declared once for every face.

`Job` holds the options of `gpuscout estimate`, `recommend` and `report` and of the Python API
(`gpuscout.estimate(model=..., method=...)`): which model (a catalog id, a local config.json or
a bare parameter count) and how it is trained. `Job.resolve()` turns it into the architecture,
the validated `JobSpec` the model computes on, and the warnings to show with the result. The
CLI builds its options from these fields (`gpuscout.cli.job_options`), so a new option is one
field here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.choices import (
    CHOICES,
    Dtype,
    Fp8Recipe,
    Framework,
    Interconnect,
    LoraTargets,
    Loss,
    Method,
    Network,
    Nf4Backend,
    Offload,
    Optimizer,
    Quant,
    Sharding,
)

if TYPE_CHECKING:  # the model modules load data; keep them off the CLI's start-up path
    from gpuscout.core.catalog import GpuSpec
    from gpuscout.sizing.architectures import Architecture
    from gpuscout.sizing.collectives import Topology
    from gpuscout.sizing.types import JobSpec


# Trainers that run the transformers model as loaded (attn_implementation defaults to "sdpa")
# and pad each batch unless told to pack (TrainingArguments' collators; TRL SFTConfig packing
# and padding_free default False). A batch with padding hands SDPA a mask, and PyTorch's flash
# backend takes no mask: its memory-efficient kernel then computes the whole padded square,
# with no causal blocks skipped. The time model counts causal FlashAttention, so it says so.
SDPA_PADDING_FRAMEWORKS = ("hf", "trl")
PADDED_SDPA_NOTE = (
    "padded batches: with a padding mask, transformers' default SDPA attention cannot use "
    "PyTorch's flash kernel and usually runs the memory-efficient one over the whole padded "
    "square, with no causal blocks skipped, while this time counts causal FlashAttention. "
    "Pack the data (--packed) or load the model with attn_implementation='flash_attention_2' "
    "to get it")


# torchtune's padded_collate_sft pads a batch to its longest sample; tokenizer.max_seq_len only
# truncates (pytorch/torchtune torchtune/data/_collate.py at bd2a0fc, line 190).
TORCHTUNE_PADDING_NOTE = (
    "torchtune pads each batch to its longest sample (padded_collate_sft) and "
    "tokenizer.max_seq_len only truncates: unless dataset.packed is true, give --seq-len as "
    "the longest sample of your data, not max_seq_len")

# The placement of the job's GPUs: the time model's, not the JobSpec's (sizing/collectives.py)
PLACEMENT_FIELDS = ("interconnect", "network", "network_gbps")
MAX_NETWORK_GBPS = 1e5


class Job(BaseModel):
    """One fine-tuning job: exactly one of `model`, `config` or `params`, and its options."""

    model_config = ConfigDict(frozen=True)

    model: str | None = Field(
        default=None,
        description="Model id (e.g. meta-llama/Llama-3.1-8B): read from the Hub with "
                    "--online, else from the local Hugging Face cache, else the catalog "
                    "(org optional there)")
    online: bool | None = Field(
        default=None,
        description="read --model's config.json from the Hugging Face Hub (HF_TOKEN for "
                    "gated models) and cache it; default: GPUSCOUT_ONLINE=1")
    config: Path | None = Field(
        default=None,
        description="A local Hugging Face config.json (read offline)")
    params: float | None = Field(
        default=None,
        description="Parameter count of an unknown model (generic Llama-like shape)")
    method: Method = Field(
        default="lora",
        description="full|lora|qlora|dora|ia3|prefix|prompt|adapter")
    lora_rank: int | None = Field(
        default=None, description="LoRA/DoRA rank r (default: the framework's, else 16)")
    lora_targets: LoraTargets | None = Field(
        default=None,
        description="qv|attn|all-linear (default: the framework's, else qv)")
    lora_dropout: float | None = Field(
        default=None,
        description="LoRA dropout probability (default: the framework's, else PEFT's 0.0)")
    dtype: Dtype = Field(
        default="bf16",
        description="fp32|fp16|bf16|fp8 compute precision (fp8: bf16 weights and activations, "
                    "the linear layers' GEMMs in FP8 on GPUs with FP8 tensor cores)")
    fp8_recipe: Fp8Recipe | None = Field(
        default=None,
        description="te|delayed|tensorwise|mxfp8|torchao: how --dtype fp8 scales and keeps its "
                    "FP8 operands (default te: Transformer Engine's default for the GPU)")
    quant: Quant | None = Field(
        default=None,
        description="none|int8|nf4|gptq base weights (qlora implies nf4; gptq: a GPTQ or "
                    "AWQ int4 checkpoint; default: the checkpoint's own quantization, else "
                    "none)")
    double_quant: bool | None = Field(
        default=None, description="NF4 double quantization of the scales (default on)")
    framework: Framework = Field(
        default="hf",
        description="hf|trl|axolotl|unsloth|torchtune|litgpt|llama-factory|ms-swift|megatron: "
                    "fills the options below you do not give with that framework's defaults")
    optimizer: Optimizer | None = Field(
        default=None,
        description="adamw|adamw-foreach|adamw-8bit|paged-adamw-8bit|sgd|adafactor (default "
                    "adamw: fused, the HF Trainer default from torch 2.8; adamw-foreach: "
                    "torch.optim.AdamW without fused=True)")
    mixed_precision: bool | None = Field(
        default=None,
        description="fp32 master weights and states, or all 16-bit (default mixed)")
    upcast_non_quantized: bool | None = Field(
        default=None,
        description="k-bit base: embeddings, head and norms cast to fp32 (PEFT "
                    "prepare_model_for_kbit_training; default on)")
    batch_size: int = Field(default=1, description="micro-batch per GPU")
    seq_len: int = Field(default=2048, description="tokens per sequence")
    mean_seq_len: int | None = Field(
        default=None,
        description="mean tokens per sequence when lengths vary (default: --seq-len): time "
                    "follows the mean, memory the longest")
    grad_accum: int = Field(default=1, description="gradient accumulation steps")
    grad_checkpointing: bool | None = Field(
        default=None, description="recompute activations (default on)")
    checkpoint_offload: bool | None = Field(
        default=None,
        description="offloaded gradient checkpointing (Unsloth 'unsloth'): checkpointed block "
                    "inputs wait in CPU RAM")
    activation_offloading: bool | None = Field(
        default=None,
        description="saved activations moved to CPU RAM during forward (torchtune/TRL)")
    flash_attention: bool = Field(
        default=True,
        description="FlashAttention/SDPA vs eager attention")
    chunked_loss: bool | None = Field(
        default=None,
        description="fused linear cross-entropy (Liger-style); same as --loss fused")
    loss: Loss | None = Field(
        default=None,
        description="eager|chunked|fused|cce|unsloth: full fp32 logits, torchtune/litgpt "
                    "chunks, Liger/TRL fused, Cut Cross-Entropy, or Unsloth's fused loss over "
                    "chunks of up to 4 GiB of fp32 logits (default eager)")
    compile: bool | None = Field(
        default=None, description="torch.compile the model (default off)")
    fused_kernels: bool | None = Field(
        default=None,
        description="fused Triton kernels for norms, rotary embeddings, the gated MLP and LoRA "
                    "(Unsloth's own, or Liger's; default off)")
    optimizer_in_backward: bool | None = Field(
        default=None,
        description="step each parameter during backward and free its gradient (torchtune "
                    "optimizer_in_bwd; needs --grad-accum 1)")
    fp32_loss: bool | None = Field(
        default=None,
        description="the eager or chunked loss over fp32 logits (autocast, or the code's own "
                    "cast; default on); --no-fp32-loss: cross-entropy on the 16-bit logits "
                    "(remote code under DeepSpeed, a pure-16-bit loop, litgpt under bf16-true)")
    adapter_fp32: bool | None = Field(
        default=None,
        description="PEFT adapters, their gradients and optimizer states in fp32 (PEFT's "
                    "default); --no-adapter-fp32: in the model's dtype (torchtune, litgpt "
                    "with --quantize)")
    base_fp32: bool | None = Field(
        default=None,
        description="a LoRA job's frozen base kept in fp32 under autocast (litgpt's default "
                    "bf16-mixed precision; default off)")
    quantize_head: bool | None = Field(
        default=None,
        description="the LM head quantized with a quantized base (litgpt --quantize; default "
                    "off)")
    embedding_grad: bool | None = Field(
        default=None,
        description="the frozen input embedding still gets a dense gradient (litgpt "
                    "--quantize; default off)")
    logits_kept: bool | None = Field(
        default=None,
        description="the training loop holds the 16-bit logits through backward (litgpt; "
                    "default off)")
    grad_clipping: bool | None = Field(
        default=None,
        description="clip the gradient norm before each optimizer step (HF Trainer "
                    "max_grad_norm=1.0: on; torchtune: off)")
    nf4_backend: Nf4Backend | None = Field(
        default=None, description="bitsandbytes|torchao NF4 kernels (default bitsandbytes)")
    train_embeddings: bool | None = Field(
        default=None,
        description="PEFT: also train the embeddings and LM head (modules_to_save)")
    packed: bool | None = Field(
        default=None,
        description="sequences packed to --seq-len, or batches of varying length (the "
                    "allocator then keeps stale loss segments; default varying)")
    offload: Offload = Field(default="none", description="none|optimizer|params")
    gpus: int = Field(
        default=1,
        description="number of GPUs (estimate; recommend picks per offer)")
    sharding: Sharding = Field(
        default="none",
        description="none|ddp|zero1|zero2|zero3|fsdp (estimate; recommend picks per offer)")
    tensor_parallel: int = Field(
        default=1,
        description="tensor-parallel degree (Megatron): each linear split over this many GPUs, "
                    "best within one NVLink domain")
    pipeline_parallel: int = Field(
        default=1,
        description="pipeline stages (1F1B; --grad-accum is the micro-batches per step)")
    virtual_stages: int = Field(
        default=1, description="interleaved virtual stages per pipeline rank")
    context_parallel: int = Field(
        default=1, description="context-parallel degree: the sequence split over GPUs")
    sequence_parallel: bool | None = Field(
        default=None,
        description="Megatron sequence parallelism over the tensor-parallel group (default "
                    "off)")
    distributed_optimizer: bool | None = Field(
        default=None,
        description="shard fp32 master weights and optimizer states over the data-parallel "
                    "replicas (Megatron's distributed optimizer, ZeRO-1; default off)")
    overlap_comm: bool | None = Field(
        default=None,
        description="DeepSpeed overlap_comm: reduce gradients beside backward (default: "
                    "DeepSpeed's, on for ZeRO-3 only)")
    interconnect: Interconnect | None = Field(
        default=None,
        description="nvlink|nvswitch|xgmi|pcie|pcie-no-p2p between the GPUs of a machine "
                    "(estimate; default: the GPU's, consumer cards without peer-to-peer)")
    network: Network | None = Field(
        default=None,
        description="infiniband|roce|efa|ethernet between machines beyond 8 GPUs (estimate; "
                    "default infiniband)")
    network_gbps: float | None = Field(
        default=None,
        description="Gb/s per machine between machines, all NICs (estimate; default 400 per "
                    "GPU, the HGX reference)")

    @field_validator(*CHOICES, mode="before")
    @classmethod
    def _one_of(cls, value: Any, info: Any) -> Any:
        if not isinstance(value, str):
            return value
        allowed = CHOICES[info.field_name]
        v = value.strip().lower()
        if v not in allowed:
            raise UserInputError(f"--{info.field_name.replace('_', '-')} {value!r} is not one "
                                 f"of {'|'.join(allowed)}")
        return v

    @field_validator("network_gbps")
    @classmethod
    def _positive_rate(cls, value: float | None) -> float | None:
        # one machine's NICs: the largest sold carry 8 × 800 Gb/s; 1e5 leaves room, not typos
        if value is not None and not 0 < value <= MAX_NETWORK_GBPS:
            raise UserInputError(f"--network-gbps must be above 0 and at most "
                                 f"{MAX_NETWORK_GBPS:,.0f} (Gb/s per machine), got {value:g}")
        return value

    def resolve(self) -> tuple[Architecture, JobSpec, list[str]]:
        """The architecture, validated job and warnings (UserInputError on nonsense)."""
        from gpuscout.sizing.frameworks import fill
        from gpuscout.sizing.limits import check_limits
        from gpuscout.sizing.types import JobSpec

        arch, warnings, model_quant = self._source()
        fields = self.model_dump(exclude={"model", "config", "params", "framework",
                                          "chunked_loss", "online", *PLACEMENT_FIELDS})
        if self.quant is None:
            if model_quant is not None and self.method == "full":
                raise UserInputError(f"{self.model} is a {model_quant} checkpoint, whose base "
                                     f"weights stay frozen: use a PEFT method (--method lora, "
                                     f"qlora...) or the unquantized base model")
            fields["quant"] = model_quant if model_quant and self.method != "qlora" else "none"
        if fields["loss"] is None and self.chunked_loss is not None:
            fields["loss"] = "fused" if self.chunked_loss else "eager"
        fields, notes = fill(self.framework, fields)
        if fields.pop("distributed_optimizer"):
            if fields["sharding"] in ("zero2", "zero3", "fsdp"):
                raise UserInputError(f"--distributed-optimizer is ZeRO-1; --sharding "
                                     f"{fields['sharding']} shards more already")
            mp = self.tensor_parallel * self.pipeline_parallel * self.context_parallel
            if self.gpus > mp:
                fields["sharding"] = "zero1"
        spec = JobSpec(**fields, variable_lengths=not fields.pop("packed"))
        check_limits(arch, spec)  # sizing/limits.py: a typo's values are refused by name
        if (self.framework in SDPA_PADDING_FRAMEWORKS and spec.variable_lengths
                and spec.batch_size > 1 and spec.flash_attention and arch.arch == "decoder"):
            notes.append(PADDED_SDPA_NOTE)
        if self.framework == "torchtune" and spec.variable_lengths and arch.arch == "decoder":
            notes.append(TORCHTUNE_PADDING_NOTE)
        return arch, spec, [*warnings, *notes]

    def placement(self, gpu: GpuSpec) -> Topology | None:
        """Where the job's GPUs sit on `gpu` machines, and what joins them (None: one GPU)."""
        from gpuscout.sizing.collectives import topology

        if self.gpus <= 1:
            return None
        return topology(gpu, self.gpus, interconnect=self.interconnect, network=self.network,
                        network_gbps=self.network_gbps)

    def architecture(self) -> tuple[Architecture, list[str]]:
        """Exactly one of model, config, params picks the architecture."""
        arch, warnings, _ = self._source()
        return arch, warnings

    def _source(self) -> tuple[Architecture, list[str], Quant | None]:
        from gpuscout.sizing.architectures import (
            from_hf_config,
            from_param_count,
            read_config_file,
        )
        from gpuscout.sizing.model_source import quantization_of, resolve_model

        given = [x for x in (self.model, self.config, self.params) if x is not None]
        if len(given) != 1:
            raise UserInputError("give exactly one of --model ID, --config PATH or --params N")
        if self.model is not None:
            found = resolve_model(self.model, online=self.online)
            return found.arch, found.notes, found.quant
        if self.config is not None:
            cfg = read_config_file(self.config)
            quant, note = quantization_of(cfg)
            return (from_hf_config(cfg, name=str(self.config)),
                    [f"architecture read from {self.config}", *([note] if note else [])], quant)
        assert self.params is not None
        arch = from_param_count(self.params)
        return arch, [f"unknown model: a generic Llama-shaped {self.params / 1e9:.3g}B stand-in "
                      f"({arch.num_layers} layers, hidden {arch.hidden_size}, vocabulary "
                      f"{arch.vocab_size}); activations and logits are rough"], None

    def resolve_per_offer(self) -> tuple[Architecture, JobSpec, list[str]]:
        """As a recommendation sizes it: the parallelism is chosen per offer, so the job
        starts on one GPU, and --offload applies to whichever ZeRO stage the offer gets."""
        arch, spec, warnings = self.model_copy(
            update={"gpus": 1, "sharding": "none", "offload": "none", "tensor_parallel": 1,
                    "pipeline_parallel": 1, "virtual_stages": 1, "context_parallel": 1,
                    "sequence_parallel": None, "distributed_optimizer": None}).resolve()
        if self.offload != "none":
            spec = spec.model_copy(update={"offload": self.offload})
        return arch, spec, warnings


# The job `gpuscout report` and the nightly report price unless told otherwise: Job's own
# defaults (the same as estimate's and recommend's) on Llama-3.1-8B, 100 M tokens.
MAIN_JOB = Job(model="meta-llama/Llama-3.1-8B")
MAIN_JOB_TOKENS = 10**8
