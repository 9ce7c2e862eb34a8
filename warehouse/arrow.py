"""The one Arrow schema for offers, derived from the pydantic `Offer` model, and the conversion.

Enums travel as their string values and `provider_data` as JSON text, which is what the
warehouse columns hold.
"""

from __future__ import annotations

import json
import types
from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from functools import cache
from typing import Any, Union, get_args, get_origin

import pyarrow as pa

from gpuscout.core.models import Offer

_SCALARS: dict[type, pa.DataType] = {
    str: pa.string(),
    float: pa.float64(),
    int: pa.int64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _arrow_type(annotation: Any) -> pa.DataType:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported union {annotation}")
        return _arrow_type(inner[0])
    if origin is not None and hasattr(annotation, "__metadata__"):  # Annotated[float, ...]
        return _arrow_type(get_args(annotation)[0])
    if origin is dict:
        return pa.string()  # JSON text
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return pa.string()
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    base = getattr(annotation, "__origin__", None)
    if base in _SCALARS:
        return _SCALARS[base]
    raise TypeError(f"no Arrow type for {annotation!r}")


@cache
def offer_schema() -> pa.Schema:
    return pa.schema([pa.field(name, _arrow_type(f.annotation), nullable=not f.is_required()
                               or type(None) in get_args(f.annotation))
                      for name, f in Offer.model_fields.items()])


def _cell(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def offers_to_table(offers: Sequence[Offer]) -> pa.Table:
    """Column-wise conversion: one Python list per column, then one Arrow table."""
    schema = offer_schema()
    columns = {name: [_cell(getattr(o, name)) for o in offers] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)
