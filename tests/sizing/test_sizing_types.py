"""Nonsense input gets a clear UserInputError."""

from __future__ import annotations

import pytest

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.types import JobSpec


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"batch_size": -1}, "batch-size"),
    ({"seq_len": 0}, "seq-len"),
    ({"method": "lora", "lora_rank": 0}, "lora-rank"),
    ({"method": "full", "quant": "nf4"}, "PEFT method"),
    ({"gpus": 4}, "sharding none"),
    ({"gpus": 100000, "sharding": "ddp"}, "beyond"),
    ({"sharding": "zero2", "gpus": 2, "offload": "params"}, "zero3 or fsdp"),
    ({"sharding": "ddp", "gpus": 2, "offload": "optimizer"}, "ZeRO-Offload"),
    ({"sharding": "fsdp", "gpus": 2, "offload": "optimizer"}, "--offload params"),
])
def test_nonsense_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        JobSpec(**kwargs)  # type: ignore[arg-type]


def test_qlora_implies_nf4() -> None:
    assert JobSpec(method="qlora").quant == "nf4"
    assert JobSpec(method="qlora", quant="int8").quant == "int8"
