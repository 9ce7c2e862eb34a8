"""The recommendation use case: feasible offers, whole-run cost, ranking and reasons.

Everything of it is in this package: the request and result types, the per-shape sizing
(`plans.py`), the per-offer facts kept for it (`facts.py`), the offers a request may use
(`candidates.py`), the pricing of each pricing pair (`pair_costs.py`) and of every offer by
its pair (`pricing.py`), and the rows shown with their reasons (`shown.sql`, `reasons.py`).
"""

from gpuscout.pipeline.recommend.rank import recommend
from gpuscout.pipeline.recommend.request import (
    Commitment,
    Objective,
    RecommendRequest,
    SpotPolicy,
    commitment_from_option,
    tokens_from_options,
)
from gpuscout.pipeline.recommend.result import RankedOffer, Recommendation, RejectedOffer

__all__ = ["Commitment", "Objective", "RankedOffer", "RecommendRequest", "Recommendation",
           "RejectedOffer", "SpotPolicy", "commitment_from_option", "recommend",
           "tokens_from_options"]
