"""HTML: one self-contained page (inline CSS and SVG, no request to any network; readable without
JavaScript, where a small inline script only filters the findings table).

``render_html(report)`` is `topolint check --format html`: a summary, every finding in a table, and
each drawn node (Report.pictures, drawing/views.py) with its findings and the estimate's
bottleneck marked, beside the estimate's table. ``render_node_html`` (`topolint graph --format
html`) and ``render_estimate_html`` (`topolint estimate --format html`) use the same template.
jinja2 autoescapes every value; values from inputs are made visible (control characters as
escapes) first. The page's Content-Security-Policy allows no fetch at all and only its own script.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from topolint import __version__
from topolint.model.entities import parse_entity
from topolint.reporters import Report
from topolint.reporters._group import group_line, repeated_note
from topolint.reporters._text import visible

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

FILTER_SCRIPT = """(function () {
  var box = document.getElementById("tl-filter");
  if (!box) { return; }
  box.hidden = false;
  var query = document.getElementById("tl-q"), level = document.getElementById("tl-sev");
  var rows = document.querySelectorAll("#tl-findings tbody tr"), count = document.getElementById("tl-shown");
  function apply() {
    var text = query.value.toLowerCase(), wanted = level.value, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var keep = (!wanted || row.getAttribute("data-severity") === wanted) &&
                 (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.hidden = !keep;
      if (keep) { shown++; }
    }
    count.textContent = shown + " of " + rows.length + " shown";
  }
  query.addEventListener("input", apply);
  level.addEventListener("change", apply);
  apply();
})();
"""


def _environment():
    import jinja2
    from markupsafe import Markup

    def finalize(value):
        if isinstance(value, Markup) or not isinstance(value, str):
            return value
        return visible(value)

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, finalize=finalize, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


def _page(**context) -> str:
    from markupsafe import Markup

    digest = base64.b64encode(hashlib.sha256(FILTER_SCRIPT.encode()).digest()).decode()
    context.setdefault("estimate_findings", [])
    context.setdefault("findings_total", len(context.get("findings", [])))
    template = _environment().get_template("report.html.j2")
    return template.render(tool_version=__version__, script=Markup(FILTER_SCRIPT), script_hash=f"sha256-{digest}",
                           **context)


def _finding(f, index: int, anchors: dict[str, str]) -> dict:
    related = [f"{r.location.path}:{r.location.line}: {r.message} ({r.entity})" for r in f.related]
    return {"id": f"f-{index}", "severity": f.severity, "code": f.code, "slug": f.slug,
            "where": f"{f.path}:{f.line}" + (f":{f.column}" if f.column else ""), "node": f.node,
            "entity": f.entity, "message": f.message, "evidence": list(f.evidence), "related": related,
            "fix": f.fix, "drawn": anchors.get(f.node), "group": group_line(f.group) if f.group else None}


def _label(diagram, entity: str | None) -> str:
    if not entity:
        return "-"
    box = diagram.box_of_entity(entity) if diagram is not None else None
    if box is not None and box.kind == "gpu":
        return box.title  # "GPU 0", as the drawing names it
    ref = parse_entity(entity)
    if box is not None and box.kind == "switch" and ref.kind == "pci":
        return f"switch {ref.name}"
    return ref.label


def channel_orders(diagram, algorithm) -> list[str]:
    """The distinct channel orders of ``algorithm`` (estimate AlgorithmEstimate), each after the
    channels that take it: "channels 0, 4: NIC mlx5_0:1 > GPU 0 > ... > NIC mlx5_0:1"."""
    seen: dict[tuple, list[int]] = {}
    for number, order in enumerate(algorithm.orders):
        seen.setdefault((order.net_in, order.gpus, order.net_out), []).append(number)
    lines = []
    for (net_in, gpus, net_out), numbers in seen.items():
        steps = ([_label(diagram, net_in)] if net_in else []) + [_label(diagram, g) for g in gpus] + \
            ([_label(diagram, net_out)] if net_out else [])
        name = "channel" if len(numbers) == 1 else "channels"
        lines.append(f"{name} {', '.join(map(str, numbers))}: {' > '.join(steps)}")
    return lines


def _estimate(picture, estimate) -> dict | None:
    if estimate is None or not estimate.algorithms:
        return None
    inputs = estimate.inputs
    rows = [{"name": a.name, "protocol": a.protocol or "-", "busbw": f"{a.busbw_GBps:.1f}",
             "algbw": f"{a.algbw_GBps:.1f}", "time": f"{a.time_us:.1f}", "selected": a.name == estimate.selected,
             "fastest": a.name == estimate.fastest,
             "bottleneck": f"{a.bottleneck.link} {_label(picture.diagram if picture else None, a.bottleneck.entity)}",
             "detail": a.bottleneck.detail,
             "where": f"{a.bottleneck.path}:{a.bottleneck.line}" if a.bottleneck.path else ""}
            for a in estimate.algorithms]
    selected = estimate.selected_estimate
    from topolint.estimate.results import CHANNEL_ORDER_SOURCE

    return {"heading": f"{inputs['collective']} of {_size(inputs['size_bytes'])} per rank on {inputs['nodes']} "
                       f"node(s) x {inputs['gpus_per_node']} GPUs, NCCL {inputs['nccl_version']}",
            "rows": rows, "selected": estimate.selected,
            "orders": channel_orders(picture.diagram if picture else None, selected) if selected else [],
            "orders_source": CHANNEL_ORDER_SOURCE, "assumptions": list(estimate.assumptions)}


def _size(value: int) -> str:
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{unit}"
    return f"{value}B"


def _picture(picture, index: int, finding_ids: dict[int, str]) -> dict:
    from markupsafe import Markup

    mine = [{"id": finding_ids.get(id(f)), "code": f.code if not isinstance(f, dict) else f["code"],
             "severity": f.severity if not isinstance(f, dict) else f["severity"],
             "message": f.message if not isinstance(f, dict) else f["message"]}
            for f in picture.findings]
    return {"anchor": f"node-{index}", "name": picture.node, "source": picture.diagram.source,
            "svg": Markup(picture.svg()), "findings": mine, "notes": list(picture.diagram.notes),
            "estimate": _estimate(picture, picture.estimate), "estimate_note": picture.estimate_note}


def render_html(report: Report) -> str:
    """`check --format html`."""
    from topolint.engine.node_groups import shown_once

    pictures = list(getattr(report, "pictures", []) or [])
    anchors = {p.node: f"node-{i}" for i, p in enumerate(pictures)}
    active = [f for f in report.findings if not f.suppressed]
    shown, repeated = shown_once(active)  # a finding repeated on many nodes: one row, with its nodes
    findings = [_finding(f, i, anchors) for i, f in enumerate(shown)]
    row_of_group = {f.group.id: row["id"] for f, row in zip(shown, findings) if f.group is not None}
    ids = {id(f): row["id"] for f, row in zip(shown, findings)}
    ids.update((id(f), row_of_group[f.group.id]) for f in active if id(f) not in ids and f.group is not None)
    counts = report.counts()
    hidden = [f for f in report.findings if f.suppressed]
    summary = {**counts, "total": sum(counts.values()),
               "suppressed": sum(1 for f in hidden if f.suppression != "external"),
               "baselined": sum(1 for f in hidden if f.suppression == "external"),
               "nodes": len({f.node for f in report.findings} | {p.node for p in pictures}),
               "unreadable": report.unreadable, "internal_errors": [e.line() for e in report.internal_errors],
               "not_drawn": getattr(report, "not_drawn", 0), "repeated": repeated_note(len(active), repeated)}
    return _page(kind="check", title="topolint report", nccl_version=report.nccl_version, summary=summary,
                 findings=findings, findings_total=len(active),
                 pictures=[_picture(p, i, ids) for i, p in enumerate(pictures)], estimates=[])


def render_node_html(picture, findings: list, nccl_version: str) -> str:
    """`graph --format html`: one node's drawing, its findings and its estimate."""
    rows = [_finding(f, i, {picture.node: "node-0"}) for i, f in enumerate(findings)]
    ids = {id(f): row["id"] for f, row in zip(findings, rows)}
    return _page(kind="graph", title=f"topolint graph: {picture.node}", nccl_version=nccl_version, summary=None,
                 findings=rows, pictures=[_picture(picture, 0, ids)], estimates=[])


def render_estimate_html(run, picture) -> str:
    """`estimate --format html`: each size's table with the channel orders of NCCL's selected
    algorithm, and the node drawn with the bottlenecks of the largest size marked."""
    estimates = [_estimate(picture, e) for e in run.estimates]
    drawn = []
    if picture is not None:
        drawn = [_picture(picture, 0, {})]
        drawn[0]["estimate"] = None  # the tables come first, for every size
    version = run.estimates[0].inputs["nccl_version"] if run.estimates else ""
    return _page(kind="estimate", title="topolint estimate", nccl_version=version, summary=None, findings=[],
                 pictures=drawn, estimates=[e for e in estimates if e],
                 estimate_findings=[{"code": f["code"], "severity": f["severity"], "message": f["message"],
                                     "where": f"{f['path']}:{f['line']}", "entity": f["entity"],
                                     "on": ", ".join(f["on_bottleneck_of"])} for f in run.findings])
