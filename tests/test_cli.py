"""End-to-end CLI on the offline path: refresh the bundled snapshots, then query them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscout.cli.app import app

runner = CliRunner()


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "w.duckdb"
    _cli("refresh", "--offline", "--db", str(path), "--format", "json")
    return path


def _json(*args: str) -> list[dict]:
    return json.loads(_cli(*args, "--format", "json"))


def test_offline_refresh_loads_every_registered_provider(db: Path) -> None:
    from gpuscout.adapters.registry import PROVIDERS
    from gpuscout.pipeline.lifecycle import lifecycle

    rows = _json("sql", "select provider, count(*) as n from current_offers group by 1",
                 "--db", str(db))
    selling = set(PROVIDERS) - set(lifecycle())  # a retired provider has no open offers
    assert {r["provider"] for r in rows} == selling
    assert all(r["n"] > 0 for r in rows)
    runs = _json("runs", "--db", str(db))
    assert {r["provider"]: r["status"] for r in runs if r["status"] != "ok"} == {
        name: ended.status for name, ended in lifecycle().items()}


def test_second_identical_refresh_adds_no_history_rows(db: Path, tmp_path: Path) -> None:
    count = "select count(*) as n from offer_history"
    before = _json("sql", count, "--db", str(db))[0]["n"]
    report = json.loads(_cli("refresh", "--offline", "--db", str(db), "--format", "json"))
    assert all(r["new_offers"] == 0 and r["changed_offers"] == 0 for r in report)
    assert _json("sql", count, "--db", str(db))[0]["n"] == before


def test_offers_for_h100_carry_the_normalized_fields(db: Path) -> None:
    offers = _json("offers", "--gpu", "H100", "--db", str(db))
    assert offers
    for o in offers:
        assert o["gpu_id"].startswith("h100-")
        assert o["gpu_count"] > 0 and o["vram_gb"] >= 80
        assert o["memory_type"].startswith("HBM") and o["interconnect"]
        assert o["pricing_model"] in {"on_demand", "spot", "reserved"}
        assert o["price_usd_per_gpu_hour"] == pytest.approx(
            o["price_usd_per_hour"] / o["gpu_count"])
    prices = [o["price_usd_per_gpu_hour"] for o in offers]
    assert prices == sorted(prices)


def test_offer_filters(db: Path) -> None:
    spot = _json("offers", "--spot", "--db", str(db), "--limit", "500")
    assert spot and {o["pricing_model"] for o in spot} == {"spot"}
    cheap = _json("offers", "--max-price", "0.5", "--min-vram", "24", "--db", str(db))
    assert all(o["price_usd_per_gpu_hour"] <= 0.5 and o["vram_gb"] >= 24 for o in cheap)
    lam = _json("offers", "--provider", "lambda", "--sort", "price", "--db", str(db))
    assert {o["provider"] for o in lam} == {"lambda"}
    assert [o["price_usd_per_hour"] for o in lam] == sorted(o["price_usd_per_hour"] for o in lam)


def test_csv_output(db: Path) -> None:
    out = _cli("offers", "--gpu", "a100", "--limit", "3", "--format", "csv", "--db", str(db))
    header, *rows = out.strip().splitlines()
    assert header.startswith("provider,gpu_id,") and 0 < len(rows) <= 3


def test_gpus_resolve_json() -> None:
    out = json.loads(_cli("gpus", "resolve", "vastai", "A100 SXM4", "--vram", "80",
                          "--format", "json"))
    assert (out["gpu_id"], out["confidence"]) == ("a100-sxm-80gb", "verified")
    out = json.loads(_cli("gpus", "resolve", "vastai", "Unheard Of", "--format", "json"))
    assert out["gpu_id"] is None and out["reason"]
    # the family is fixed, the form factor is not: the conservative variant, said so
    out = json.loads(_cli("gpus", "resolve", "latitude", "NVIDIA H100 80GB", "--vram", "80",
                          "--format", "json"))
    assert (out["gpu_id"], out["layer"]) == ("h100-pcie-80gb", "family")
    assert out["reason"].startswith("H100 80GB, variant not stated")


@pytest.mark.parametrize(("args", "message"), [
    (["offers", "--bogus"], "No such option: --bogus"),
    (["offers", "--limit", "0"], "Invalid value for '--limit'"),
    (["offers", "--db", "/nonexistent/w.duckdb"], "run `gpuscout refresh` first"),
    (["refresh", "--provider", "nope", "--offline", "--db", "/tmp/x.duckdb"],
     "unknown provider nope"),
    (["sql", "selec 1", "--db", "DB"], "SQL error"),
    (["sql", "drop table offer_versions", "--db", "DB"], "read-only"),
])
def test_user_errors_are_one_line_without_traceback(db: Path, args: list[str],
                                                    message: str) -> None:
    args = [str(db) if a == "DB" else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "gpuscout", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_record_then_replay_gives_the_same_offers(tmp_path: Path) -> None:
    archive = tmp_path / "night"
    _cli("refresh", "--offline", "--record", str(archive), "--db", str(tmp_path / "a.duckdb"),
         "--format", "json")
    _cli("refresh", "--replay", str(archive), "--db", str(tmp_path / "b.duckdb"),
         "--format", "json")
    q = "select provider, offer_key, price_usd_per_hour from current_offers order by 1, 2"
    assert _json("sql", q, "--db", str(tmp_path / "a.duckdb")) == \
        _json("sql", q, "--db", str(tmp_path / "b.duckdb"))


def test_recommend_on_the_bundled_snapshots(db: Path) -> None:
    out = json.loads(_cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--method",
                          "qlora", "--tokens", "1e8", "--limit", "5", "--db", str(db),
                          "--format", "json"))
    assert len(out["ranked"]) == 5 and out["offers_evaluated"] > 100
    totals = [r["total_usd"] for r in out["ranked"]]
    assert totals == sorted(totals)
    assert all(r["reasons"] and r["rejected_because"] is None for r in out["ranked"])
    table = _cli("recommend", "--model", "llama-3.1-8b", "--method", "qlora",
                 "--dataset-tokens", "5e7", "--epochs", "2", "--spot", "forbid", "--explain",
                 "--db", str(db))
    assert "offers set aside that were cheaper by the hour" in table
    # the README's job: its best whole run costs more per hour than offers it sets aside, and
    # --explain lists them; the offers set aside are counted by reason
    demo = _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--method", "qlora",
                "--tokens", "1e8", "--limit", "5", "--explain", "--db", str(db))
    assert "offers set aside that were cheaper by the hour" in demo
    assert re.search(r"set aside \d+ of \d+ offers — committed beyond the job: \d+", demo)
    # where no cheaper offer was set aside, --explain says so in one line instead of printing
    # an empty table
    alone = _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--method", "qlora",
                 "--tokens", "1e8", "--limit", "5", "--provider", "vastai", "--explain",
                 "--db", str(db))
    assert "no offer cheaper per hour than the best was set aside" in alone
    assert "offers set aside that were cheaper by the hour" not in alone
    cheaper = json.loads(_cli("recommend", "--model", "llama-3.1-8b", "--method", "qlora",
                              "--batch-size", "4", "--tokens", "1e8", "--db", str(db),
                              "--format", "json"))["rejected_cheaper"]
    assert any(r["rejected_because"].startswith("memory wall") for r in cheaper)


def test_recommend_require_sets_aside_and_counts(db: Path) -> None:
    out = json.loads(_cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--method",
                          "qlora", "--tokens", "1e8", "--require", "docker,per-second-billing",
                          "--keep-days", "2", "--download-gb", "20", "--db", str(db),
                          "--format", "json"))
    assert out["required"] == ["docker", "per-second-billing"] and out["keep_days"] == 2
    assert out["egress_gb"] == 20
    assert any(k.startswith("--require docker ") for k in out["set_aside"])
    for r in out["ranked"]:
        assert {c["what"] for c in r["charges"]} == {"billing", "storage", "egress"}
        assert next(c for c in r["charges"] if c["what"] == "billing")["rate"] == 1
    proc = subprocess.run([sys.executable, "-m", "gpuscout", "recommend", "--model",
                           "llama-3.1-8b", "--tokens", "1e8", "--require", "gpu", "--db",
                           str(db)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown requirement 'gpu'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_recommend_needs_a_training_volume(db: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gpuscout",
                           "recommend", "--model", "llama-3.1-8b", "--db", str(db)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "training volume" in proc.stderr


def test_providers_lists_every_registered_provider(db: Path) -> None:
    from gpuscout.adapters.registry import PROVIDERS
    from gpuscout.pipeline.lifecycle import lifecycle

    rows = _json("providers", "--db", str(db))
    assert [r["provider"] for r in rows] == sorted(PROVIDERS)
    assert {r["source"] for r in rows} <= {"api", "html"}
    for r in rows:
        if r["provider"] in lifecycle():  # shown, with why it no longer sells
            assert r["last_status"] == lifecycle()[r["provider"]].status and r["offers"] == 0
            assert "since" in r["last_error"]
            continue
        assert r["last_status"] == "ok" and not r["stale"] and r["offers"] > 0
        assert r["last_success_at"] is not None


def test_estimate_packed_data_has_no_stale_loss_segments() -> None:
    args = ["estimate", "--model", "qwen/qwen-7b-chat", "--method", "lora", "--seq-len", "8192",
            "--format", "json"]
    varied = json.loads(_cli(*args))
    packed = json.loads(_cli(*args, "--packed"))
    assert varied["breakdown"]["stale_loss_segments"] > 0
    assert packed["breakdown"]["stale_loss_segments"] == 0
    assert packed["peak_gb_per_gpu"] < varied["peak_gb_per_gpu"]


def test_every_run_status_has_a_style() -> None:
    from typing import get_args

    from gpuscout.cli.refresh_view import STYLE
    from gpuscout.warehouse.load import RunStatus

    assert set(STYLE) == set(get_args(RunStatus))


def test_the_demo_refresh_prints_its_table(tmp_path: Path) -> None:
    # The README's first command refreshes in table format, with a retired provider among them.
    out = _cli("refresh", "--offline", "--db", str(tmp_path / "w.duckdb"))
    assert "retired" in out and "cudo" in out


def test_price_age_defaults_agree_with_the_request() -> None:
    """The CLI and the API repeat the request's --max-price-age default (start-up stays
    light); they must not drift apart."""
    import inspect

    from gpuscout import api
    from gpuscout.cli.run_options import MAX_PRICE_AGE_DAYS as CLI_DEFAULT
    from gpuscout.pipeline.recommend.request import MAX_PRICE_AGE_DAYS, RecommendRequest

    api_default = inspect.signature(api.recommend).parameters["max_price_age_days"].default
    assert CLI_DEFAULT == api_default == MAX_PRICE_AGE_DAYS == \
        RecommendRequest.model_fields["max_price_age_days"].default


def test_providers_checklist_fits_100_columns_and_needs_no_warehouse(tmp_path: Path) -> None:
    from gpuscout.pipeline.profiles import PROVIDERS

    # no warehouse at --db: the checklist reads the shipped facts only
    text = _cli("providers", "--checklist", "--db", str(tmp_path / "none.duckdb"))
    lines = text.splitlines()
    assert all(len(line) < 100 for line in lines), max(lines, key=len)
    assert lines[0].split()[:4] == ["provider", "bill", "min", "stor"]
    shown = {line.split()[0] for line in lines[1:] if line and line[0] != " "}
    assert set(PROVIDERS) <= shown
    assert any(line.startswith("✓ yes  ✗ no  ? unknown") for line in lines)  # the legend
    runpod = next(line for line in lines if line.startswith("runpod "))
    assert runpod.split()[1:3] == ["1s", "?"]  # per-second billing, no minimum on record


def test_providers_checklist_as_json_and_csv() -> None:
    import csv
    import io

    from gpuscout.pipeline.checklist import COLUMNS
    from gpuscout.pipeline.profiles import PROVIDERS

    rows = _json("providers", "--checklist")
    assert sorted(r["provider"] for r in rows) == sorted(PROVIDERS)
    aws = next(r for r in rows if r["provider"] == "aws")
    cell = next(c for c in aws["cells"] if c["fact"] == "spot_notice_s")
    assert (cell["value"], cell["text"]) == (120, "2m")
    assert cell["source_url"].startswith("https://") and cell["verified_at"]
    table = list(csv.DictReader(io.StringIO(_cli("providers", "--checklist", "--format",
                                                 "csv"))))
    assert len(table) == len(PROVIDERS)
    for c in COLUMNS:
        assert c.fact in table[0] and f"{c.fact}_age_days" in table[0]
