"""topolint: static topology analyzer and NCCL config linter for multi-GPU training."""

__version__ = "0.1.0"
