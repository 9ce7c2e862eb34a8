"""The options of a priced run, shared by `gpuscout recommend` and `gpuscout report`.

The job options themselves (model, method, precision, batch, ...) come from `Job`
(`job_options.py`); these are the training volume and the ranking options. Only typer is
imported at start-up.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class Objective(StrEnum):
    cost = "cost"
    time = "time"
    balanced = "balanced"


class SpotPolicy(StrEnum):
    allow = "allow"
    prefer = "prefer"
    forbid = "forbid"


TokensOpt = Annotated[float | None, typer.Option("--tokens", help="training tokens in total")]
DatasetTokensOpt = Annotated[float | None, typer.Option(
    "--dataset-tokens", help="tokens in the dataset (with --epochs)")]
EpochsOpt = Annotated[float | None, typer.Option(
    "--epochs", min=0, help="passes over the dataset")]
ObjectiveOpt = Annotated[Objective, typer.Option(
    "--objective", help="cost: the cheapest run; time: the fastest; balanced: the cheapest of "
    "the offers within 25 % of the fastest one's hours")]
MaxHoursOpt = Annotated[float | None, typer.Option("--max-hours", min=0)]
MaxUsdOpt = Annotated[float | None, typer.Option(
    "--max-usd", min=0, help="the whole run's cost at most, USD (when no offer meets it, "
    "--explain lists what each would cost)")]
CommitmentOpt = Annotated[str, typer.Option(
    "--commitment", metavar="none|allow|max-months=N",
    help="committed offers (a minimum term paid whether used or not): none ranks only those "
         "whose term the job's own time covers (--explain lists the others with their "
         "whole-term cost); allow ranks all at their whole-term cost; max-months=N those with "
         "a term of at most N months")]
MinReliabilityOpt = Annotated[float | None, typer.Option(
    "--min-reliability", min=0, max=1, help="a marketplace host's reliability score, 0 to 1 "
    "(offers whose source gives none are kept)")]
SpotOpt = Annotated[SpotPolicy, typer.Option("--spot", help="spot offers")]
CheckpointEveryOpt = Annotated[float | None, typer.Option(
    "--checkpoint-every", min=1, help="minutes between checkpoints [default: per offer, the "
                                      "Young/Daly interval from its write time and MTBF]")]
# The request's default (pipeline/recommend/request.py), repeated so that start-up does not
# import the recommendation; tests/test_cli.py checks that the two agree.
MAX_PRICE_AGE_DAYS = 7.0
MaxPriceAgeOpt = Annotated[float, typer.Option(
    "--max-price-age", min=0, help="days: live prices last seen longer ago are not ranked "
    "(--explain lists them); 0: no limit. Replayed captures are exempt and labelled")]
StorageGbOpt = Annotated[float | None, typer.Option(
    "--storage-gb", min=0, help="persistent storage of the run [default: base model + "
                                "dataset + tokenized cache + 2 checkpoints + final weights]")]
KeepDaysOpt = Annotated[float, typer.Option(
    "--keep-days", min=0, help="days the run's storage is kept (and charged) after it")]
DownloadGbOpt = Annotated[float | None, typer.Option(
    "--download-gb", min=0, help="GB downloaded at the end, charged as egress [default: the "
                                 "final weights, or the adapter of a PEFT run]")]
RequireOpt = Annotated[str | None, typer.Option(
    "--require", metavar="ssh,docker,jupyter,persistent-storage,per-second-billing",
    help="only offers whose provider documents these; those where one is missing or unknown "
         "are set aside and counted (--explain lists the ones that would have won)")]
ProviderOpt = Annotated[list[str] | None, typer.Option("--provider", "-p")]
RegionOpt = Annotated[str | None, typer.Option("--region")]
