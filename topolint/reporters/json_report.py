"""JSON output, described by docs/json-output.schema.json."""

from __future__ import annotations

from topolint import __version__
from topolint.reporters import Report
from topolint.reporters._group import group_document
from topolint.reporters._json_text import dumps_indented

JSON_FORMAT_VERSION = 1


def finding_dict(f) -> dict:
    return {
        "code": f.code,
        "slug": f.slug,
        "category": f.category,
        "severity": f.severity,
        "message": f.message,
        "path": f.path,
        "line": f.line,
        "column": f.column,
        "node": f.node,
        "entity": f.entity,
        "related": [
            {"path": r.location.path, "line": r.location.line, "column": r.location.column,
             "entity": r.entity, "message": r.message, **({"via": list(r.via)} if r.via is not None else {})}
            for r in f.related
        ],
        "evidence": list(f.evidence),
        "fix": f.fix,
        "autofix": f.autofix.as_dict() if f.autofix else None,
        "fingerprint": f.fingerprint,
        "suppressed": f.suppressed,
        **({"suppression": f.suppression or "inSource", "justification": f.justification or ""}
           if f.suppressed else {}),
        **({"group": group_document(f.group)} if f.group is not None else {}),
    }


def render_json(report: Report) -> str:
    counts = report.counts()
    document = {
        "version": JSON_FORMAT_VERSION,
        "tool": {"name": "topolint", "version": __version__},
        "findings": [finding_dict(f) for f in report.findings],
        "summary": {
            "total": sum(counts.values()),
            "by_severity": counts,
            "suppressed": sum(1 for f in report.findings if f.suppressed),
            "nccl_version": report.nccl_version,
        },
    }
    if report.internal_errors:
        document["internal_errors"] = [{"input": e.input, "rule": e.rule, "error": e.error}
                                       for e in report.internal_errors]
    return dumps_indented(document) + "\n"
