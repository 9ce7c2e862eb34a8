"""Collectives on the links they run on: the communication a sharding issues, how long it takes
on the placement's links, and how much of it compute hides. Pure.

**One collective.** NCCL runs all-gather and reduce-scatter as a ring (and all-reduce beyond two
machines; NVIDIA/nccl src/graph/tuning.cc): each GPU sends k·(n−1)/n·S of an S-byte buffer,
k = 1 for an all-gather or a reduce-scatter and 2 for an all-reduce, at the ring's bus
bandwidth, after NCCL's latency model — a base per call plus one hop per ring step (n−1 steps,
2(n−1) for an all-reduce), each hop at its link's latency, the hops between machines at the
network's. NCCL takes the faster of its LL protocol (half the bandwidth, short hops) and Simple
for the size, so small messages are latency-bound. The figures are in sizing/data/links.csv, a
source per row: achievable, not datasheet, bandwidth.

**The ring's bandwidth** is that of its slowest hop: each GPU's link inside the machine at its
achievable share (NVLink, NVSwitch, AMD's Infinity Fabric mesh, PCIe with peer-to-peer, or PCIe
through host memory where the driver refuses peer-to-peer), and, across machines, the machine's
NICs together at theirs: every ring crosses each machine boundary once and NCCL spreads its rings
over all the machine's NICs (stas00/ml-engineering network/README.md, "Inter-node speed depends
on intra-node speed": a flat ring over a P6-B200 node's eight NICs is within 6 % of measured).

**What each sharding issues**, read from the frameworks' code:
- DDP (torch DistributedDataParallel): an all-reduce of the gradients in buckets of
  `bucket_cap_mb` = 25 MiB (the first 1 MiB), once per optimizer step (accelerate's
  `accumulate` runs the other micro-batches under `no_sync`), overlapped with the backward pass:
  only what backward cannot cover, and at least the last bucket, is exposed.
- DeepSpeed ZeRO-1/2: the gradients reduce-scattered in buckets of `reduce_bucket_size` = 5e8
  elements (ZeRO-2 every micro-batch, ZeRO-1 at the step), the updated weights all-gathered
  after the step in buckets of `allgather_bucket_size` = 5e8 — together an all-reduce's volume.
  `overlap_comm` defaults to off below stage 3 (deepspeed/runtime/zero/config.py,
  `overlap_comm_valid`): the reduction then runs on the compute stream and is exposed; with it
  on (`--overlap-comm`, as many shipped configs set it) it runs beside backward as DDP's. The
  all-gather after the step has nothing beside it either way.
- DeepSpeed ZeRO-3: every module's parameters of at least `stage3_param_persistence_threshold`
  = 1e5 elements are all-gathered before its forward (one call per module, prefetched
  `stage3_prefetch_bucket_size` ahead) and again before its backward, except those reused
  within `stage3_max_reuse_distance` = 1e9 elements; the gradients are reduce-scattered in
  5e8-element buckets with `overlap_comm` on. LoRA matrices below the threshold stay whole.
- FSDP (FULL_SHARD, as accelerate wraps it: one unit per decoder layer, the root holding the
  embeddings, head and final norm; under PEFT also one unit per trainable leaf module, LoRA's A
  and B each — peft `fsdp_auto_wrap_policy`): each unit all-gathered before its forward and,
  resharded after it, again before its backward (the root stays gathered between the two,
  torch `_post_forward_reshard`); the units with trainable parameters reduce-scatter their
  gradients after their backward, every micro-batch. The frozen base weights are gathered too,
  in their storage type (QLoRA's NF4 in its bf16 storage).

**Overlap (stated).** FSDP and ZeRO-3 fetch the next unit while the current one computes (the
host issues the next all-gather ahead of the GPU; BACKWARD_PRE prefetch in backward), so a layer
takes the longer of its compute and its communication; what cannot overlap is the first gather
of each pass (the root or the embeddings) and the reduce-scatter of the last bucket. DDP
overlaps with backward as above; ZeRO-1/2 at DeepSpeed's defaults not at all. Compute is taken
as running at full speed beside the collectives (NCCL's kernels also use SMs: not modelled).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import Interconnect, Network
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32
from gpuscout.sizing.memory_weights import GPTQ_BYTES, INT8_BYTES, nf4_bytes, trainable_bytes
from gpuscout.sizing.peft import is_lora_target, trainable_params
from gpuscout.sizing.types import Dtype, JobSpec

LINKS_CSV = Path(__file__).parent / "data" / "links.csv"
# PCIe x16, one direction: Gen3 15.75, Gen4 31.5, Gen5 63 GB/s (PCI-SIG), by the GPU's generation
PCIE_GBS = {"Volta": 15.75, "Turing": 15.75, "Pascal": 15.75, "Ampere": 31.5,
            "Ada Lovelace": 31.5, "Ada": 31.5, "Hopper": 63.0, "Blackwell": 63.0}
DEFAULT_PCIE_GBS = 31.5
# One machine of an HGX-class board: 8 GPUs; between machines the HGX reference design gives
# each GPU a 400 Gb/s NIC (NVIDIA DGX H100 / HGX), assumed when a placement names no network.
GPUS_PER_NODE = 8
NIC_GBPS_PER_GPU = 400.0
# torch DistributedDataParallel: bucket_cap_mb=25 and the first bucket of
# dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB (torch/nn/parallel/distributed.py)
DDP_BUCKET_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 2**20
# DeepSpeed ZeRO defaults (deepspeed/runtime/zero/config.py): reduce_bucket_size and
# allgather_bucket_size 5e8 elements, stage3_param_persistence_threshold 1e5 elements,
# stage3_max_reuse_distance 1e9 elements
ZERO_BUCKET_ELEMENTS = 5e8
ZERO3_PERSISTENCE_ELEMENTS = 1e5
ZERO3_REUSE_ELEMENTS = 1e9
# NCCL's LL protocol moves half its lines as flags (tuning.cc: ring LL busBw × 0.5)
LL_BANDWIDTH_SHARE = 0.5

Collective = Literal["all_gather", "reduce_scatter", "all_reduce"]


@dataclass(frozen=True)
class LinkFigures:
    efficiency: float  # achievable ring bus bandwidth / datasheet one-way bandwidth
    ll_hop_us: float
    simple_hop_us: float


@cache
def _rows() -> dict[tuple[str, str], LinkFigures]:
    with LINKS_CSV.open(encoding="utf-8", newline="") as f:
        return {(r["link"], r["applies_to"]): LinkFigures(
            float(r["efficiency"] or 0.0), float(r["ll_hop_us"]), float(r["simple_hop_us"]))
            for r in csv.DictReader(f)}


def link_figures(link: str, gpu: GpuSpec | None = None) -> LinkFigures:
    """The row of `link` for `gpu`: its own, its compute capability's (sm86), its
    architecture's, else the link's default."""
    rows = _rows()
    keys: list[str] = []
    if gpu is not None:
        cc = gpu.cuda_capability
        keys += [gpu.canonical_id, *([f"sm{round(cc * 10)}"] if cc else []), gpu.architecture]
    for key in (*keys, "*"):
        if (link, key) in rows:
            return rows[link, key]
    raise KeyError(f"{LINKS_CSV.name} has no row for {link}")


class Topology(BaseModel):
    """Where a job's GPUs sit: machines of `gpus_per_node` GPUs joined by `interconnect`, and
    `nodes` machines joined by `network` at `network_gbps` per machine (all NICs)."""

    model_config = ConfigDict(frozen=True)

    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(default=1, ge=1)
    interconnect: Interconnect
    link_gbs: float = Field(gt=0, description="datasheet GB/s one way per GPU inside a machine, "
                                              "for a ring over its GPUs")
    network: Network | Literal["nvlink-domain"] | None = None
    network_gbps: float | None = Field(default=None, gt=0, description="Gb/s per machine")
    assumed: tuple[str, ...] = Field(default=(), description="what was assumed, not given")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def describe(self) -> str:
        inside = {"nvlink": "NVLink", "nvswitch": "NVSwitch", "xgmi": "Infinity Fabric",
                  "pcie": "PCIe (peer-to-peer)",
                  "pcie-no-p2p": "PCIe through host memory (no peer-to-peer)"}[self.interconnect]
        text = f"{inside} at {self.link_gbs:g} GB/s per GPU one way"
        if self.nodes > 1:
            net = {"infiniband": "InfiniBand", "roce": "RoCE", "efa": "EFA",
                   "ethernet": "Ethernet", "nvlink-domain": "NVLink (one domain)",
                   None: "network"}[self.network]
            text = (f"{self.nodes} machines × {self.gpus_per_node} GPUs, {text} inside, "
                    f"{net} {self.network_gbps:g} Gb/s per machine between")
        return text


def _pcie_gbs(gpu: GpuSpec) -> float:
    return PCIE_GBS.get(gpu.architecture, DEFAULT_PCIE_GBS)


def _bridge_ways(gpu: GpuSpec) -> int:
    ways = re.search(r"(\d)-way", gpu.nvlink.lower())
    return int(ways.group(1)) if ways else 2


def _xgmi_link_gbs(gpu: GpuSpec) -> float | None:
    """One Infinity Fabric link, one way: the datasheet's "(7x128)" is per link, both ways."""
    m = re.search(r"\((\d+)x(\d+(?:\.\d+)?)\)", gpu.nvlink)
    return float(m.group(2)) / 2 if m else None


def default_interconnect(gpu: GpuSpec, per_node: int) -> Interconnect:
    """What a machine of `per_node` of this GPU uses between its GPUs, from the catalog."""
    text = gpu.nvlink.lower()
    if gpu.form_factor in ("SXM", "Superchip") and gpu.nvlink_gbps:
        # HGX boards from the A100 on switch every GPU to every other; a V100 SXM2 board is a
        # hybrid cube mesh of direct links
        return "nvlink" if gpu.architecture in ("Volta", "Pascal") else "nvswitch"
    if gpu.form_factor == "OAM" and gpu.vendor == "AMD":
        return "xgmi"
    if gpu.nvlink_gbps and gpu.form_factor == "TPU":
        return "nvlink"
    if gpu.nvlink_gbps and "bridge" in text and per_node <= _bridge_ways(gpu):
        return "nvlink"
    # GeForce drivers refuse peer-to-peer over PCIe: NCCL then stages through host memory
    return "pcie-no-p2p" if gpu.family == "consumer" else "pcie"


def _link_gbs(gpu: GpuSpec, interconnect: Interconnect, per_node: int) -> float:
    if interconnect in ("pcie", "pcie-no-p2p"):
        return _pcie_gbs(gpu)
    if interconnect == "xgmi":
        link = _xgmi_link_gbs(gpu)
        if link is None:
            if not gpu.nvlink_gbps:
                raise UserInputError(f"--interconnect xgmi: {gpu.canonical_id} lists no Infinity "
                                     f"Fabric bandwidth")
            return gpu.nvlink_gbps / 2
        return link * max(1, per_node - 1)  # a mesh: a ring over n GPUs uses n − 1 links each
    if not gpu.nvlink_gbps:
        raise UserInputError(f"--interconnect {interconnect}: {gpu.canonical_id} has no NVLink "
                             f"(the catalog lists {gpu.nvlink!r})")
    return gpu.nvlink_gbps / 2  # datasheets quote both directions together


def topology(gpu: GpuSpec, gpus: int, *, interconnect: Interconnect | None = None,
             network: Network | Literal["nvlink-domain"] | None = None,
             network_gbps: float | None = None, gpus_per_node: int | None = None) -> Topology:
    """The placement of `gpus` GPUs: machines of `gpus_per_node` (default up to 8) joined as
    the catalog's GPU is (or as `interconnect` says), and, beyond one machine, `network` at
    `network_gbps` per machine (default: InfiniBand at 400 Gb/s per GPU, the HGX reference)."""
    per_node = gpus_per_node or min(gpus, GPUS_PER_NODE)
    nodes = max(1, math.ceil(gpus / per_node))
    if gpus_per_node is None and nodes > 1:
        per_node = math.ceil(gpus / nodes)
    assumed: list[str] = []
    link = interconnect or default_interconnect(gpu, per_node)
    if interconnect is None and per_node > 1:
        assumed.append(f"{link} between the GPUs of a machine (the catalog's {gpu.canonical_id})")
    if nodes > 1 or network is not None or network_gbps is not None:
        if network is None:
            network = "infiniband"
            if nodes > 1:
                assumed.append("InfiniBand between machines")
        if network_gbps is None:
            network_gbps = NIC_GBPS_PER_GPU * per_node
            if nodes > 1:
                assumed.append(f"{network_gbps:g} Gb/s per machine ({NIC_GBPS_PER_GPU:g} Gb/s "
                               f"per GPU, the HGX reference)")
    return Topology(gpus_per_node=per_node, nodes=nodes, interconnect=link,
                    link_gbs=_link_gbs(gpu, link, per_node), network=network,
                    network_gbps=network_gbps, assumed=tuple(assumed))


def bus_gbs(topo: Topology, gpu: GpuSpec) -> float:
    """Achievable GB/s of a ring over the topology: the slower of each GPU's link inside its
    machine and, across machines, the machine's NICs together."""
    intra = topo.link_gbs * link_figures(topo.interconnect, gpu).efficiency
    if topo.nodes == 1:
        return intra
    assert topo.network is not None and topo.network_gbps is not None
    net_link = "nvswitch" if topo.network == "nvlink-domain" else topo.network
    net = topo.network_gbps / 8 * link_figures(net_link, gpu).efficiency
    return net if topo.gpus_per_node == 1 else min(intra, net)


def collective_s(kind: Collective, size_bytes: float, topo: Topology, gpu: GpuSpec) -> float:
    """Seconds of one ring collective over an S-byte buffer (see the module docstring)."""
    n = topo.gpus
    if n <= 1 or size_bytes <= 0:
        return 0.0
    k = 2 if kind == "all_reduce" else 1
    steps, inter = k * (n - 1), k * (topo.nodes - 1)
    base = link_figures("base")
    hop = link_figures(topo.interconnect, gpu)
    net = hop if topo.nodes == 1 else link_figures(
        "nvswitch" if topo.network == "nvlink-domain" else str(topo.network), gpu)
    moved = k * (n - 1) / n * size_bytes
    bw = bus_gbs(topo, gpu) * 1e9
    ll = (base.ll_hop_us + (steps - inter) * hop.ll_hop_us + inter * net.ll_hop_us) * 1e-6
    simple = (base.simple_hop_us + (steps - inter) * hop.simple_hop_us
              + inter * net.simple_hop_us) * 1e-6
    return min(ll + moved / (bw * LL_BANDWIDTH_SHARE), simple + moved / bw)


def _bucketed(kind: Collective, total: float, bucket: float, topo: Topology, gpu: GpuSpec,
              first: float | None = None) -> tuple[float, float, int]:
    """(seconds of all buckets, seconds of the last, calls) of `total` bytes in buckets."""
    if total <= 0:
        return 0.0, 0.0, 0
    sizes: list[float] = []
    rest = total
    if first is not None:
        sizes.append(min(first, rest))
        rest -= sizes[-1]
    full, part = divmod(rest, bucket)
    t_full = collective_s(kind, bucket, topo, gpu)
    seconds = sum(collective_s(kind, s, topo, gpu) for s in sizes) + int(full) * t_full
    calls = len(sizes) + int(full)
    last = t_full if full else (collective_s(kind, sizes[-1], topo, gpu) if sizes else 0.0)
    if part > 0:
        t_part = collective_s(kind, part, topo, gpu)
        seconds, calls, last = seconds + t_part, calls + 1, t_part
    return seconds, last, calls


@dataclass(frozen=True)
class Communication:
    """The collectives of one optimizer step: link time and what compute does not hide."""

    micro_s: float  # link time of what each micro-batch issues
    step_s: float  # link time of what the step issues once
    exposed_micro_s: float  # of micro_s, not hidden by the micro-batch's compute
    exposed_step_s: float  # of step_s (and of the last micro-batch), not hidden
    calls_per_step: int
    what: str  # the collectives, in words

    def total_s(self, grad_accum: int) -> float:
        return self.micro_s * grad_accum + self.step_s

    def exposed_s(self, grad_accum: int) -> float:
        return self.exposed_micro_s * grad_accum + self.exposed_step_s


@dataclass(frozen=True)
class _Sizes:
    """What the sharded units hold, in bytes as gathered, and the gradients' bytes."""

    layers: float  # every decoder/encoder layer's weights as all-gathered
    root: float  # embeddings, head, final norm
    embeddings: float
    grads: float  # every trainable parameter's gradient as reduced
    grad_elem: float  # bytes per gradient element
    leaves_per_layer: float  # PEFT modules FSDP wraps on their own (LoRA A and B)
    leaf_weights: float  # their weights in all
    modules_per_layer: float  # ZeRO-3: partitioned modules (one fetch call each)
    adapter_partitioned: float  # ZeRO-3: adapter weights above the persistence threshold


def _sizes(arch: Architecture, job: JobSpec, dtype: Dtype) -> _Sizes:
    b = FP32 if dtype == "fp32" else DTYPE_BYTES[dtype]
    peft = job.is_peft
    if peft and job.quant == "nf4":
        lin = nf4_bytes(job)
    elif peft and job.quant == "int8":
        lin = INT8_BYTES
    elif peft and job.quant == "gptq":
        lin = GPTQ_BYTES
    else:
        lin = b
    layers_n = max(1, len(arch.blocks()))
    in_layers_other = max(0, arch.non_linear_params - arch.embedding_params - arch.lm_head_params)
    root_params = arch.embedding_params + arch.lm_head_params
    state = trainable_bytes(arch, job, dtype)
    pt = trainable_params(arch, job)
    lora = job.method in ("lora", "qlora", "dora")
    targeted = [m for blk in arch.blocks() for m in blk
                if lora and is_lora_target(m, job.lora_targets)]
    leaves = sum(2 * m.count for m in targeted) / layers_n
    r = job.lora_rank
    partitioned = sum(m.count * x for m in targeted for x in (r * m.d_in, r * m.d_out)
                      if x >= ZERO3_PERSISTENCE_ELEMENTS)
    modules = sum(m.count for blk in arch.blocks() for m in blk
                  if m.d_in * m.d_out >= ZERO3_PERSISTENCE_ELEMENTS) / layers_n
    modules += sum(m.count for m in targeted for x in (r * m.d_in, r * m.d_out)
                   if x >= ZERO3_PERSISTENCE_ELEMENTS) / layers_n
    adapter_elem = state.weight / pt if pt else FP32
    return _Sizes(layers=arch.linear_weight_params * lin + in_layers_other * b,
                  root=root_params * b, embeddings=arch.embedding_params * b,
                  grads=state.grad, grad_elem=state.grad / pt if pt else b,
                  leaves_per_layer=leaves,
                  leaf_weights=state.weight if lora else 0.0,
                  modules_per_layer=modules,
                  adapter_partitioned=partitioned * adapter_elem)


def communication(arch: Architecture, job: JobSpec, dtype: Dtype, topo: Topology,
                  gpu: GpuSpec, forward_s: float, backward_s: float) -> Communication | None:
    """The sharding's collectives over `topo` for one step, given one micro-batch's forward
    and backward seconds (recomputation is part of backward). None on one GPU."""
    if topo.gpus <= 1 or job.sharding == "none":
        return None
    s = _sizes(arch, job, dtype)
    if job.sharding == "ddp":
        total, last, calls = _bucketed("all_reduce", s.grads, DDP_BUCKET_BYTES, topo, gpu,
                                       first=DDP_FIRST_BUCKET_BYTES)
        return Communication(0.0, total, 0.0, max(last, total - backward_s), calls,
                             f"all-reduce of {s.grads / 1e9:.3g} GB of gradients in "
                             f"{calls} buckets once a step, beside backward")
    if job.sharding in ("zero1", "zero2"):
        bucket = ZERO_BUCKET_ELEMENTS * s.grad_elem
        rs, rs_last, rs_calls = _bucketed("reduce_scatter", s.grads, bucket, topo, gpu)
        weights = trainable_bytes(arch, job, dtype).weight
        ag, _, ag_calls = _bucketed("all_gather", weights,
                                    ZERO_BUCKET_ELEMENTS * (weights / max(1, trainable_params(
                                        arch, job))), topo, gpu)
        overlap = bool(job.overlap_comm)  # DeepSpeed's default: off below stage 3
        rs_exposed = max(rs_last, rs - backward_s) if overlap else rs
        every = job.sharding == "zero2"
        return Communication(rs if every else 0.0, ag + (0.0 if every else rs),
                             rs_exposed if every else 0.0,
                             ag + (0.0 if every else rs_exposed),
                             rs_calls * (job.grad_accum if every else 1) + ag_calls,
                             f"reduce-scatter of {s.grads / 1e9:.3g} GB of gradients "
                             f"{'every micro-batch' if every else 'once a step'} "
                             + ("beside backward" if overlap else
                                "on the compute stream (DeepSpeed overlap_comm off)")
                             + f", all-gather of {weights / 1e9:.3g} GB of weights after the "
                             f"step")
    return _sharded_weights(arch, job, s, topo, gpu, forward_s, backward_s)


def _sharded_weights(arch: Architecture, job: JobSpec, s: _Sizes, topo: Topology,
                     gpu: GpuSpec, forward_s: float, backward_s: float) -> Communication:
    """ZeRO-3 and FSDP: per-layer gathers beside the layer before (module docstring). A layer's
    forward carries its gather, its backward its gather again and a reduce-scatter; the pass's
    first gather and the last reduce-scatter have no compute beside them."""
    layers = max(1, len(arch.blocks()))
    per_layer = s.layers / layers
    t_f, t_b = forward_s / layers, backward_s / layers
    if job.sharding == "fsdp":
        units = s.leaves_per_layer * layers
        leaf = s.leaf_weights / units if units else 0.0
        gather = collective_s("all_gather", per_layer, topo, gpu) + s.leaves_per_layer * (
            collective_s("all_gather", leaf, topo, gpu))
        backward_gather = gather
        if units:  # only the adapter units train: each reduces its own gradient
            reduce = s.leaves_per_layer * collective_s("reduce_scatter", s.grads / units,
                                                       topo, gpu)
            root_reduce = 0.0
        else:  # every unit trains (or the adapters live inside the layer units)
            trained_root = 0.0 if job.is_peft else s.grads * (
                arch.embedding_params + arch.lm_head_params) / max(1, arch.total_params)
            reduce = collective_s("reduce_scatter", (s.grads - trained_root) / layers, topo,
                                  gpu)
            root_reduce = collective_s("reduce_scatter", trained_root, topo, gpu)
        first = collective_s("all_gather", s.root, topo, gpu)  # the root, kept till backward
        outside, tail = first + root_reduce, reduce + root_reduce
        calls = layers * (2 * (1 + s.leaves_per_layer) + max(1.0, s.leaves_per_layer)) + 2
        what = (f"FSDP: all-gather of {s.layers / 1e9:.3g} GB of layers in forward and again "
                f"in backward and of the {s.root / 1e9:.3g} GB root once, reduce-scatter of "
                f"{s.grads / 1e9:.3g} GB of gradients")
        if units:
            what += f"; {units:.0f} adapter units (LoRA A and B) gathered and reduced on their own"
    else:  # DeepSpeed ZeRO-3
        fetches = max(1.0, s.modules_per_layer)
        gather = collective_s("all_gather", (per_layer + s.adapter_partitioned / layers)
                              / fetches, topo, gpu) * fetches
        kept = min(1.0, ZERO3_REUSE_ELEMENTS / 2 / max(1, arch.total_params))
        backward_gather = gather * (1 - kept)
        rs_total, rs_last, rs_calls = _bucketed("reduce_scatter", s.grads,
                                                ZERO_BUCKET_ELEMENTS * s.grad_elem, topo, gpu)
        first = collective_s("all_gather", s.embeddings, topo, gpu)
        # the head is fetched beside the last layers; the last bucket waits for backward's end
        outside = first + collective_s("all_gather", s.root - s.embeddings, topo, gpu)
        if job.overlap_comm is False:  # reduced on the compute stream: nothing hides it
            reduce, tail = 0.0, rs_total
            outside += rs_total
        else:
            reduce, tail = rs_total / layers, rs_last
        calls = layers * fetches * (2 - kept) + rs_calls + 2
        what = (f"ZeRO-3: all-gather of {(s.layers + s.adapter_partitioned) / 1e9:.3g} GB in "
                f"{fetches * layers:.0f} module fetches in forward and of {1 - kept:.0%} of it "
                f"again in backward, reduce-scatter of {s.grads / 1e9:.3g} GB of gradients in "
                f"{rs_calls} buckets")
    forward_c, backward_c = gather, backward_gather + reduce
    micro = outside + layers * (forward_c + backward_c)
    exposed = (first + layers * (max(0.0, forward_c - t_f) + max(0.0, backward_c - t_b))
               + tail)
    return Communication(micro, 0.0, min(exposed, micro), 0.0, round(calls) * job.grad_accum,
                         what + ", every micro-batch, each layer's beside the layer before")
