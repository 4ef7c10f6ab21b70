"""The Python API, for notebooks and other tools: what `topolint check` does, as a function.

    >>> import topolint
    >>> result = topolint.check(["fixtures/samples/dgx-like-2socket-dump.xml"], select=["numa"])
    >>> result.summary.warning, result.findings[0].code
    (4, 'NUMA001')

The configuration is found per file as on the command line (the nearest ``.topolint.toml`` or
``pyproject.toml`` with ``[tool.topolint]``; ``config=`` one for every file, ``isolated=True`` none). The result cache is off unless ``cache=True``. Options that
cannot be used (an unknown selector, a bad configuration or site rule) raise ``UsageError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from topolint.commands import UsageError
from topolint.commands.check import CheckOptions, CheckResult, Summary, run_check, split_selectors
from topolint.engine.finding import Finding, Related

__all__ = ["check", "CheckResult", "Summary", "Finding", "Related", "UsageError"]


def check(paths: Iterable[str | Path] | str | Path = (".",), *, select: Iterable[str] | str | None = None,
          extend_select: Iterable[str] | str = (), ignore: Iterable[str] | str = (), preview: bool = False,
          fail_level: str | None = None, nccl_version: str | None = None, topology: str | Path | None = None,
          config: str | Path | None = None, isolated: bool = False, rule_dirs: Iterable[str | Path] = (),
          node: str | None = None, extend_exclude: Iterable[str] = (), force_exclude: bool = False,
          require_suppression_reason: bool = False, baseline: str | Path | None = None,
          baseline_missing: str = "error", project_root: str | Path | None = None, cache: bool = False,
          cache_dir: str | Path | None = None, cross_file: str = "include", drawings: bool = False) -> CheckResult:
    """Check topology dumps, node folders, cluster folders and config files, as `topolint check`.

    Selectors (``select``, ``extend_select``, ``ignore``) are codes, prefixes, categories, slugs
    or ALL, as a list or one comma-separated string. ``result.findings`` are the selected
    findings (``Finding``: code, severity, message, path, line, column, entity, evidence, fix;
    suppressed and baselined ones have ``suppressed=True``); ``result.summary`` counts them;
    ``result.exit_code()`` is what the command line would exit with; ``result.render("sarif")``
    gives any output format. ``cross_file="only"`` keeps the findings that involve several files
    (``"exclude"`` the others), as the pre-commit hooks do. ``drawings=True`` draws each node
    while it is checked, for ``render("html")`` and ``render("markdown")`` to show (without it they
    show the findings only).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    options = CheckOptions(
        paths=[str(p) for p in paths] or ["."], node=node,
        select=split_selectors(select) if select is not None else None,
        extend_select=split_selectors(extend_select), ignore=split_selectors(ignore), preview=preview,
        fail_level=fail_level, nccl_version=nccl_version,
        topology=str(topology) if topology is not None else None,
        project_root=Path(project_root) if project_root is not None else None,
        rule_dirs=[Path(d) for d in rule_dirs], cache=cache,
        cache_dir=Path(cache_dir) if cache_dir is not None else None,
        config=Path(config) if config is not None else None, isolated=isolated,
        drawings={} if drawings else None,
        extend_exclude=list(extend_exclude), force_exclude=force_exclude,
        require_suppression_reason=require_suppression_reason,
        baseline=Path(baseline) if baseline is not None else None, cross_file=cross_file,
        baseline_missing=baseline_missing,
    )
    if "-" in options.paths:
        raise UsageError("the Python API does not read standard input; pass a path")
    if fail_level is not None and fail_level not in ("error", "warning", "info"):
        raise UsageError(f"fail_level {fail_level!r}: expected error, warning or info")
    return run_check(options)
