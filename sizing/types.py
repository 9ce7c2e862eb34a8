"""Inputs and outputs of the sizing engine. Memory is in GB (10^9 bytes), time in seconds.

`JobSpec` validates its own consistency: nonsense input raises `UserInputError` with a message
the CLI prints as one line.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.choices import (
    Dtype,
    Fp8Recipe,
    LoraTargets,
    Loss,
    Method,
    Nf4Backend,
    Offload,
    Optimizer,
    Quant,
    Sharding,
)
from gpuscout.sizing.uncertainty import Correction, Uncertainty

PEFT_METHODS: frozenset[str] = frozenset({"lora", "qlora", "dora", "ia3", "prefix", "prompt",
                                          "adapter"})
LORA_METHODS: frozenset[str] = frozenset({"lora", "qlora", "dora"})
MAX_GPUS = 4096


class JobSpec(BaseModel):
    """One fine-tuning job. `batch_size` is the micro-batch per GPU."""

    model_config = ConfigDict(frozen=True)

    method: Method = "lora"
    lora_rank: int = 16
    lora_targets: LoraTargets = "qv"
    lora_dropout: float = Field(
        default=0.0,
        description="LoRA dropout probability (PEFT LoraConfig default 0.0): above 0 each "
                    "adapted module runs a dropout kernel on its input and saves the result")
    num_virtual_tokens: int = Field(default=20, description="prefix / prompt tuning length")
    adapter_reduction: int = Field(default=16, description="bottleneck adapter: hidden / this")
    dtype: Dtype = "bf16"
    quant: Quant = "none"
    double_quant: bool = True
    upcast_non_quantized: bool = Field(
        default=True,
        description="PEFT prepare_model_for_kbit_training casts non-quantized params "
                    "(embeddings, head, norms) to fp32")
    optimizer: Optimizer = "adamw"
    mixed_precision: bool = Field(
        default=True,
        description="16-bit compute with fp32 master weights; False = pure 16-bit")
    batch_size: int = 1
    seq_len: int = 2048
    mean_seq_len: int | None = Field(
        default=None,
        description="mean tokens per sequence when lengths vary: the time per token follows "
                    "it, the memory peak the longest (seq_len)")
    decoder_seq_len: int | None = Field(
        default=None,
        description="target length (encoder-decoder)")
    grad_accum: int = 1
    grad_checkpointing: bool = True
    flash_attention: bool = True
    gpus: int = 1
    sharding: Sharding = "none"
    offload: Offload = "none"
    chunked_loss: bool = Field(
        default=False,
        description="input alias of loss='fused' (kept for callers of the bool); after "
                    "validation True exactly when the loss is not the eager one")
    loss: Loss = Field(
        default="eager",
        description="eager: full logits + fp32 softmax; chunked: per-chunk logits kept for "
                    "backward (torchtune, litgpt); fused: no logits outlive a chunk (Liger, "
                    "TRL chunked_nll); cce: Cut Cross-Entropy, no logits in memory; unsloth: "
                    "Unsloth's fused loss, chunks of up to 4 GiB of fp32 logits")
    activation_offloading: bool = False
    checkpoint_offload: bool = False
    optimizer_in_backward: bool = False
    grad_clipping: bool = Field(
        default=True,
        description="clip_grad_norm_ before each optimizer step: a norm over every gradient "
                    "and a multiply by the clip coefficient")
    compile: bool = False
    fused_kernels: bool = Field(
        default=False,
        description="Triton kernels for the norms, rotary embeddings, the gated MLP and LoRA "
                    "(Unsloth, Liger): each chain of pointwise ops is one kernel")
    fp32_loss: bool = Field(
        default=True,
        description="the eager loss runs over fp32 logits: torch.autocast's fp32 cross_entropy "
                    "or the model's own logits.float() (transformers' causal LMs); False: "
                    "cross-entropy on the model's 16-bit logits, as remote modeling code without "
                    "that cast runs under DeepSpeed's fp16/bf16 engine, or a pure-16-bit loop")
    adapter_fp32: bool = Field(
        default=True,
        description="PEFT adapters (and their gradients and optimizer states) in fp32, as "
                    "PEFT's autocast_adapter_dtype casts them; False: in the model's dtype "
                    "(torchtune, litgpt under bf16-true)")
    base_fp32: bool = Field(
        default=False,
        description="a PEFT job's unquantized frozen base kept in fp32 and cast to 16 bits by "
                    "autocast at each matmul (Lightning Fabric's bf16-mixed precision)")
    quantize_head: bool = Field(
        default=False,
        description="a quantized base's untied LM head quantized with the blocks (Lightning's "
                    "BitsandbytesPrecision replaces every nn.Linear)")
    embedding_grad: bool = Field(
        default=False,
        description="the input embedding of a PEFT job gets a dense gradient nothing steps or "
                    "frees (litgpt's bitsandbytes StableEmbedding swap)")
    logits_kept: bool = Field(
        default=False,
        description="the training loop holds the model's 16-bit logits through backward "
                    "(litgpt's fit())")
    nf4_backend: Nf4Backend = "bitsandbytes"
    fp8_recipe: Fp8Recipe = Field(
        default="te",
        description="with dtype fp8: how the FP8 operands are scaled and kept (te: Transformer "
                    "Engine's default for the GPU; delayed, tensorwise, mxfp8; torchao)")
    tensor_parallel: int = Field(
        default=1, description="Megatron tensor parallelism: each linear split over this many "
                               "GPUs, which all-reduce (or with sequence parallelism "
                               "all-gather and reduce-scatter) twice per layer and pass")
    pipeline_parallel: int = Field(
        default=1, description="pipeline stages (1F1B schedule); grad_accum is the number of "
                               "micro-batches per step")
    virtual_stages: int = Field(
        default=1, description="interleaved virtual stages per pipeline rank (the bubble "
                               "shrinks by this factor)")
    context_parallel: int = Field(
        default=1, description="context parallelism: the sequence split over this many GPUs, "
                               "keys and values passed around a ring")
    sequence_parallel: bool = Field(
        default=False, description="Megatron sequence parallelism: the norms' and dropouts' "
                                   "activations split over the tensor-parallel group too")
    train_embeddings: bool = False
    overlap_comm: bool | None = Field(
        default=None,
        description="DeepSpeed overlap_comm: gradients reduced on a side stream beside "
                    "backward; None: DeepSpeed's default, on for ZeRO-3 only")
    variable_lengths: bool = Field(
        default=True,
        description="batches differ in length (dynamic padding, no packing) and the CUDA cache"
                    " is kept between steps: the allocator then also holds the loss-buffer "
                    "segments of an earlier, shorter longest batch")

    @model_validator(mode="before")
    @classmethod
    def _qlora_means_nf4(cls, data: object) -> object:
        # QLoRA is LoRA on an NF4 base (Dettmers et al. 2023); naming it is enough.
        if isinstance(data, dict) and data.get("method") == "qlora" and data.get(
                "quant", "none") == "none":
            data = {**data, "quant": "nf4"}
        if isinstance(data, dict):
            loss = data.get("loss")
            if loss is None:
                loss = "fused" if data.get("chunked_loss") else "eager"
            data = {**data, "loss": loss, "chunked_loss": loss != "eager"}
            # the GPUs beyond the model-parallel group form data-parallel replicas: Megatron's
            # DDP, unless a sharding is named
            mp = 1
            for key in ("tensor_parallel", "pipeline_parallel", "context_parallel"):
                value = data.get(key)
                mp *= value if isinstance(value, int) and value > 0 else 1
            gpus = data.get("gpus", 1)
            if mp > 1 and data.get("sharding", "none") == "none" and isinstance(gpus, int) \
                    and gpus > mp:
                data = {**data, "sharding": "ddp"}
        return data

    @model_validator(mode="after")
    def _check(self) -> JobSpec:
        for name in ("batch_size", "seq_len", "grad_accum", "gpus", "num_virtual_tokens",
                     "adapter_reduction"):
            value = getattr(self, name)
            if value < 1:
                raise UserInputError(f"--{name.replace('_', '-')} must be at least 1, "
                                     f"got {value}")
        if self.mean_seq_len is not None and not 1 <= self.mean_seq_len <= self.seq_len:
            raise UserInputError(f"--mean-seq-len must be between 1 and --seq-len "
                                 f"({self.seq_len}), got {self.mean_seq_len}")
        if self.decoder_seq_len is not None and self.decoder_seq_len < 1:
            raise UserInputError(f"decoder length must be at least 1, got "
                                 f"{self.decoder_seq_len}")
        if self.method in LORA_METHODS and self.lora_rank < 1:
            raise UserInputError(f"--lora-rank must be at least 1 for {self.method}, "
                                 f"got {self.lora_rank}")
        if self.method == "full" and self.quant != "none":
            raise UserInputError(f"--quant {self.quant} freezes the base weights: it needs a "
                                 f"PEFT method (qlora, lora, dora, ...), not --method full")
        if self.gpus > MAX_GPUS:
            raise UserInputError(f"--gpus {self.gpus} is beyond what this model covers "
                                 f"({MAX_GPUS})")
        self._check_parallel()
        self._check_sharding()
        self._check_knobs()
        return self

    def _check_sharding(self) -> None:
        if self.sharding == "none" and self.gpus > self.model_parallel:
            raise UserInputError(f"--sharding none runs on one GPU; {self.gpus} GPUs need "
                                 f"ddp, zero1, zero2, zero3 or fsdp")
        if self.sharding != "none" and self.gpus == self.model_parallel > 1:
            raise UserInputError(f"--sharding {self.sharding}: the {self.gpus} GPUs all hold "
                                 f"parts of one model replica (no data parallelism)")
        if self.offload == "params" and self.sharding not in ("zero3", "fsdp"):
            raise UserInputError("--offload params needs --sharding zero3 or fsdp")
        if self.offload == "optimizer" and self.sharding in ("none", "ddp"):
            raise UserInputError("--offload optimizer needs --sharding zero1, zero2, zero3 "
                                 "or fsdp (ZeRO-Offload / FSDP CPU offload)")
        if self.offload == "optimizer" and self.sharding == "fsdp":
            raise UserInputError("FSDP offloads parameters, gradients and optimizer state "
                                 "together: use --offload params with --sharding fsdp")

    def _check_parallel(self) -> None:
        for name in ("tensor_parallel", "pipeline_parallel", "virtual_stages",
                     "context_parallel"):
            if getattr(self, name) < 1:
                raise UserInputError(f"--{name.replace('_', '-')} must be at least 1, "
                                     f"got {getattr(self, name)}")
        mp = self.model_parallel
        if self.gpus % mp:
            raise UserInputError(f"--gpus {self.gpus} is not a multiple of tensor × pipeline × "
                                 f"context parallelism ({mp})")
        if self.sequence_parallel and self.tensor_parallel == 1:
            raise UserInputError("--sequence-parallel splits activations over the tensor-"
                                 "parallel group: it needs --tensor-parallel 2 or more")
        if self.virtual_stages > 1 and self.pipeline_parallel == 1:
            raise UserInputError("--virtual-stages interleaves pipeline stages: it needs "
                                 "--pipeline-parallel 2 or more")
        if mp > 1 and self.sharding not in ("none", "ddp", "zero1"):
            raise UserInputError(f"tensor, pipeline and context parallelism combine with data "
                                 f"parallelism (ddp) or the distributed optimizer (zero1), not "
                                 f"--sharding {self.sharding}")
        if mp > 1 and self.offload != "none":
            raise UserInputError("--offload is not modelled with tensor, pipeline or context "
                                 "parallelism")
        if self.dtype == "fp8" and self.quant != "none":
            raise UserInputError(f"--dtype fp8 runs a 16-bit model's GEMMs in FP8 (Transformer "
                                 f"Engine, torchao float8); a {self.quant} base is another "
                                 f"path: use --dtype bf16")

    @property
    def model_parallel(self) -> int:
        """GPUs one model replica spans: tensor × pipeline × context parallel."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def data_parallel(self) -> int:
        return self.gpus // self.model_parallel

    def _check_knobs(self) -> None:
        if not 0.0 <= self.lora_dropout < 1.0:
            raise UserInputError(f"--lora-dropout is a probability in [0, 1), got "
                                 f"{self.lora_dropout}")
        if self.optimizer_in_backward and self.grad_accum > 1:
            raise UserInputError("--optimizer-in-backward frees each gradient as soon as it is "
                                 "applied: it needs --grad-accum 1 (torchtune raises the same)")
        if self.optimizer_in_backward and self.grad_clipping:
            raise UserInputError("--optimizer-in-backward applies each gradient as it is made, "
                                 "before any norm over all of them: it needs "
                                 "--no-grad-clipping (torchtune raises the same)")
        if self.checkpoint_offload and not self.grad_checkpointing:
            raise UserInputError("--checkpoint-offload offloads the checkpointed block inputs: "
                                 "it needs --grad-checkpointing")
        if self.base_fp32 and self.quant != "none":
            raise UserInputError(f"--base-fp32 keeps an unquantized frozen base in fp32; the "
                                 f"base here is {self.quant}")
        if self.quantize_head and self.quant == "none":
            raise UserInputError("--quantize-head quantizes the LM head with a quantized base: "
                                 "it needs --quant (or --method qlora)")
        if self.embedding_grad and not self.is_peft:
            raise UserInputError("--embedding-grad is a frozen embedding's stray gradient: it "
                                 "needs a PEFT method (--method full trains the embedding)")
        if self.train_embeddings and not self.is_peft:
            raise UserInputError("--train-embeddings adds embeddings and LM head to a PEFT "
                                 "method's trainable set; --method full trains them already")

    @property
    def is_peft(self) -> bool:
        return self.method in PEFT_METHODS

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.batch_size * self.seq_len

    @property
    def positions(self) -> int:
        """Positions one sequence occupies in every layer: prompt tuning prepends its virtual
        tokens to the input embeddings (Lester et al. 2021; PEFT concatenates them before the
        first layer), so each layer, the head and the loss run over them too; prefix tuning
        only adds keys and values to attention."""
        return self.seq_len + (self.num_virtual_tokens if self.method == "prompt" else 0)

    @property
    def timed(self) -> JobSpec:
        """The job as the clock sees it: micro-batches of the mean length when one is given
        (a token-rate measurement counts the tokens a batch holds, not its longest sample)."""
        if self.mean_seq_len is None:
            return self
        return self.model_copy(update={"seq_len": self.mean_seq_len, "mean_seq_len": None})


class MemoryEstimate(BaseModel):
    """Per-GPU memory at the training peak, split into terms that are all live at that peak.

    What the job needs is its tensors and the CUDA context (`need_gb_per_gpu`); the caching
    allocator's effects (fragmentation, stale loss segments of variable-length batches) are a
    margin on top (`margin_gb`), which the allocator gives back before it fails. `fits` is the
    need against what the card gives (`usable_gb_per_gpu`); `fits_with_margin` says whether
    the margin fits too."""

    need_gb_per_gpu: float = Field(
        default=0.0, description="what must fit: tensors at the peak + CUDA context")
    margin_gb: dict[str, float] = Field(
        default_factory=dict,
        description="the allocator's margin above the need, by cause (fragmentation, "
                    "stale_loss_segments), not capped by the card")
    usable_gb_per_gpu: float | None = Field(
        default=None, description="GB a job may use of the card (95 % of its GiB; None: no GPU)")
    fits_with_margin: bool | None = Field(
        default=None, description="need + margin within usable (None: no GPU)")
    peak_gb_per_gpu: float = Field(
        description="device memory the run shows (nvidia-smi): need + the allocator's margin, "
                    "which the allocator trims to the card before it fails")
    allocated_gb: float = Field(description="tensor memory (torch.cuda.max_memory_allocated)")
    reserved_gb: float = Field(description="allocator pool (torch.cuda.max_memory_reserved)")
    breakdown: dict[str, float] = Field(description="GB per term; sums to peak_gb_per_gpu")
    trainable_params: int
    total_params: int
    host_ram_gb: float = Field(description="CPU RAM for offloaded states, whole machine")
    fits: bool | None = Field(
        default=None,
        description="need_gb_per_gpu within usable_gb_per_gpu (None: no GPU)")
    notes: list[str] = Field(default_factory=list)


Bound = Literal["compute", "memory", "host", "communication"]


class TimeEstimate(BaseModel):
    flops_per_token: float = Field(description="model FLOPs per token (no recompute)")
    hardware_flops_per_token: float = Field(description="incl. activation recompute")
    tokens_per_s: float = Field(description="whole job, all GPUs")
    tokens_per_s_per_gpu: float
    step_time_s: float = Field(description="one optimizer step (grad_accum micro-batches)")
    hours: float | None = None
    mfu: float = Field(description="model FLOPs utilisation of one GPU: tokens_per_s_per_gpu × "
                                   "flops_per_token over the GPU's dense peak")
    scaling_efficiency: float = Field(
        description="multi-GPU: compute / (compute + exposed communication and offload "
                    "traffic)")
    peak_tflops: float
    bound: Bound = Field(
        default="compute", description="what binds: the matmuls (compute), memory traffic "
                                       "(memory), the host's kernel launches (host), or the "
                                       "collectives when they take longer than the compute "
                                       "beside them (communication)")
    optimizer_step_s: float = Field(default=0.0, description="the optimizer update, memory "
                                    "bound, once per step")
    communication_s: float = Field(
        default=0.0, description="one step's collectives on their links, in all (0 on one GPU)")
    communication_exposed_s: float = Field(
        default=0.0, description="of communication_s, what compute does not hide: part of the "
                                 "step")
    placement: str | None = Field(
        default=None, description="the links the collectives ran on (several GPUs)")
    micro_batch_s: dict[str, float] = Field(
        default_factory=dict,
        description="one micro-batch's seconds per kind of work: matmul, attention, pointwise, "
                    "launch (host), weights (the floor of reading them once per pass)")
    notes: list[str] = Field(default_factory=list)


class Estimate(BaseModel):
    model_id: str
    gpu_id: str | None
    dtype: Dtype = Field(description="the precision the job runs in on this GPU")
    job: JobSpec
    memory: MemoryEstimate
    time: TimeEstimate | None
    flops_per_token: float = Field(description="model FLOPs per token (no recompute)")
    notes: list[str] = Field(default_factory=list)
    correction: Correction | None = Field(
        default=None, description="the user's own runs of this GPU, framework and method, "
        "when they corrected the figures above (gpuscout.pipeline.measured)")
    uncertainty: Uncertainty | None = Field(
        default=None, description="the range of tokens/s and hours: the calibration's spread "
        "in the job's regime, narrowed by the user's runs")
