"""Rule definitions and their documentation stay true: docs/rules/ is regenerated, every
definition validates, every documented example does what it says, and codes, slugs and
severities agree with the shared rule catalog.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from topolint.docs import generated_pages
from topolint.engine.rule import RuleDefinition, load_rules

DOCS = ROOT / "docs" / "rules"
CATALOG = ROOT.parent / "shared" / "reference" / "rule-catalog.md"
REGENERATE = "docs/rules/ is stale: run `python -m topolint.docs` and commit the result"

RULES = load_rules()


def test_docs_are_up_to_date():
    expected = generated_pages(RULES)
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*") if p.is_file()} if DOCS.is_dir() else {}
    missing = sorted(set(expected) - set(on_disk))
    extra = sorted(set(on_disk) - set(expected))
    changed = sorted(name for name in set(expected) & set(on_disk) if expected[name] != on_disk[name])
    assert not (missing or extra or changed), f"{REGENERATE} (missing: {missing}, extra: {extra}, changed: {changed})"


def test_docs_index_links_every_rule():
    index = generated_pages(RULES)["README.md"]
    for rule in RULES:
        assert f"[{rule.code}]({rule.code}.md)" in index


def test_every_rule_definition_validates():
    validated = load_rules(validate=True)
    assert [r.code for r in validated] == [r.code for r in RULES]
    for rule in validated:
        assert isinstance(rule, RuleDefinition)
        assert Path(rule.source).stem == rule.code, f"{rule.source}: file name must be the rule code"
        assert "default" in rule.messages and "default" in rule.fixes, rule.code


def test_codes_and_slugs_are_unique():
    slugs = [r.slug for r in RULES]
    assert len(slugs) == len(set(slugs))


def test_every_check_module_exists():
    from topolint.checks import load_check

    for rule in RULES:
        if rule.check == "inputs":
            continue
        module = load_check(rule.check)
        assert hasattr(module, "NEEDS") and hasattr(module, "Parameters") and hasattr(module, "check"), rule.code
        module.Parameters(**rule.parameters)  # the definition's parameters fit the check


# What one example file of each format can provide (a topo -m matrix is "text").
EXAMPLE_KINDS = {"xml": {"topology", "topology-dump", "topology or matrix", "complete topology or matrix",
                         "complete topology or matrix, or nvlink-status"},
                 "text": {"matrix", "topology or matrix", "complete topology or matrix",
                          "complete topology or matrix, or nvlink-status", "input that can be partial"},
                 "lspci": {"lspci", "topology-dump or lspci"},
                 "dmesg": {"dmesg", "dmesg or cmdline"},
                 "nccl-tests": {"nccl-tests", "nccl-log"},  # nccl-tests output (INFO lines may be inside)
                 "nccl-log": {"nccl-log"},
                 "nvidia-smi-q": {"nvidia-smi-q"}}
EXAMPLE_KINDS["xml"].add("link speeds")  # NET005 reads a dump's net speeds too
# Fabric outputs (one file each, written as bad.txt / good.txt and recognised by content).
EXAMPLE_KINDS.update({"ibstat": {"ports", "link speeds"}, "ibv_devinfo": {"ports", "link speeds"},
                      "ethtool": {"ethtool", "link speeds"}, "mlnx_qos": {"qos"}, "sysfs": {"qos", "gids"}})


def _example_rules() -> list:
    """Rules whose examples are one file (XML, or a text matrix) that the rule can be run on by itself."""
    from topolint.checks import load_check

    chosen = []
    for rule in RULES:
        if rule.check == "inputs" or rule.docs.example_format not in EXAMPLE_KINDS:
            continue
        needs = set(load_check(rule.check).NEEDS)
        if needs <= EXAMPLE_KINDS[rule.docs.example_format]:
            chosen.append(rule)
    return chosen


def _codes(stdout: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\S+:\d+(?::\d+)?: ([A-Z]+\d{3}) ", stdout, re.M)]


@pytest.mark.parametrize("rule", _example_rules(), ids=lambda r: r.code)
def test_documented_examples(rule, tmp_path):
    suffix = "xml" if rule.docs.example_format == "xml" else "txt"
    for kind in ("bad", "good"):
        (tmp_path / f"{kind}.{suffix}").write_text(getattr(rule.docs, kind).strip("\n") + "\n", encoding="utf-8")
    bad = run_cli("check", f"bad.{suffix}", "--select", rule.code, "--preview", "--format", "concise", cwd=tmp_path)
    assert rule.code in _codes(bad.stdout), f"{rule.code} docs.bad does not trigger the rule:\n{bad.stdout}"
    assert "Traceback" not in bad.stderr
    good = run_cli("check", f"good.{suffix}", "--select", rule.code, "--preview", "--format", "concise", cwd=tmp_path)
    assert rule.code not in _codes(good.stdout), f"{rule.code} docs.good triggers the rule:\n{good.stdout}"
    assert good.exit_code == 0, good.stdout + good.stderr


def _catalog() -> dict[str, tuple[str, str]]:
    """code -> (slug, severity cell) from the markdown tables `| code | slug | sev | ... |`."""
    rows = {}
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"[A-Z]+\d{3}", cells[0]):
            rows[cells[0]] = (cells[1].strip("`"), cells[2])
        prose = re.match(r"([A-Z]+\d{3}) \(([a-z0-9-]+), ([a-z]+(?:, preview)?)\):", line)
        if prose:  # a rule the catalog names in a sentence: "NVL004 (nvlink-fabric-not-ready, error): ..."
            rows.setdefault(prose.group(1), (prose.group(2), prose.group(3)))
    return rows


@pytest.mark.skipif(not CATALOG.is_file(), reason=f"{CATALOG} not present")
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_matches_the_catalog(rule):
    catalog = _catalog()
    assert rule.code in catalog, f"{rule.code} is not in {CATALOG.name}"
    slug, severity = catalog[rule.code]
    assert rule.slug == slug
    expected = f"{rule.severity}, preview" if rule.is_preview else rule.severity
    assert severity == expected, f"{rule.code}: catalog says {severity!r}, definition says {expected!r}"


# Config rules document their examples in the config language (example_format); each runs as a
# file of that kind, with the 4-GPU fixture topology for rules that need --topology.
CONFIG_EXAMPLE_FILES = {"sh": "example.sh", "yaml": "example.yaml", "env": "example.env",
                        "dockerfile": "example.Dockerfile", "python": "example.py"}
EXAMPLE_TOPOLOGY = ROOT / "fixtures" / "topologies" / "4gpu-2numa-nvlink.xml"


def _config_example_rules() -> list:
    from topolint.checks import load_check

    chosen = []
    for rule in RULES:
        if rule.check == "inputs" or rule.docs.example_format not in CONFIG_EXAMPLE_FILES:
            continue
        module = load_check(rule.check)
        if "config" in module.NEEDS and not getattr(module, "UNAVAILABLE", None):
            chosen.append(rule)
    return chosen


@pytest.mark.parametrize("rule", _config_example_rules(), ids=lambda r: r.code)
def test_documented_config_examples(rule, tmp_path):
    from topolint.checks import load_check

    needs = load_check(rule.check).NEEDS
    # Rules that need a node's fabric facts (interfaces, ports, GIDs) take their fixture folder's topology/.
    own = ROOT / "fixtures" / "rules" / rule.code / "topology"
    topology = own if own.is_dir() and set(needs) - {"config", "topology"} else EXAMPLE_TOPOLOGY
    extra = ["--topology", str(topology)] if set(needs) - {"config"} else []
    name = CONFIG_EXAMPLE_FILES[rule.docs.example_format]
    for kind in ("bad", "good"):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / name).write_text(getattr(rule.docs, kind).strip() + "\n", encoding="utf-8")
    bad = run_cli("check", f"bad/{name}", "--select", rule.code, "--preview", "--format", "concise", *extra, cwd=tmp_path)
    assert rule.code in _codes(bad.stdout), f"{rule.code} docs.bad does not trigger the rule:\n{bad.stdout}{bad.stderr}"
    good = run_cli("check", f"good/{name}", "--select", rule.code, "--preview", "--format", "concise", *extra, cwd=tmp_path)
    assert rule.code not in _codes(good.stdout), f"{rule.code} docs.good triggers the rule:\n{good.stdout}"
    assert good.exit_code == 0, good.stdout + good.stderr
