"""The bandwidth model behind ``topolint estimate`` (networkx-free; imported only by that command)."""

from topolint.estimate.hardware import Bottleneck
from topolint.estimate.model import AlgorithmEstimate, Estimate, EstimateError, Options, estimate, estimate_sizes

__all__ = ["AlgorithmEstimate", "Bottleneck", "Estimate", "EstimateError", "Options", "estimate", "estimate_sizes"]
