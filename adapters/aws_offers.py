"""AWS EC2 on-demand prices: the per-region CSV offer files of the bulk price list.

A region's offer file runs from MBs to GBs (us-east-1); `fetch()` streams it to disk and
`read_offer_file` reads it in constant memory: 2 MB binary blocks, in which a search for the
rarest ROW_FILTER value picks the lines holding every one and only those are read as CSV (on two
processes for a big file; see `_Scan`); a block with a quoted newline, or anything else the scan
cannot vouch for, is read line by line with `csv` from there on. A row is kept only when it is a
Linux, shared-tenancy, on-demand hourly price of a GPU instance (`ROW_FILTER`); everything else in
the file - Windows, dedicated hosts, reserved terms, capacity blocks and reservations, storage,
CPU machines - is skipped.

GPU model and count come from the alias table (`pipeline/data/gpu_aliases.csv`, provider `aws`,
one row per instance type); a row AWS itself files under Instance Family "GPU instance" but the
table does not know keeps its label (reported unknown downstream) with AWS's own "GPU" count.
The multi-node network is EFA only where an AWS document says so (`adapters/aws_network.csv`, a
source per row). The machine specs read here (`Specs`) also serve the spot offers
(`aws_spot.py`), which the spot feed gives without them.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pickle
import re
import select
import signal
import struct
import threading
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.toolkit import (
    SNIPPET_CHARS,
    OneOfferPerKey,
    parse_error,
    positive_decimal,
)
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.models import (
    NetworkFabric,
    ParsedOffer,
    PriceKind,
    PricingModel,
    Reject,
)

NAME = "aws"  # the provider these readers serve: adapters/aws.py, which imports it from here
NETWORK_CSV = Path(__file__).with_name("aws_network.csv")

# A kept offer-file row: one of these product families (bare metal too: g4dn.metal is a GPU
# offer) and every ROW_FILTER column equal to its value. MarketOption tells on-demand from
# Capacity Blocks, which share TermType "OnDemand".
PRODUCT_FAMILIES = frozenset({"Compute Instance", "Compute Instance (bare metal)"})
ROW_FILTER = {
    "TermType": "OnDemand", "Operating System": "Linux", "Tenancy": "Shared",
    "Pre Installed S/W": "NA", "CapacityStatus": "Used", "MarketOption": "OnDemand",
    "Unit": "Hrs",
}
# The ROW_FILTER values as they appear quoted in a line, the rarest first (most rows are for
# other operating systems); "NA" is left out, it fills many other columns.
LINE_NEEDLES = ('"Linux"', '"Shared"', '"Used"', '"OnDemand"', '"Hrs"')
GPU_INSTANCE_FAMILY = "GPU instance"  # AWS's "Instance Family" value for its GPU machines
REQUIRED_COLUMNS = (
    "SKU", "RateCode", "PricePerUnit", "Currency", "EffectiveDate", "Product Family",
    "Location", "Region Code", "Instance Type", "Instance Family", "vCPU", "Memory", "Storage",
    "Network Performance", "GPU", "GPU Memory", *ROW_FILTER,
)
# The offer file starts with a few "name","value" metadata lines, then the header row.
HEADER_SEARCH_ROWS = 20
# The block scan of a quoted offer file (`_Scan`):
# bytes a process holds at a time, whatever the file's size: small enough for the scan's
# passes over a block to find it in the CPU's cache
SCAN_BLOCK = 2 << 20
PARALLEL_FROM = 64 << 20  # smaller files are scanned in this process alone
PIPE_BYTES = 1 << 20  # the helper scans on while this much of its results waits
LOOKAHEAD = 4  # blocks this process scans on while the helper's next one is not in
LINE_PROBE = 4096  # bytes read at a time to find where a block's first line starts
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GiB|GB|TiB|TB)\s*$", re.IGNORECASE)
STORAGE_RE = re.compile(r"^\s*(\d+)\s*x\s*(\d+(?:\.\d+)?)\b")
UNIT_GB = {"gib": 2**30 / 1e9, "gb": 1.0, "tib": 2**40 / 1e9, "tb": 1e3}


@dataclass(frozen=True)
class Specs:
    vcpus: float | None
    ram_gb: float | None
    disk_gb: float | None


class Collector(OneOfferPerKey):
    """Offers by key under the toolkit's duplicate-key rule (a key seen again at the same price
    is the same offer; at another price every row of that key is rejected), and the rejects of
    rows that are no offer."""

    def __init__(self) -> None:
        super().__init__(NAME)

    def reject(self, reason: str, raw: str, offer_key: str | None = None) -> None:
        self.rejects.append(Reject(provider=NAME, reason=reason, raw=raw[:2000],
                                   offer_key=offer_key))


def read_offer_file(capture: Capture, out: Collector, specs: dict[str, Specs], *,
                    block_size: int = SCAN_BLOCK, parallel_from: int = PARALLEL_FROM) -> int:
    """Read one region's offer file into `out`; return 0 when it has no data line.

    A file whose values are quoted (every AWS offer file) is scanned in binary blocks
    (`_scan_block`), on two processes when it is big and the machine allows it (`_Scan`); the
    rows come out in file order, the same rows `read_offer_lines` (the text-line loop) finds.
    From a block the scan cannot vouch for (a line with an odd number of quotes, i.e. a quoted
    newline; a bare CR; bytes that are not UTF-8; a candidate line that is no plain CSV record)
    to the end, the file is read by the text-line loop. An unquoted file is read by that loop.
    """
    start = 0

    def counted(lines: Iterator[str]) -> Iterator[str]:
        nonlocal start
        for line in lines:
            start += len(line.encode())
            yield line

    lines = capture.iter_lines()
    try:
        meta, header, quoted = _read_preamble(counted(lines), capture)
    finally:
        lines.close()  # type: ignore[attr-defined]  # a generator: closes the file
    if not quoted:
        return read_offer_lines(capture, out, specs)
    rows = _Rows(capture, meta, header, out, specs)
    scan = _Scan(capture, start, block_size, rows, parallel=capture.size >= parallel_from)
    return scan.run()


def read_offer_lines(capture: Capture, out: Collector, specs: dict[str, Specs],
                     start: int | None = None, rows: _Rows | None = None) -> int:
    """The text-line loop: every line decoded, `_candidate_lines` picks, `csv` parses. Reads
    the whole file, or (with `start`, a record's first byte, and `rows`) from there on.
    Returns how many non-blank data lines it read."""
    lines = capture.iter_lines() if start is None else _lines_from(capture, start)
    if rows is None:
        meta, header, quoted = _read_preamble(lines, capture)
        rows = _Rows(capture, meta, header, out, specs)
    else:
        quoted = True
    data_lines = 0

    def counted(body: Iterator[str]) -> Iterator[str]:
        nonlocal data_lines
        for line in body:
            data_lines += bool(line.strip())
            yield line

    body = counted(lines)
    try:
        rows.take(csv.reader(_candidate_lines(body) if quoted else body))
    except (csv.Error, UnicodeDecodeError) as exc:
        raise parse_error(NAME, capture,
                          f"offer file is not CSV after line {data_lines}: {exc}") from None
    return data_lines


def _lines_from(capture: Capture, start: int) -> Iterator[str]:
    with capture.open() as raw:
        raw.seek(start)
        with io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
            yield from text


def _read_preamble(lines: Iterator[str],
                   capture: Capture) -> tuple[dict[str, str], list[str], bool]:
    """The "name","value" metadata lines, the header row, and whether values are quoted."""
    meta: dict[str, str] = {}
    try:
        for line in islice(lines, HEADER_SEARCH_ROWS):
            row = next(csv.reader([line]), [])
            if row and row[0] == "SKU":
                return meta, row, line.startswith('"')
            if len(row) == 2:
                meta[row[0]] = row[1]
    except (csv.Error, UnicodeDecodeError) as exc:
        raise parse_error(NAME, capture, f"not a CSV offer file: {exc}") from None
    raise parse_error(NAME, capture, "no header row starting with SKU", "SKU")


def _candidate_lines(lines: Iterator[str]) -> Iterator[str]:
    """The lines that can hold a kept row, in a file whose values are all quoted.

    A kept row holds every ROW_FILTER value as a quoted field, so a line missing one of them is
    dropped before the much slower CSV parse: most of a region file goes no further. A record
    broken over several lines by a quoted newline (odd quote count) is passed on whole.
    """
    first, *rest = LINE_NEEDLES
    pending = ""
    for line in lines:
        if pending:
            pending += line
            if pending.count('"') % 2 == 0:
                yield pending
                pending = ""
        elif line.count('"') % 2:
            pending = line
        elif first in line and all(n in line for n in rest):
            yield line
    if pending:
        yield pending


class _Rows:
    """The header's columns and what becomes of a parsed row: a reject when its width is not
    the header's, an offer when it passes ROW_FILTER, nothing otherwise."""

    def __init__(self, capture: Capture, meta: dict[str, str], header: list[str],
                 out: Collector, specs: dict[str, Specs]) -> None:
        col = {name: i for i, name in enumerate(header)}
        missing = [c for c in REQUIRED_COLUMNS if c not in col]
        if missing:
            raise parse_error(NAME, capture, f"offer file has no '{missing[0]}' column",
                              missing[0], snippet=",".join(header)[:SNIPPET_CHARS])
        self.capture, self.meta, self.header, self.out, self.specs = (
            capture, meta, header, out, specs)
        self.width = len(header)
        self.key_columns = itemgetter(*(col[name] for name in ROW_FILTER))
        self.wanted = tuple(ROW_FILTER.values())
        self.i_family, self.i_type = col["Product Family"], col["Instance Type"]
        self.i_region, self.i_instance_family = col["Region Code"], col["Instance Family"]
        self.i_gpus, self.i_price = col["GPU"], col["PricePerUnit"]
        self._gpu_counts: dict[str, float | None] = {}  # the alias table's, by instance type

    def take(self, rows: Iterable[list[str]]) -> None:
        width = self.width
        for row in rows:
            if len(row) != width:
                if row:
                    self.out.reject(f"row has {len(row)} columns, the header {width}",
                                    ",".join(row))
                continue
            if self.key_columns(row) != self.wanted or row[self.i_family] not in PRODUCT_FAMILIES:
                continue
            if row[self.i_type]:
                self.on_demand(row)

    def on_demand(self, row: list[str]) -> None:
        """A row that passed the filter: an offer, a reject, or nothing (not a GPU machine, or
        an offer already held at this price: most rows of a big file end at this check)."""
        itype, region = row[self.i_type], row[self.i_region]
        key = f"{region}|{itype}|on_demand"
        count = self.alias_count(itype)
        if count is None:
            if row[self.i_instance_family] != GPU_INSTANCE_FAMILY:
                return  # not a GPU machine: CPU, FPGA and ML-ASIC families are out of scope
            count = positive_decimal(row[self.i_gpus])
            if count is None:
                self.out.reject(f"GPU instance {itype} has no alias row and no GPU count",
                                self.raw(row), key)
                return
        price = positive_decimal(row[self.i_price])
        if price is None:
            self.out.reject(f"no positive hourly price: {row[self.i_price]!r}", self.raw(row),
                            key)
            return
        if not self.out.holds(key, price):
            _new_offer(dict(zip(self.header, row, strict=True)), key, count, price, self)

    def alias_count(self, instance_type: str) -> float | None:
        """`alias_count`, looked up once per instance type of the file."""
        try:
            return self._gpu_counts[instance_type]
        except KeyError:
            count = self._gpu_counts[instance_type] = alias_count(instance_type)
            return count

    def raw(self, row: list[str]) -> str:
        return json.dumps(dict(zip(self.header, row, strict=True)))

    def matters(self, row: list[str]) -> bool:
        """Whether `take` does anything with the row (what a scan may not drop)."""
        if len(row) != self.width:
            return bool(row)
        return self.key_columns(row) == self.wanted and row[self.i_family] in PRODUCT_FAMILIES


# -- the block scan of a quoted offer file ------------------------------------------------------

_NEEDLES = tuple(n.encode() for n in LINE_NEEDLES)
# The rarest needle without its opening quote: `re` runs through the bytes up to each one that
# could start it, faster than bytes.find skips in this file of quotes and commas; '"' would stop
# it every few bytes.
_FIRST = re.compile(re.escape(_NEEDLES[0][1:]))
_QUOTES_AND_NEWLINES = bytes(b for b in range(256) if b not in b'"\n')
# What a line's fields are made of, beyond their values: what `_plain_row` keeps of a line.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'",\r\n\0')
_NOT_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c\x1c-\x1f]")
_IRREGULAR = None  # a block the scan cannot vouch for
# A scanned block: whether it has a data line, and its rows for `_Rows.take` (or _IRREGULAR).
_Result = tuple[bool, list[list[str]] | None]


def _scan_block(buf: bytes | bytearray, rows: _Rows) -> list[list[str]] | None:
    """The rows of one block of whole lines that `_Rows.take` does anything with, in order; or
    None where the text-line loop may find other rows here or after.

    The text-line loop keeps each line holding every needle and joins a line of odd quote count
    with the next ones, so on a block in which every line has an even quote count it keeps
    exactly the lines holding every needle. Those are found by searching for the rarest needle
    and only they are read.
    """
    if not buf.isascii():
        try:
            buf.decode()
        except UnicodeDecodeError:
            return _IRREGULAR  # the text-line loop raises its parse error there
    if b"\r" in buf and buf.count(b"\r") != buf.count(b"\r\n"):
        return _IRREGULAR  # a bare CR ends a text line too
    # Each line's quotes, the other bytes gone: a line of odd count leaves one quote unpaired.
    quotes = buf.translate(None, _QUOTES_AND_NEWLINES)
    if len(quotes) - quotes.count(b"\n") != 2 * quotes.count(b'""'):
        return _IRREGULAR
    found: list[list[str]] = []
    find, rfind, end = buf.find, buf.rfind, len(buf)
    search = _FIRST.search
    n1, n2, n3, n4, n5 = _NEEDLES
    hit = search(buf)
    while hit:
        i = hit.start()
        stop = find(b"\n", i) + 1 or end
        line = buf[rfind(b"\n", 0, i) + 1:stop]
        if n1 in line and n2 in line and n3 in line and n4 in line and n5 in line:
            row = _record(line, rows)
            if row is _IRREGULAR:
                return _IRREGULAR
            if row:
                found.append(row)
        hit = search(buf, stop)
    return found


def _record(line: bytes | bytearray, rows: _Rows) -> list[str] | None:
    """The row of one candidate line when `rows` does anything with it, [] when not; None when
    the line does not end where its CSV record does (a record `csv` would carry on into the
    next candidate line)."""
    body = line[:-1] if line.endswith(b"\n") else line
    if body.endswith(b"\r"):
        body = body[:-1]
    row = _plain_row(body)
    if row is not None:
        if len(row) == rows.width and (rows.key_columns(row) != rows.wanted
                                       or row[rows.i_family] not in PRODUCT_FAMILIES):
            return []
        return row
    try:
        parsed = list(csv.reader((line.decode(), "\n")))
    except csv.Error:
        return _IRREGULAR
    # A record that ends with the line leaves the "\n" after it as a blank row of its own.
    if len(parsed) != 2 or parsed[1]:
        return _IRREGULAR
    return parsed[0] if rows.matters(parsed[0]) else []


def _plain_row(body: bytes | bytearray) -> list[str] | None:
    """A line's values (its end of line cut off) when each field holds no quote, or exactly two
    of which the first opens it, and the line no CR, LF or NUL: then `csv` reads each field as
    its bytes without the quotes (after a closing quote it reads on, in its default dialect).
    None for any other line.

    Of the line's quotes, commas, CR, LF and NUL, once every pair of adjacent quotes is gone
    only commas are left when no field has an odd number of quotes. A field starts with a
    quote at most once however many pairs it holds, so p pairs and p fields that start with a
    quote leave each field with no quote or exactly two, the first at its start.
    """
    marks = body.translate(None, _NOT_STRUCTURE)
    commas = marks.replace(b'""', b"")
    if commas.strip(b",") or (body.count(b',"') + body.startswith(b'"')
                              != (len(marks) - len(commas)) >> 1):
        return None
    return body.translate(None, b'"').decode().split(",")


def _has_data(buf: bytes | bytearray) -> bool:
    """Whether a block of lines holds a non-blank one (what the text-line loop counts)."""
    m = _NOT_BLANK.search(buf)
    if m is None:
        return False
    return buf[m.start()] < 0x80 or not buf.decode(errors="replace").isspace()


class _Scan:
    """The scan of one quoted offer file from `start` (its first data line) in blocks of whole
    lines: block k holds the lines that start in [start + k * size, start + (k + 1) * size).

    With a helper process (os.fork, on a machine with two or more CPUs, from a process with no
    other thread), the two take the next unscanned block in turn from a shared counter and the
    helper sends its results over a pipe; this process hands every block's rows to `_Rows.take`
    in block order, so the offers, rejects and their order are the one-process ones. Each
    process holds one block, the pipe a bounded amount, and this process the rows of at most
    LOOKAHEAD blocks it scanned ahead: memory does not grow with the file.
    """

    def __init__(self, capture: Capture, start: int, size: int, rows: _Rows,
                 parallel: bool) -> None:
        self.capture, self.start, self.size, self.rows = capture, start, size, rows
        self.end = capture.size
        self.blocks = max(0, -(-(self.end - start) // size))
        self.parallel = parallel and self.blocks > 1 and _can_fork()
        self.has_data = False
        self._file: BinaryIO | None = None  # this process's own handle and block buffer
        self._buf = bytearray()

    def run(self) -> int:
        if not self.parallel:
            return self._serial()
        counter_r, counter_w = os.pipe()
        results_r, results_w = os.pipe()
        with suppress(OSError, AttributeError):  # room for a few blocks' rows (Linux)
            fcntl.fcntl(results_w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.write(counter_w, struct.pack("q", 0))
        pid = os.fork()
        if pid == 0:  # the helper: scan, send, and leave without running anything of the parent
            code = 1
            self._file = None  # not the parent's: a shared file offset
            try:
                os.close(results_r)
                for k in iter(lambda: _take(counter_r, counter_w), None):
                    if k >= self.blocks:
                        break
                    _send(results_w, (k, self._scan(k)))
                code = 0
            finally:
                os._exit(code)
        os.close(results_w)
        try:
            return self._merge(_Inbox(results_r), counter_r, counter_w)
        finally:
            self._close()
            os.close(results_r)
            os.close(counter_r)
            os.close(counter_w)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

    def _serial(self) -> int:
        for k in range(self.blocks):
            if self._hand_on(k, self._scan(k)):
                break
        self._close()
        return int(self.has_data)

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _merge(self, inbox: _Inbox, counter_r: int, counter_w: int) -> int:
        """Hand on every block in order: this process's own as it scans them, the helper's as
        they come. While the next is the helper's and not in yet, scan on (up to LOOKAHEAD
        blocks ahead) rather than wait. If the helper is gone, read what it left here."""
        mine: dict[int, _Result] = {}
        theirs: dict[int, _Result] = {}
        done, taken_all = 0, False  # blocks handed on; the counter has passed the last one
        while done < self.blocks:
            result = mine.pop(done, None) or theirs.pop(done, None)
            if result is None and inbox.open:
                if not taken_all and len(mine) < LOOKAHEAD:
                    got = inbox.poll()
                    if got is None:
                        k = _take(counter_r, counter_w)
                        if k < self.blocks:
                            mine[k] = self._scan(k)
                        taken_all = k >= self.blocks - 1
                        continue
                else:
                    got = inbox.wait()
                if got is not None:
                    theirs[got[0]] = got[1]
                continue
            if result is None:  # the helper is gone: its blocks are read here
                result = self._scan(done)
            if self._hand_on(done, result):
                break
            done += 1
        return int(self.has_data)

    def _hand_on(self, k: int, result: _Result) -> bool:
        """Block k's rows to `_Rows`; True when the text-line loop took over to the end."""
        has_data, found = result
        if found is None:
            offset = self._line_start(k)
            self.has_data |= bool(read_offer_lines(self.capture, self.rows.out,
                                                   self.rows.specs, offset, self.rows))
            return True
        self.has_data |= has_data
        self.rows.take(found)
        return False

    def _scan(self, k: int) -> _Result:
        buf = self._block(k)
        return _has_data(buf), _scan_block(buf, self.rows)

    def _block(self, k: int) -> bytearray:
        """Block k's lines: from the first line start at or after its first byte to the first
        at or after the next block's. Read into the one buffer this process reuses (a fresh
        one each time can cost more in page faults than the read itself)."""
        if self._file is None:
            self._file = self.capture.open()
        f, buf = self._file, self._buf
        lo = self._line_start(k, f)
        size = max(0, self._line_start(k + 1, f) - lo)
        if not buf:
            buf = self._buf = bytearray(size)
        elif size > len(buf):
            buf.extend(bytes(size - len(buf)))
        else:
            del buf[size:]
        f.seek(lo)
        f.readinto(buf)  # type: ignore[attr-defined]  # a BufferedReader or BytesIO
        return buf

    def _line_start(self, k: int, f: BinaryIO | None = None) -> int:
        """The first line start at or after block k's first byte (the file's end if none)."""
        at = self.start + k * self.size
        if k == 0 or at >= self.end:
            return min(at, self.end)
        if f is None:
            with self.capture.open() as g:
                return self._line_start(k, g)
        f.seek(at - 1)
        pos = at - 1
        while chunk := f.read(LINE_PROBE):
            i = chunk.find(b"\n")
            if i >= 0:
                return pos + i + 1
            pos += len(chunk)
        return self.end


def _take(counter_r: int, counter_w: int) -> int:
    """The next block to scan, from the counter both processes share (a pipe holding it)."""
    (k,) = struct.unpack("q", os.read(counter_r, 8))
    os.write(counter_w, struct.pack("q", k + 1))
    return k


def _send(fd: int, message: tuple[int, _Result]) -> None:
    """One block's result to the parent: its length, then its pickle."""
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class _Inbox:
    """The helper's results as they come through the pipe (`_send`), without blocking unless
    asked to."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.open = fd, bytearray(), True

    def poll(self) -> tuple[int, _Result] | None:
        """The next result if it is all in, else None."""
        while (got := self._message()) is None and self.open:
            if not select.select([self.fd], [], [], 0)[0]:
                return None
            self._read()
        return got

    def wait(self) -> tuple[int, _Result] | None:
        """The next result, waiting for it; None when the helper is gone."""
        while (got := self._message()) is None and self.open:
            self._read()
        return got

    def _read(self) -> None:
        chunk = os.read(self.fd, PIPE_BYTES)
        self.buf += chunk
        self.open = bool(chunk)

    def _message(self) -> tuple[int, _Result] | None:
        if len(self.buf) < 8:
            return None
        (n,) = struct.unpack_from("q", self.buf)
        if len(self.buf) < 8 + n:
            return None
        message = pickle.loads(memoryview(self.buf)[8:8 + n])
        del self.buf[:8 + n]
        return message


def _can_fork() -> bool:
    """A helper process is worth it and safe: two CPUs or more, and no other thread here (a
    thread holding a lock at fork time could leave the helper stuck)."""
    return (hasattr(os, "fork") and threading.active_count() == 1
            and len(os.sched_getaffinity(0)) > 1)


def _new_offer(row: dict[str, str], key: str, count: float, price: float, rows: _Rows) -> None:
    """The offer of a kept GPU row not held yet (`_Rows.on_demand` checked the rest)."""
    capture, meta, out, specs = rows.capture, rows.meta, rows.out, rows.specs
    itype, region = row["Instance Type"], row["Region Code"]
    spec = Specs(vcpus=positive_decimal(row["vCPU"]), ram_gb=_size_gb(row["Memory"]),
                  disk_gb=_storage_gb(row["Storage"]))
    specs.setdefault(itype, spec)
    vram_total = _size_gb(row["GPU Memory"])
    network, network_gbps = network_of(itype)
    try:
        offer = ParsedOffer(
            provider=NAME, offer_key=key, instance_type=itype, gpu_label=itype,
            gpu_count=count, vram_gb_per_gpu=vram_total / count if vram_total else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=price,
            currency=row["Currency"], price_kind=PriceKind.LISTED, region=region,
            vcpus=spec.vcpus, ram_gb=spec.ram_gb, disk_gb=spec.disk_gb,
            network=network, network_gbps=network_gbps,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={
                "sku": row["SKU"], "rate_code": row["RateCode"],
                "effective_date": row["EffectiveDate"], "location": row["Location"],
                "network_performance": row["Network Performance"],
                "memory": row["Memory"], "storage": row["Storage"],
                "offer_version": meta.get("Version"),
                "publication_date": meta.get("Publication Date"),
            },
        )
    except ValidationError as exc:
        out.reject(f"invalid offer: {exc.errors()[0]['msg']}", json.dumps(row), key)
        return
    out.add(offer)


# -- what the spot reader shares ------------------------------------------------------------


def alias_count(instance_type: str) -> float | None:
    """GPUs per instance from the alias table, None when it has no row for the type."""
    res = load_catalog().resolve(NAME, instance_type)
    return res.gpu_count if isinstance(res, Resolved) else None


@cache
def _network_table() -> dict[str, tuple[NetworkFabric, float]]:
    with NETWORK_CSV.open(newline="", encoding="utf-8") as f:
        return {r["instance_type"]: (NetworkFabric(r["network"]), float(r["network_gbps"]))
                for r in csv.DictReader(f)}


def network_of(instance_type: str) -> tuple[NetworkFabric | None, float | None]:
    return _network_table().get(instance_type, (None, None))


def _size_gb(text: str) -> float | None:
    m = SIZE_RE.match(text)
    return round(float(m.group(1)) * UNIT_GB[m.group(2).lower()], 1) if m else None


def _storage_gb(text: str) -> float | None:
    """'8 x 1000 SSD', '2 x 3800 GB NVMe SSD' -> GB; 'EBS only' -> None (no local disk)."""
    m = STORAGE_RE.match(text)
    return float(m.group(1)) * float(m.group(2)) if m else None
