"""Each provider's health at a glance: `gpuscout providers`, the API and the table of keys."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from page_edits import without_members
from rich.console import Console
from typer.testing import CliRunner

import gpuscout
from gpuscout.adapters.archive import Capture, load_captures
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import PROVIDERS, get_adapter
from gpuscout.cli.app import app
from gpuscout.cli.providers_view import print_table
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError, MissingCredentialsError
from gpuscout.pipeline.health import provider_health, provider_keys, read_keys
from gpuscout.pipeline.refresh import Source, collected, load, new_run_id, refresh
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


# -- the table of keys ---------------------------------------------------------------------------


def test_every_key_an_adapter_reads_has_one_row_saying_what_it_adds() -> None:
    read = {(name, v) for name in PROVIDERS for v in get_adapter(name).CREDENTIALS}
    assert set(provider_keys()) == read
    assert all(k.adds and k.source for k in provider_keys().values())


def _needs(provider: str, variable: str) -> bool:
    """Whether the adapter's live fetch refuses to run without `variable` (the others set)."""
    others = {v: "x-test-value" for v in get_adapter(provider).CREDENTIALS if v != variable}
    transport = httpx.MockTransport(lambda r: httpx.Response(404))
    with HttpClient(provider, transport=transport, max_attempts=1) as client:
        try:
            get_adapter(provider).fetch(client, others)
        except MissingCredentialsError as exc:
            return exc.variable == variable
        except Exception:  # the request went out: the key was not needed to make it
            return False
    return False


@pytest.mark.parametrize(("provider", "variable"), sorted(provider_keys()))
def test_a_key_is_needed_exactly_when_the_adapter_says_so(provider: str, variable: str) -> None:
    assert provider_keys()[(provider, variable)].required is _needs(provider, variable)


def test_a_bad_row_of_the_key_table_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "k.csv"
    bad.write_text("provider,variable,required,adds,source\nx,X_KEY,maybe,more,here\n")
    with pytest.raises(DataError, match="k.csv:2: .*required is yes|no"):
        read_keys(bad)


# -- a warehouse with a drift in it ------------------------------------------------------------


def _latitude(db: Path, capture: Capture) -> None:
    c = collected("latitude", now_utc(), [capture], [], settings=Settings(),
                  catalog=load_catalog())
    with connect(db) as con:
        load(con, c, run_id=new_run_id(now_utc()), mode="replay", settings=Settings())


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lambda loaded; Latitude loaded, then held back as drift the next day."""
    path = tmp_path_factory.mktemp("health") / "w.duckdb"
    refresh(["lambda"], db=path, source=Source.offline(), fx={"USD": 1.0})
    (page,) = load_captures(FIXTURES, "latitude")
    _latitude(path, page)
    drifted = without_members(page, "inStock", "stockLevel")
    _latitude(path, drifted.model_copy(update={"fetched_at": page.fetched_at
                                               + timedelta(days=1)}))
    return path


def test_health_names_the_last_drift_and_why_and_the_price_age(db: Path) -> None:
    (page,) = load_captures(FIXTURES, "latitude")
    now = page.fetched_at + timedelta(days=3)
    with connect(db, read_only=True) as con:
        rows = {r.provider: r for r in provider_health(con, now=now, keys_set=lambda v: {})}
    assert list(rows) == list(PROVIDERS)  # those never refreshed here too
    lat = rows["latitude"]
    assert (lat.last_status, lat.stale, lat.offers, lat.last_problem_status) \
        == ("drift", True, 18, "drift")
    assert lat.last_problem_error is not None and lat.last_problem_error.startswith(
        "latitude: drift: stock empty on 100% of 18 offers")
    assert lat.price_age_days == pytest.approx(3.0)  # its newest current price: the 22nd's
    assert lat.keys == [] and lat.keys_summary == "none"
    lam = rows["lambda"]
    assert (lam.last_status, lam.last_problem_status, lam.stale) == ("ok", None, False)
    assert [(k.variable, k.set, k.required) for k in lam.keys] \
        == [("LAMBDA_API_KEY", False, False)]
    assert rows["gcp"].last_status == "never" and rows["gcp"].keys[0].required
    assert (rows["cudo"].last_status, rows["cudo"].not_fetched) == ("never", "retired")
    assert rows["cudo"].not_fetched_why is not None
    assert "retired since" in rows["cudo"].not_fetched_why


def test_whether_a_key_is_set_comes_from_the_refreshs_own_reader(db: Path) -> None:
    with connect(db, read_only=True) as con:
        rows = {r.provider: r for r in provider_health(
            con, now=now_utc(), keys_set=lambda names: {"HOTAISLE_API_KEY": "k"}
            if "HOTAISLE_API_KEY" in names else {})}
    assert [(k.variable, k.set) for k in rows["hotaisle"].keys] \
        == [("HOTAISLE_API_KEY", True), ("HOTAISLE_TEAM_HANDLE", False)]
    assert rows["hotaisle"].keys_summary == "1/2 set"


def test_the_api_returns_the_same_rows(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAST_API_KEY", "vk-test")
    rows = {r.provider: r for r in gpuscout.provider_health(db=db)}
    assert rows["latitude"].last_problem_status == "drift"
    assert [(k.variable, k.set) for k in rows["vastai"].keys] == [("VAST_API_KEY", True)]
    assert isinstance(rows["vastai"], gpuscout.ProviderHealth)


def test_the_table_fits_100_columns_and_says_why_and_what_keys_add(db: Path) -> None:
    with connect(db, read_only=True) as con:
        rows = provider_health(con, now=now_utc(), keys_set=lambda v: {})
    console = Console(width=100, record=True, color_system=None)
    print_table(rows, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "primeintellect" in text  # the longest name, unbroken
    flat = " ".join(text.split())  # wrapped lines joined again
    assert "latitude drift" in flat and "stock empty on 100% of 18 offers" in flat
    assert ("runpod RUNPOD_API_KEY (not set): the REST catalog (GET /v2/catalog/gpus) beside "
            "the GraphQL query") in flat
    assert "gcp GCP_API_KEY (not set, needed): the provider itself" in flat
    assert "cudo retired: cudo retired since 2026-03-31" in flat


def test_the_cli_lists_every_provider_with_its_keys(db: Path) -> None:
    result = CliRunner().invoke(app, ["providers", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["provider"]: r for r in json.loads(result.stdout)}
    assert rows["latitude"]["last_problem_status"] == "drift"
    assert rows["seeweb"]["keys"] == [{
        "variable": "SEEWEB_API_TOKEN", "set": False, "required": False,
        "adds": "the ECS v2 plans API: whole-plan prices per region, instead of the public "
                "product page"}]
    csv = CliRunner().invoke(app, ["providers", "--db", str(db), "--format", "csv"])
    assert "HOTAISLE_API_KEY=unset (needed); HOTAISLE_TEAM_HANDLE=unset (needed)" in csv.stdout
