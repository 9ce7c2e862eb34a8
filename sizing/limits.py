"""Bounds past which a job's numbers are a typo rather than a job, refused with the limit.

They sit orders of magnitude beyond what any fine-tuning run uses, so a real job never meets
them; a value past them (`--seq-len 10000000`, `--batch-size 100000`) would otherwise be
sized into thousands of GB or an MFU from nowhere. Checked in `Job.resolve`, so the CLI, the
API and the report refuse the same values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscout.core.errors import UserInputError

if TYPE_CHECKING:
    from gpuscout.sizing.architectures import Architecture
    from gpuscout.sizing.types import JobSpec

# A model with a learned position table reads no position past it; long-context recipes
# stretch a context a few times (position interpolation), so up to this many times it is
# sized, and past it refused.
CONTEXT_FACTOR = 8
# Sequences whose model states no context (the catalog records one only for learned position
# tables): 2^21 tokens, twice a million-token context.
MAX_SEQ_LEN = 1 << 21
# Sequences in one GPU's micro-batch, and tokens in it (batch × sequence length): 2^14 and
# 2^24. A larger global batch is --grad-accum's job.
MAX_BATCH_SIZE = 1 << 14
MAX_MICRO_BATCH_TOKENS = 1 << 24


def check_limits(arch: Architecture, job: JobSpec) -> None:
    """UserInputError naming the limit when a job value is past it."""
    if arch.learned_positions:
        limit = arch.learned_positions * CONTEXT_FACTOR
        if job.seq_len > limit:
            raise UserInputError(
                f"--seq-len {job.seq_len:,} is over {limit:,} tokens: {arch.model_id} has "
                f"{arch.learned_positions:,} learned positions, and gpuscout sizes at most "
                f"{CONTEXT_FACTOR} times a model's context")
    elif job.seq_len > MAX_SEQ_LEN:
        raise UserInputError(
            f"--seq-len {job.seq_len:,} is over the limit of {MAX_SEQ_LEN:,} tokens per "
            f"sequence (2^21, twice a million-token context); the catalog does not record "
            f"{arch.model_id}'s own context length, so this limit is gpuscout's, not the "
            f"model's")
    if job.batch_size > MAX_BATCH_SIZE:
        raise UserInputError(
            f"--batch-size {job.batch_size:,} is over the limit of {MAX_BATCH_SIZE:,} "
            f"sequences in one GPU's micro-batch; a larger global batch is --grad-accum's "
            f"(global batch = micro-batch × accumulation × data-parallel GPUs)")
    tokens = job.batch_size * job.seq_len
    if tokens > MAX_MICRO_BATCH_TOKENS:
        raise UserInputError(
            f"--batch-size {job.batch_size:,} × --seq-len {job.seq_len:,} = {tokens:,} "
            f"tokens in one GPU's micro-batch, over the limit of {MAX_MICRO_BATCH_TOKENS:,} "
            f"(2^24); use --grad-accum for a larger global batch")
