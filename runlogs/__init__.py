"""Training logs read as measurements of the user's own runs.

One module per format, each a pure reader of the bytes a training stack writes (the HF
Trainer's `trainer_state.json` / `train_results.json` / `all_results.json`, W&B's
`wandb-summary.json`, torchtune's metric log, litgpt's and Unsloth's printed output, and a
plain CSV of the user's own), all returning `LogReading`s: what the log says, in the units and
token counts of the stack that wrote it. `read_log(path)` picks the reader. Nothing here knows
the sizing model; what a log does not say is filled from the job's options by the use case
(`gpuscout.pipeline.measured`).
"""

from gpuscout.runlogs.detect import read_log
from gpuscout.runlogs.reading import LogFormat, LogReading, MemoryMetric, TokenCount

__all__ = ["LogFormat", "LogReading", "MemoryMetric", "TokenCount", "read_log"]
