"""The bandwidth model behind ``topolint estimate`` (imported only by that command and its callers).

Layout: hardware.py (links from the model's graph), refine.py (node facts that change links),
from_matrix.py and topology.py (what the estimate reads), search.py (channels), nccl_tables.py and
tuning.py (NCCL's tuning model), first_principles.py (hierarchical, parameter server, alltoall,
the network bound), model.py (``estimate``), training.py (the training-step view).
"""

from topolint.estimate.hardware import Bottleneck
from topolint.estimate.model import estimate, estimate_sizes
from topolint.estimate.results import AlgorithmEstimate, Estimate, EstimateError, Options

__all__ = ["AlgorithmEstimate", "Bottleneck", "Estimate", "EstimateError", "Options", "estimate", "estimate_sizes"]
