"""Walk a grid: build each model once per method, time every point, stay inside the budget.

Every point runs warm-up and then timed optimizer steps (forward, backward, clip_grad_norm_,
AdamW step, zero_grad) on one packed batch of random token ids, with a device sync after each
step; it stops early once it has run for the grid's point limit and keeps the timed steps done
so far. Peaks are reset (and the allocator emptied) after the model is built and before each
point, so a point's peak is its own: the resident model plus that point's gradients, optimizer
states and activations. An out-of-memory point, a failed build and any other error are
recorded with their reason and the walk goes on.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch  # pyright: ignore[reportMissingImports]

from gpuscout.probe import rows
from gpuscout.probe.build import Backend, Built, build, qlora_unavailable
from gpuscout.probe.grid import Arch, Grid, Method, Point
from gpuscout.probe.machine import environment, pick_device, sync
from gpuscout.probe.rows import GB, Env, Result

# A model build (a QLoRA one saves and reloads its checkpoint) is not started with less than
# this many point limits of the budget left.
BUILD_RESERVE = 2.0


@dataclass
class Report:
    grid: Grid
    env: Env
    results: list[Result]
    seconds: float


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}"


def run_point(built: Built, point: Point, grid: Grid, device: torch.device) -> Result:
    """Warm-up and timed steps of one point on an already built model."""
    result = Result(point, "ok", builder=built.builder, params=built.params,
                    trainable=built.trainable_count)
    cuda = device.type == "cuda"
    built.checkpointing(point.checkpointing)
    _free(device)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        result.resident_gb = torch.cuda.memory_allocated(device) / GB
    gen = torch.Generator(device=device).manual_seed(0)
    ids = torch.randint(built.vocab, (point.shape.batch, point.shape.seq), device=device,
                        generator=gen)
    optimizer = torch.optim.AdamW(built.trainable, lr=grid.lr)
    started = time.perf_counter()
    loss = None
    try:
        for step in range(grid.warmup_steps + grid.timed_steps):
            t0 = time.perf_counter()
            loss = built.model(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(built.trainable, grid.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            sync(device)
            took = time.perf_counter() - t0
            if step < grid.warmup_steps:
                result.warmup_s += took
            else:
                result.step_s.append(took)
            if time.perf_counter() - started > grid.point_limit_s:
                break
        if not result.step_s:
            result.status = f"time limit: {grid.point_limit_s:g} s spent in warm-up"
        elif loss is not None and not torch.isfinite(loss.detach()).item():
            result.status = "error: the loss is not finite"
    except torch.OutOfMemoryError:
        result.status = "oom"
        result.step_s = []
    finally:
        optimizer.zero_grad(set_to_none=True)
        del optimizer, ids, loss
        if cuda:
            result.allocated_gb = torch.cuda.max_memory_allocated(device) / GB
            result.reserved_gb = torch.cuda.max_memory_reserved(device) / GB
        _free(device)
    return result


def _model(arch: Arch, method: Method, grid: Grid, device: torch.device, backend: Backend,
           left_s: float) -> Built | str:
    """The point's model, built, or the status its points get instead."""
    why = qlora_unavailable(backend) if method == "qlora" else None
    if why is None and left_s < BUILD_RESERVE * grid.point_limit_s:
        why = f"budget: {max(left_s, 0):.0f} s left of {grid.budget_s:g} s"
    if why is not None:
        return f"skipped: {why}"
    try:
        return build(arch, method, grid, device, backend)
    except torch.OutOfMemoryError:
        _free(device)
        return "oom (building the model)"
    except Exception as exc:  # recorded per point; the walk goes on
        _free(device)
        return f"error: building the model: {_first_line(exc)}"


def _point(built: Built, point: Point, grid: Grid, device: torch.device,
           left_s: float) -> Result:
    if left_s < grid.point_limit_s:
        return Result(point, f"skipped: budget: {max(left_s, 0):.0f} s left")
    try:
        return run_point(built, point, grid, device)
    except Exception as exc:  # recorded; the next point gets a clean allocator
        _free(device)
        return Result(point, f"error: {_first_line(exc)}")


def probe(grid: Grid, *, device: str | None = None, backend: Backend = "auto",
          on_result: Callable[[Result, Env], None] = lambda r, env: None,
          card: bool = True) -> Report:
    """Run `grid` on `device` (the GPU when there is one), calling `on_result` per point with
    the machine it ran on."""
    started = time.monotonic()
    dev = pick_device(device)
    env = environment(dev, matmul_n=grid.matmul_n if card else None,
                      copy_mib=grid.copy_mib if card else None)
    results: list[Result] = []

    def left() -> float:
        return grid.budget_s - (time.monotonic() - started)

    def record(result: Result) -> None:
        results.append(result)
        on_result(result, env)

    for arch in grid.archs:
        for method in grid.methods:
            points = list(grid.points(arch, method))
            built = _model(arch, method, grid, dev, backend, left())
            if isinstance(built, str):
                for point in points:
                    record(Result(point, built))
                continue
            for point in points:
                record(_point(built, point, grid, dev, left()))
            del built
            _free(dev)
    return Report(grid, env, results, time.monotonic() - started)


def probe_to_files(grid: Grid, *, csv_path: Path | None = None, json_path: Path | None = None,
                   device: str | None = None, backend: Backend = "auto",
                   echo: Callable[[str], None] = print,
                   revision: str | None = None) -> tuple[Report, list[dict[str, str]]]:
    """Run `grid`, echo a line per point, append each row to `csv_path` as its point ends (a
    run cut short keeps the rows it made) and write every point to `json_path` at the end."""
    source = rows.source(grid, datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"), revision)
    made: list[dict[str, str]] = []
    if csv_path is not None:
        rows.write(csv_path, [])

    def keep(result: Result, env: Env) -> None:
        echo(result.line())
        if result.status == "ok":
            made.append(rows.to_row(result, env, grid, source))
            if csv_path is not None:
                rows.write(csv_path, made[-1:], append=True)

    report = probe(grid, device=device, backend=backend, on_result=keep)
    echo(f"{report.env.summary()}; {report.seconds:.0f} s")
    if json_path is not None:
        data = rows.report_json(grid, report.env, report.results, report.seconds)
        json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return report, made
