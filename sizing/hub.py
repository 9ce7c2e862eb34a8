"""A model's `config.json` from the Hugging Face Hub, and the local caches that hold one.

Three places hold a config, read in this order by `gpuscout.sizing.model_source`:

- the Hub itself, only when the user opts in (`--online`, or `GPUSCOUT_ONLINE=1`; never when
  `HF_HUB_OFFLINE=1`): `https://huggingface.co/<id>/resolve/main/config.json`, with the token
  in `HF_TOKEN` for gated repositories. What it returns is kept in gpuscout's cache directory
  (`GPUSCOUT_CACHE_DIR`, else the platform's user cache) with the commit it came from and the
  date it was read, so the same id resolves offline afterwards;
- that cache, offline;
- the Hugging Face cache that `transformers` and `huggingface_hub` fill when a model is
  downloaded (`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`):
  `models--<org>--<name>/snapshots/<commit>/config.json`, the commit named by `refs/main`.

The network call is one injectable function (`Fetcher`), so nothing here reaches the network
unless a caller passes the default fetcher and the user asked for it; httpx loads only then.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import MAX_CONFIG_BYTES, read_config_file

HUB_URL = "https://huggingface.co"
TIMEOUT_S = 15.0
# Hub repository ids: an org and a name of letters, digits, '-', '_' and '.', at most 96 each
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


@dataclass(frozen=True)
class HubResponse:
    """What one GET returned: status, body (at most MAX_CONFIG_BYTES + 1) and the commit."""

    status: int
    body: bytes
    revision: str | None = None


# (url, headers) -> response; raises OSError (or any httpx error) when the Hub cannot be reached
Fetcher = Callable[[str, Mapping[str, str]], HubResponse]


@dataclass(frozen=True)
class HubConfig:
    """A config.json and where it was read: a URL with its commit, or a cache path."""

    config: dict[str, Any]
    source: str
    revision: str | None
    read_at: str | None = None


def online_requested(flag: bool | None, env: Mapping[str, str]) -> bool:
    """--online/--offline when given, else GPUSCOUT_ONLINE; HF_HUB_OFFLINE=1 always wins."""
    if env.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes"):
        return False
    if flag is not None:
        return flag
    return env.get("GPUSCOUT_ONLINE", "").strip().lower() in ("1", "true", "yes")


def cache_dir(env: Mapping[str, str]) -> Path:
    """Where configs read from the Hub are kept."""
    if env.get("GPUSCOUT_CACHE_DIR"):
        return Path(env["GPUSCOUT_CACHE_DIR"]) / "hub"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("gpuscout", appauthor=False)) / "hub"


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def _repo_folder(repo_id: str) -> str:
    return "models--" + repo_id.replace("/", "--")


def _httpx_fetcher(url: str, headers: Mapping[str, str]) -> HubResponse:
    import httpx  # only when the user asked for the network

    with httpx.Client(timeout=TIMEOUT_S, follow_redirects=True) as client, \
            client.stream("GET", url, headers=dict(headers)) as r:
        body = b""
        for chunk in r.iter_bytes():
            body += chunk
            if len(body) > MAX_CONFIG_BYTES:
                break
        return HubResponse(status=r.status_code, body=body,
                           revision=r.headers.get("x-repo-commit"))


def fetch_config(repo_id: str, env: Mapping[str, str], fetcher: Fetcher | None = None,
                 now: datetime | None = None) -> HubConfig:
    """Read `repo_id`'s config.json from the Hub and keep it in the cache (one-line errors)."""
    url = f"{HUB_URL}/{repo_id}/resolve/main/config.json"
    headers = {"User-Agent": "gpuscout"}
    token = env.get("HF_TOKEN", "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        resp = (fetcher or _httpx_fetcher)(url, headers)
    except Exception as e:  # any transport failure is one line for the user
        raise UserInputError(f"cannot reach the Hugging Face Hub for {repo_id} "
                             f"({type(e).__name__}); retry, or drop --online to use the "
                             f"local caches and the catalog") from None
    if resp.status in (401, 403):
        hint = ("HF_TOKEN was refused: accept the model's licence on its page, or check the "
                "token" if token else "it is gated or private: set HF_TOKEN to a token with "
                "access")
        raise UserInputError(f"{repo_id}: the Hub answered {resp.status}; {hint}")
    if resp.status == 404:
        raise UserInputError(f"{repo_id}: no such model on the Hugging Face Hub (or it has no "
                             f"config.json)")
    if resp.status != 200:
        raise UserInputError(f"{repo_id}: the Hub answered HTTP {resp.status} for config.json")
    if len(resp.body) > MAX_CONFIG_BYTES:
        raise UserInputError(f"{repo_id}: config.json is over {MAX_CONFIG_BYTES:,} bytes")
    try:
        cfg = json.loads(resp.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise UserInputError(f"{repo_id}: the Hub's config.json is not JSON") from None
    if not isinstance(cfg, dict):
        raise UserInputError(f"{repo_id}: the Hub's config.json is not a JSON object")
    read_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = f"{url} (commit {resp.revision or 'unknown'}, read {read_at})"
    found = HubConfig(config=cfg, source=source, revision=resp.revision, read_at=read_at)
    _store(repo_id, found, env)
    return found


def _store(repo_id: str, found: HubConfig, env: Mapping[str, str]) -> None:
    folder = cache_dir(env) / _repo_folder(repo_id)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / "config.json.tmp"
        tmp.write_text(json.dumps({"config": found.config, "source": found.source,
                                   "revision": found.revision, "read_at": found.read_at}),
                       encoding="utf-8")
        tmp.replace(folder / "config.json")
    except OSError:
        pass  # an unwritable cache costs the next offline run, not this one


def cached_config(repo_id: str, env: Mapping[str, str]) -> HubConfig | None:
    """The config an earlier --online run kept, if any."""
    path = cache_dir(env) / _repo_folder(repo_id) / "config.json"
    if not path.is_file():
        return None
    kept = read_config_file(path)
    cfg = kept.get("config")
    if not isinstance(cfg, dict):
        raise UserInputError(f"{path}: not a cached config (delete it to read the Hub again)")
    return HubConfig(config=cfg, source=f"{kept.get('source')} (cached)",
                     revision=kept.get("revision"), read_at=kept.get("read_at"))


def hf_cached_config(repo_id: str, env: Mapping[str, str]) -> HubConfig | None:
    """The config.json of a model downloaded with transformers / huggingface_hub, if any:
    the snapshot `refs/main` names, else the most recently written snapshot."""
    repo = hf_cache_dir(env) / _repo_folder(repo_id)
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    revision = None
    ref = repo / "refs" / "main"
    if ref.is_file():
        revision = ref.read_text(encoding="utf-8", errors="replace").strip()[:64] or None
    candidates = [snapshots / revision / "config.json"] if revision else []
    if not candidates or not candidates[0].is_file():
        found = [p for p in snapshots.glob("*/config.json") if p.is_file()]
        candidates = sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)
        revision = candidates[0].parent.name if candidates else None
    if not candidates or not candidates[0].is_file():
        return None
    # the snapshot's file is a link into blobs/: resolve it so the regular-file check applies
    path = candidates[0].resolve()
    return HubConfig(config=read_config_file(path), revision=revision,
                     source=f"local Hugging Face cache {candidates[0]} (commit {revision})")


def environment() -> dict[str, str]:
    """The variables this module reads, from the process environment."""
    names = ("HF_HUB_OFFLINE", "GPUSCOUT_ONLINE", "GPUSCOUT_CACHE_DIR", "HF_HUB_CACHE",
             "HF_HOME", "HF_TOKEN")
    return {n: os.environ[n] for n in names if n in os.environ}
