"""Rules made linear (issue 20) keep their findings: NUMA005 groups CPUs that overlap earlier
ones into one finding whose entity is the first's; ENV007 still finds the first conflicting
earlier setting; an element with too many attributes is TL001 with its line."""

from __future__ import annotations

import topolint


def _check(tmp_path, name: str, text: str, select: str):
    path = tmp_path / name
    path.write_text(text)
    return [f for f in topolint.check([str(path)], isolated=True, select=[select]).findings if f.code == select]


def test_cpus_sharing_one_affinity_are_one_grouped_finding(tmp_path):
    cpus = "".join(f'  <cpu numaid="{i}" affinity="0000ffff" arch="x86_64"/>\n' for i in range(30))
    findings = _check(tmp_path, "topo.xml", f'<system version="1">\n{cpus}</system>\n', "NUMA005")
    assert len(findings) == 1
    finding = findings[0]
    assert finding.group is not None and finding.group.kind == "members" and finding.group.total == 29
    assert finding.entity == finding.group.members[0] and finding.line == 3  # numaid 1, the first that overlaps
    # numaid 1 overlaps numaid 0 alone (one evidence line); the group line names the first eight and counts the rest
    assert finding.evidence[2:] == ['29 cpu elements overlap earlier ones: NUMA 1, NUMA 2, NUMA 3, NUMA 4, NUMA 5, '
                                    'NUMA 6, NUMA 7, NUMA 8 and 21 more']


def test_one_overlapping_cpu_keeps_its_single_finding(tmp_path):
    text = ('<system version="1">\n  <cpu numaid="0" affinity="0000ffff" arch="x86_64"/>\n'
            '  <cpu numaid="1" affinity="0000ff00" arch="x86_64"/>\n  <cpu numaid="2" affinity="ffff0000"/>\n</system>\n')
    findings = _check(tmp_path, "topo.xml", text, "NUMA005")
    assert [(f.line, f.group) for f in findings] == [(3, None)]


def test_env007_names_the_first_earlier_value_that_differs(tmp_path):
    text = "NCCL_DEBUG=WARN\nNCCL_DEBUG=WARN\nNCCL_DEBUG=INFO\nNCCL_DEBUG=INFO\nNCCL_DEBUG=WARN\n"
    findings = _check(tmp_path, ".env", text, "ENV007")
    # line 3 differs from line 1; line 4 too; line 5 (WARN) differs from the first INFO, line 3
    assert [(f.line, f.evidence[0].split(":")[1]) for f in findings] == [(3, "1"), (4, "1"), (5, "3")]


def test_an_element_with_too_many_attributes_is_tl001_at_its_line(tmp_path):
    attrs = " ".join(f'a{i}="1"' for i in range(300))
    findings = _check(tmp_path, "topo.xml", f'<system version="1">\n\n  <cpu {attrs}/>\n</system>\n', "TL001")
    assert [(f.line, "300 attributes" in f.message) for f in findings] == [(3, True)]
