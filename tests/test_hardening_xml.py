"""No XML input ever opens a DTD, an entity or an XInclude (issue 7, "Hangs"): each DOCTYPE here
names a FIFO, /dev/zero or a missing file. The landed parser (collect_ids=False) opened them, so
the FIFO cases hung and a missing file changed the result. Checked without strace: a FIFO that
is opened blocks the child until the timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.source import InputError
from topolint.parsers import xmlsafe

GOOD = FIXTURES / "rules" / "NUMA001" / "good.xml"
BODY = GOOD.read_text(encoding="utf-8")

DOCTYPES = [
    '<!DOCTYPE system SYSTEM "{target}">',
    '<!DOCTYPE system [<!ENTITY % p SYSTEM "{target}"> %p;]>',
    '<!DOCTYPE system PUBLIC "-//x//y" "{target}">',
    '<!DOCTYPE system [<!ENTITY e SYSTEM "{target}">]>',
]


def _check_child(path, cwd, timeout=30):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOPOLINT_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "topolint", "check", str(path), "--format", "json"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("doctype", DOCTYPES)
@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_doctype_naming_a_fifo_or_dev_zero_is_never_opened(tmp_path, doctype, target):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "topo.xml").write_text(doctype.format(target=target) + "\n" + BODY, encoding="utf-8")
    result = _check_child("topo.xml", tmp_path)  # a TimeoutExpired here is the old hang
    findings = json.loads(result.stdout)["findings"]
    assert [f["code"] for f in findings if f["code"] in ("TOPO001", "TL001")] == ["TOPO001"]
    assert any("DOCTYPE" in e for f in findings if f["code"] == "TOPO001" for e in f["evidence"])


@pytest.mark.parametrize("doctype", DOCTYPES)
def test_a_missing_dtd_and_a_present_one_give_the_same_result(tmp_path, doctype):
    (tmp_path / "present.dtd").write_text('<!ENTITY x "y">', encoding="utf-8")
    outputs = []
    for target in ("present.dtd", "missing.dtd"):
        (tmp_path / "topo.xml").write_text(doctype.format(target=target) + "\n" + BODY, encoding="utf-8")
        result = run_cli("check", "topo.xml", "--format", "json", "--no-cache", cwd=tmp_path)
        outputs.append(json.loads(result.stdout)["findings"])
    assert outputs[0] == outputs[1]


def test_xinclude_is_not_processed(tmp_path):
    text = BODY.replace('<system version="1">',
                        '<system version="1" xmlns:xi="http://www.w3.org/2001/XInclude">'
                        '<xi:include href="/etc/passwd" parse="text"/>', 1)
    root = xmlsafe.parse_xml("t.xml", text)
    assert "root:" not in "".join(root.itertext())


def test_element_count_is_bounded_before_parsing():
    text = "<system>" + "<cpu/>" * (xmlsafe.MAX_ELEMENTS + 1) + "</system>"
    with pytest.raises(InputError, match="more than 200000 elements"):
        xmlsafe.parse_xml("t.xml", text)


def test_nesting_is_bounded_by_libxml2():
    depth = 300
    with pytest.raises(InputError, match="depth"):
        xmlsafe.parse_xml("t.xml", "<system>" + "<pci>" * depth + "</pci>" * depth + "</system>")
