"""litgpt's fine-tuning output (`litgpt finetune_lora|finetune_full|finetune_adapter`), as printed.

Two generations of it (litgpt/finetune/*.py, litgpt/utils.py):

- since October 2024 (litgpt #1801, d741d26) a report: Input Tokens, Tokens w/ Prompt, Total
  Tokens (w/ Padding), Training Time, Tok/sec (the padded slots over the training time) and
  Memory Used. The counts are the printing process's own (`input_ids.numel()` of its batches):
  one GPU's.
- before it, `Training time: 11.20s` (the whole fit, its first validation and sample generation
  included) and `Memory used: 13.90 GB`, with no token count: the iterations × the micro-batch
  give samples, and the job's length options tokens.

Memory Used is `torch.cuda.max_memory_allocated() / 1e9`. The run's configuration is printed
first: `'devices': 1`, `TrainArgs(... global_batch_size=8, micro_batch_size=4, ...
max_seq_length=512 ...)`; the per-iteration lines (`Epoch 1 | iter 10 step 5 | ... | iter time:
603.03 ms`) count the iterations.
"""

from __future__ import annotations

import re
from typing import Any

from gpuscout.runlogs.reading import LogFormatError, LogReading

PADDED_NOTE = ("Tok/sec: Total Tokens (w/ Padding), input_ids.numel() of the printing "
               "process's batches, over the training time (padded slots of one GPU)")
_INT = r"([\d,]+)"
_NUM = r"([\d.]+)"
PATTERNS = {
    "devices": re.compile(r"'devices':\s*(\d+)"),
    "micro_batch_size": re.compile(r"micro_batch_size=(\d+)"),
    "global_batch_size": re.compile(r"global_batch_size=(\d+)"),
    "max_seq_length": re.compile(r"max_seq_length=(\d+)"),
    "padded_tokens": re.compile(r"Total Tokens \(w/ Padding\)\s*:\s*" + _INT),
    "pretrain_tokens": re.compile(r"\|\s*- Total tokens\s*:\s*" + _INT),
    "training_time": re.compile(r"Training [Tt]ime\s*:?\s*" + _NUM + r"\s*s"),
    "tok_per_s": re.compile(r"Tok/sec\s*:\s*" + _NUM + r"\s*tok/s"),
    "memory": re.compile(r"Memory [Uu]sed\s*:?\s*" + _NUM + r"\s*GB"),
}
_ITER = re.compile(r"^Epoch \d+ \| iter (\d+) step (\d+) \|.*iter time:", re.MULTILINE)


def _first(name: str, text: str) -> str | None:
    m = PATTERNS[name].search(text)
    return m.group(1).replace(",", "") if m else None


def parse(data: bytes, source: str) -> LogReading:
    text = data.decode("utf-8", errors="replace")
    found = {name: _first(name, text) for name in PATTERNS}
    if found["training_time"] is None:
        raise LogFormatError(f"{source}: no training time: not litgpt's fine-tuning output, "
                             "or the run did not finish")
    runtime = float(found["training_time"])
    iters = [(int(i), int(s)) for i, s in _ITER.findall(text)]
    micro = int(found["micro_batch_size"]) if found["micro_batch_size"] else None
    devices = int(found["devices"]) if found["devices"] else None
    grad_accum = None
    if found["global_batch_size"] and micro and devices:
        grad_accum = max(1, int(found["global_batch_size"]) // (micro * devices))
    fields: dict[str, Any] = {}
    padded = found["padded_tokens"] or found["pretrain_tokens"]
    if padded is not None:
        rate = float(found["tok_per_s"]) if found["tok_per_s"] else int(padded) / runtime
        fields.update(tokens_per_s_per_gpu=rate, token_count="padded", token_note=PADDED_NOTE)
    elif iters and micro:
        samples = max(i for i, _ in iters) * micro * (devices or 1)
        fields.update(samples=samples, samples_per_s=samples / runtime, token_count="samples",
                      token_note="no token count: iterations × micro-batch samples over the "
                                 "training time, which includes the first validation")
    if found["memory"] is not None:
        fields.update(peak_gb=float(found["memory"]), memory_metric="allocated")
    return LogReading(
        format="litgpt", source=source, framework="litgpt", runtime_s=runtime,
        steps=max((s for _, s in iters), default=None), gpus=devices, batch_size=micro,
        grad_accum=grad_accum,
        seq_len=int(found["max_seq_length"]) if found["max_seq_length"] else None, **fields)
