"""Measured findings name the topology and configuration findings of the same run that explain
them: a busbw gap (PERF001/PERF002), GDR or P2P not used (PERF004/PERF005).

One pass after every rule ran, like suppression: a check sees one node, while the explanation is
often on another (the measured file's node and the ``--topology`` node). Only findings of rules
that cost bandwidth explain; the rules that produce them must have run (the default selection).
"""

from __future__ import annotations

from topolint.engine.finding import Finding, Related
from topolint.model.facts import Location, build

EXPLAINED = {"PERF001": "the gap", "PERF002": "the gap", "PERF004": "why GDR is off", "PERF005": "why P2P is off"}
EXPLAINERS = ("NUMA001", "NUMA002", "TOPO002", "TOPO003", "PCIE001", "PCIE002", "PCIE003", "PCIE004", "PCIE005",
              "NVL001", "NVL002", "NVL003", "NET002", "NET003", "NET004", "NET005", "NET007", "ENV006",
              "ROCE001", "ROCE002", "ROCE003", "PERF003", "PERF004", "PERF005")
MAX_RELATED = 8


def link_explanations(findings: list[Finding]) -> None:
    explainers = [f for f in findings if f.code in EXPLAINERS and f.severity != "info"]
    for finding in findings:
        what = EXPLAINED.get(finding.code)
        if what is None:
            continue
        others = [e for e in explainers if e is not finding and e.code != finding.code]
        for other in others[:MAX_RELATED]:
            location = build(Location, path=other.path, line=other.line, column=other.column)
            finding.related.append(Related(location=location, entity=other.entity,
                                           message=f"may explain {what}: {other.code} {other.message}"))
        if len(others) > MAX_RELATED:
            finding.evidence.append(f"{len(others) - MAX_RELATED} more findings of this run may explain {what}")
        if not others:
            finding.evidence.append(f"no topology or configuration finding of this run explains {what} "
                                    "(check with the node's NCCL topology dump and the job's settings)")
