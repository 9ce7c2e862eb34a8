"""Fuzzing: hypothesis mutates every bundled snapshot and feeds it to its provider's parser.

Mutations: bytes flipped, inserted or deleted, the body cut short; JSON keys deleted or renamed
and values replaced by wrong types, negatives, zero, NaN, infinities and huge numbers; HTML
elements removed, attributes dropped, texts replaced; CSV cells replaced and lines dropped.

Whatever the bytes, a parser either raises a typed error (`ParseError`, a `GpuscoutError`) or
returns offers that hold: a finite positive price and GPU count, a plausible VRAM. Downstream,
what normalization and the row gates let through is plausible too. Deterministic
(`derandomize`), bounded (`FUZZ_EXAMPLES` per provider and mutation family).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from gpuscout.adapters.archive import Capture, load_captures
from gpuscout.adapters.registry import PROVIDERS, SNAPSHOTS_DIR, get_adapter
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import GpuscoutError
from gpuscout.core.models import MAX_GPU_COUNT, MAX_VRAM_GB_PER_GPU, ParseResult
from gpuscout.pipeline.normalize import normalize
from gpuscout.pipeline.quality import gate_rows
from gpuscout.pipeline.settings import Settings

# CI runs a bounded, derandomized sample; `FUZZ_EXAMPLES=2000 FUZZ_RANDOM=1 pytest -m fuzz`
# searches further (and found every crash fixed in the adapters; see the regressions below).
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, derandomize=not os.environ.get("FUZZ_RANDOM"),
                deadline=None, database=None, suppress_health_check=list(HealthCheck))
CAPTURES = {p: load_captures(SNAPSHOTS_DIR, p) for p in PROVIDERS}
FX = {"USD": 1.0, "EUR": 1.1, "GBP": 1.3, "JPY": 0.0067}
WEIRD: list[Any] = [None, "", "x", "NaN", "1e999", "-1", "$-5.00", 0, -1, -0.0, 1e308, -1e308,
                    float("nan"), float("inf"), float("-inf"), 10**30, True, False, [], {},
                    [1, 2], {"a": None}, "0.0000000000", "8 x 1000 SSD", "\u20ac2.99"]
WEIRD_TEXT = ["", "-", "$", "$0.00", "-$1.00", "$1e999", "NaN GB", "0 GB", "99999999 GB",
              "CONTACT SALES", "8x", "0x", "\u20ac9.99", "$ 1,000,000.00 / GPU / hr", "\x00"]

pytestmark = pytest.mark.fuzz


# -- mutations ----------------------------------------------------------------------------------


@st.composite
def byte_mutation(draw: st.DrawFn, body: bytes) -> bytes:
    if not body:
        return draw(st.binary(max_size=64))
    kind = draw(st.sampled_from(["flip", "cut", "delete", "insert"]))
    i = draw(st.integers(0, len(body) - 1))
    if kind == "cut":
        return body[:i]
    if kind == "delete":
        j = draw(st.integers(i, min(len(body), i + 200)))
        return body[:i] + body[j:]
    if kind == "insert":
        return body[:i] + draw(st.binary(min_size=1, max_size=16)) + body[i:]
    flips = draw(st.lists(st.integers(0, len(body) - 1), min_size=1, max_size=8))
    out = bytearray(body)
    for k in flips:
        out[k] = draw(st.integers(0, 255))
    return bytes(out)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in a JSON document (bounded: a big document is sampled)."""
    out: list[tuple[Any, ...]] = []
    stack = [(prefix, doc)]
    while stack and len(out) < 20000:
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend((path + (k,), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((path + (i,), v) for i, v in enumerate(node))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def json_mutation(draw: st.DrawFn, body: bytes) -> bytes:
    doc = json.loads(body)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, last = _parent(doc, path), path[-1]
        op = draw(st.sampled_from(["replace", "delete", "rename", "duplicate"]))
        if op == "replace":  # a copy: WEIRD's lists and dicts must not collect edits
            parent[last] = copy.deepcopy(draw(st.sampled_from(WEIRD)))
        elif op == "delete":
            del parent[last]
        elif op == "rename" and isinstance(parent, dict):
            parent[f"{last}_renamed"] = parent.pop(last)
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[last])))
    return json.dumps(doc).encode()  # NaN and Infinity as JSON's extension tokens


@st.composite
def html_mutation(draw: st.DrawFn, body: bytes) -> bytes:
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    for _ in range(draw(st.integers(1, 4))):
        nodes = [n for n in (tree.body or tree.root).traverse()
                 if n.tag and n.tag[0] != "-" and n.tag not in ("html", "head", "body")]
        if not nodes:
            break
        node = draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(["remove", "attribute", "text", "unwrap"]))
        if op == "remove":
            node.decompose()
        elif op == "attribute" and node.attributes:
            del node.attrs[draw(st.sampled_from(sorted(node.attributes)))]
        elif op == "text":
            node.replace_with(draw(st.sampled_from(WEIRD_TEXT)))
        elif op == "unwrap":
            node.unwrap()
    return (tree.html or "").encode()


@st.composite
def csv_mutation(draw: st.DrawFn, body: bytes) -> bytes:
    lines = body.decode("utf-8", "replace").splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["cell", "drop", "duplicate"]))
        if op == "drop":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        else:
            cells = next(csv.reader([lines[i]]), [])
            if cells:
                j = draw(st.integers(0, len(cells) - 1))
                cells[j] = str(draw(st.sampled_from(WEIRD)))
                out = io.StringIO()
                csv.writer(out, quoting=csv.QUOTE_ALL).writerow(cells)
                lines[i] = out.getvalue()
    return "".join(lines).encode()


def _family(capture: Capture) -> str:
    ct = capture.headers.get("content-type", "")
    head = capture.body.lstrip()[:1]
    if "csv" in ct:
        return "csv"
    if "html" in ct or head == b"<":
        return "html"
    try:
        json.loads(capture.body)
    except ValueError:
        return "bytes"
    return "json"


STRUCTURED = {"json": json_mutation, "html": html_mutation, "csv": csv_mutation}


@st.composite
def mutated(draw: st.DrawFn, provider: str, structured: bool) -> list[Capture]:
    """The provider's bundled captures with one (or, rarely, two) of them mutated."""
    captures = list(CAPTURES[provider])
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(captures) - 1))
        cap = captures[i]
        family = _family(cap)
        if structured and family in STRUCTURED:
            body = draw(STRUCTURED[family](cap.body))
        else:
            body = draw(byte_mutation(cap.body))
        captures[i] = cap.model_copy(update={"body": body})
    return captures


# -- the property -------------------------------------------------------------------------------


def _parse_or_typed_error(provider: str, captures: list[Capture]) -> ParseResult | None:
    try:
        return get_adapter(provider).parse(captures)
    except GpuscoutError:
        return None  # ParseError and its kin: a typed refusal of the bytes


def check(provider: str, captures: list[Capture]) -> None:
    result = _parse_or_typed_error(provider, captures)
    if result is None:
        return
    for o in result.offers:
        assert o.provider == provider and o.offer_key
        assert math.isfinite(o.price_per_hour) and o.price_per_hour > 0, o
        assert math.isfinite(o.gpu_count) and 0 < o.gpu_count <= MAX_GPU_COUNT, o
        if o.vram_gb_per_gpu is not None:
            assert math.isfinite(o.vram_gb_per_gpu), o
            assert 0 < o.vram_gb_per_gpu <= MAX_VRAM_GB_PER_GPU, o
    for r in result.rejects:
        assert r.reason and isinstance(r.raw, str)
    s = Settings()
    gated = gate_rows(normalize(result.offers, load_catalog(), FX).offers, s)
    for o in gated.offers:  # what a refresh would load
        assert s.min_usd_per_gpu_hour <= o.price_usd_per_gpu_hour <= s.max_usd_per_gpu_hour
        assert o.gpu_count <= s.max_gpu_count
        assert o.vram_gb is None or 0 < o.vram_gb <= s.max_vram_gb


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@FUZZ
@given(data=st.data())
def test_structured_mutations(provider: str, data: st.DataObject) -> None:
    check(provider, data.draw(mutated(provider, structured=True)))


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@FUZZ
@given(data=st.data())
def test_byte_mutations(provider: str, data: st.DataObject) -> None:
    check(provider, data.draw(mutated(provider, structured=False)))


def test_every_snapshot_is_fuzzed() -> None:
    assert all(CAPTURES[p] for p in PROVIDERS)
    assert {_family(c) for caps in CAPTURES.values() for c in caps} >= {"json", "html", "csv"}
