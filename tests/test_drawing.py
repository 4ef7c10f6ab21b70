"""Pictures (issue 29): `topolint graph`, the drawings in `check --format html|markdown` and
`estimate --format html`. Every input kind drawn and kept as a snapshot; the layout's label boxes
never intersect at 8 GPUs, 16 NICs and 2 to 8 NUMA nodes and on a GB200 tray; findings' elements
and paths and the estimate's bottleneck are on the drawing; values from inputs are escaped in
every format. The real browser is tests/test_browser.py."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from conftest import FIXTURES, ROOT, assert_snapshot, run_cli
from lxml import etree

from topolint.commands.check import CheckOptions, run_check
from topolint.drawing.layout import CHAR_WIDTH, SMALL_CHAR_WIDTH, cells, layout
from topolint.drawing.views import picture
from topolint.inputs.collect import collect
from topolint.model.nccl_version import NEWEST, NcclVersion

DGX = "fixtures/samples/dgx-like-2socket-dump.xml"
DRAWING = FIXTURES / "drawing"
SVG_NS = "{http://www.w3.org/2000/svg}"
VERSION = NcclVersion.parse(NEWEST)

# One of each input kind: an NCCL dump, a static vendor file completed from the node's outputs,
# nvidia-smi topo -m, an hwloc export, a bundle.
KINDS = {
    "dump": DGX,
    "static": "fixtures/drawing/static-node",
    "matrix": "fixtures/rules/NUMA001/bad_matrix_pxn.txt",
    "hwloc": "fixtures/rules/NUMA001/bad_hwloc_pxn.xml",
    "bundle": "fixtures/drawing/bundle-node",
}
SHAPES = ["8gpu-16nic-2numa-dump.xml", "8gpu-16nic-4numa-dump.xml", "8gpu-16nic-8numa-dump.xml",
          "gb200-tray-dump.xml", "hostile-names-dump.xml", "cube-mesh-8gpu-dump.xml"]


@functools.lru_cache(maxsize=None)  # tests only read a picture: each is drawn once
def _picture(path: str, estimate: bool = True):
    paths = [str(ROOT / path)]
    findings = run_check(CheckOptions(paths=paths, cache=False, isolated=True)).active
    (node,) = collect(paths).nodes
    return picture(node, findings, VERSION, estimate=estimate)


def _svg(text: str):
    return etree.fromstring(text.encode("utf-8"))


# ---- every input kind, drawn ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_input_kind_is_drawn_and_kept_as_a_snapshot(kind):
    result = run_cli("graph", KINDS[kind], "--isolated")
    assert result.exit_code == 0, result.stderr
    svg = _svg(result.stdout)
    assert svg.tag == f"{SVG_NS}svg"
    assert_snapshot(f"drawing/{kind}.svg", result.stdout)


def test_a_matrix_is_drawn_as_the_pairwise_paths_it_states_never_a_made_up_tree():
    shown = _picture(KINDS["matrix"])
    diagram = shown.diagram
    assert diagram.style == "matrix" and not diagram.links and not diagram.buses
    assert {b.kind for b in diagram.boxes.values()} == {"gpu", "nic"}  # no switch, no CPU invented
    assert diagram.grid.cells[("GPU4", "NIC4")].text == "PIX"
    assert diagram.grid.cells[("GPU0", "NIC0")].where.endswith("bad_matrix_pxn.txt:2")
    # GPU0's finding: the SYS cell to its nearest NIC, and the PXN relay: GPU0-GPU4 (NV12), GPU4-NIC4 (PIX)
    routes = {(r.relay, tuple(r.legs)) for r in diagram.routes if r.legs[0][0] == "m:GPU0"}
    assert (False, (("m:GPU0", "m:NIC0"),)) in routes
    assert (True, (("m:GPU0", "m:GPU4"), ("m:GPU4", "m:NIC4"))) in routes
    # The estimate built a PCIe tree from the matrix; where its bottleneck is a made-up switch the
    # drawing says so rather than drawing the switch.
    assert not any(b.id.startswith("pci:") for b in diagram.boxes.values())


def test_static_file_is_drawn_completed_with_its_filled_values_marked_as_assumptions():
    shown = _picture(KINDS["static"], estimate=False)
    nics = [b for b in shown.diagram.boxes.values() if b.kind == "nic"]
    assert len(nics) == 8
    assert all("port 1 400 Gb/s*" in b.lines for b in nics)  # the <net> and its speed filled from ibstat
    assert any("assumed:" in d and "ibstat.txt" in d for d in nics[0].details)
    nvlinks = [link for link in shown.diagram.links if link.kind == "nvswitch"]
    assert len(nvlinks) == 8 and all(link.label.startswith("NVL x18*") for link in nvlinks)  # from topo -m
    assert "completed from the node's outputs" in shown.diagram.source


def test_hwloc_and_bundle_say_what_they_are():
    assert "hwloc export" in _picture(KINDS["hwloc"], estimate=False).diagram.source
    bundle = _picture(KINDS["bundle"], estimate=False)
    assert bundle.diagram.source.startswith("bundle ") and "NCCL topology dump" in bundle.diagram.source
    assert bundle.node == "gpu-042"  # the bundle's host
    port = bundle.diagram.box_of_entity("gpu-042/nic/mlx5_3:1")  # NET003: the bundle's ibstat says it is Down
    assert port is not None and port.marks.get("finding") == "error" and "NET003" in port.codes


# ---- findings and the bottleneck on the drawing ---------------------------------------------------------
def test_findings_are_highlighted_and_their_paths_drawn_as_those_paths():
    shown = _picture(DGX)
    diagram = shown.diagram
    gpu4 = diagram.box_of_entity("dgx-like-2socket-dump/gpu/0000:9a:00.0")
    assert gpu4.marks["finding"] == "warning" and gpu4.codes == ["NUMA001"]
    direct = [r for r in diagram.routes if r.legs[0][0] == gpu4.id and not r.relay]
    relay = [r for r in diagram.routes if r.legs[0][0] == gpu4.id and r.relay]
    # GPU 4 to its nearest NIC mlx5_0 as the model routes it: its switch, NUMA 1, NUMA 0, a switch, the NIC
    assert direct[0].legs == [(gpu4.id, "pci:0000:97:00.0"), ("pci:0000:97:00.0", "cpu:1"), ("cpu:1", "cpu:0"),
                              ("cpu:0", "pci:0000:15:00.0"), ("pci:0000:15:00.0", "pci:0000:1a:00.0")]
    # the PXN relay: over NVLink (the NVSwitch) to GPU 0, then GPU 0's PCIe path to mlx5_0
    assert relay[0].legs == [(gpu4.id, "nvs"), ("nvs", "pci:0000:18:00.0"), ("pci:0000:18:00.0", "pci:0000:15:00.0"),
                             ("pci:0000:15:00.0", "pci:0000:1a:00.0")]
    assert diagram.box_of_entity("dgx-like-2socket-dump/nic/mlx5_0:1").marks["related"] == "warning"
    svg = _svg(shown.svg())
    routes = [p for p in svg.iter(f"{SVG_NS}polyline") if "tl-route" in p.get("class", "")]
    assert any("tl-relay" in p.get("class") for p in routes) and any("tl-relay" not in p.get("class") for p in routes)
    titles = [t.text for t in svg.iter(f"{SVG_NS}title")]
    assert any(t.startswith("GPU 4\ndgx-like-2socket-dump/gpu/0000:9a:00.0") and "dgx-like-2socket-dump.xml:53" in t
               for t in titles)  # entity id, file and line in the element's title


def test_the_estimates_bottleneck_is_marked_on_its_link():
    shown = _picture(DGX)
    estimate = shown.estimate
    assert shown.nodes == 2 and estimate.selected
    bottleneck = estimate.selected_estimate.bottleneck
    box = shown.diagram.box_of_entity(bottleneck.entity)
    assert box is not None and estimate.selected in box.bottlenecks
    if bottleneck.link == "PCIe":
        link = shown.diagram.link_between(box.parent, box.id)
        assert estimate.selected in link.bottleneck
    assert "tl-bottleneck" in shown.svg()


# ---- layout: readable, measured, deterministic ------------------------------------------------------------
@pytest.mark.parametrize("name", SHAPES + ["dgx", "static", "matrix"])
def test_no_two_label_boxes_intersect(name):
    path = {"dgx": DGX, "static": KINDS["static"], "matrix": KINDS["matrix"]}.get(name, f"fixtures/drawing/{name}")
    # the estimate's bottleneck notes widen boxes: drawn with them where the estimate is quick
    placed = layout(_picture(path, estimate=name in ("dgx", "matrix", "gb200-tray-dump.xml")).diagram)
    rects = placed.label_rects()
    assert len(rects) > 20
    clashes = [(a, b) for i, (a, ra) in enumerate(rects) for b, rb in rects[i + 1:] if ra.intersects(rb)]
    assert not clashes, clashes[:5]
    for box in placed.boxes:  # every line of a box inside it
        for text in box.texts:
            r = text.rect
            assert box.rect.x <= r.x and r.right <= box.rect.right and box.rect.y <= r.y and r.bottom <= box.rect.bottom
    assert all(0 <= r.x and r.right <= placed.width and 0 <= r.y and r.bottom <= placed.height for _, r in rects)


def test_sizes_come_from_a_fixed_width_per_character_that_the_svg_font_honours():
    svg = _svg(_picture(f"fixtures/drawing/{SHAPES[2]}", estimate=False).svg())
    assert "monospace" in svg.get("font-family")
    texts = list(svg.iter(f"{SVG_NS}text"))
    assert texts
    for text in texts:
        per = SMALL_CHAR_WIDTH if text.get("font-size") == "10" else CHAR_WIDTH
        assert float(text.get("textLength")) == pytest.approx(cells(text.text) * per, abs=0.06)
        assert text.get("lengthAdjust") == "spacingAndGlyphs"
    # the 8-NUMA node: 8 CPUs, 16 NICs, 8 GPUs, each switch level in its own column
    diagram = _picture(f"fixtures/drawing/{SHAPES[2]}", estimate=False).diagram
    kinds = [b.kind for b in diagram.boxes.values()]
    assert (kinds.count("cpu"), kinds.count("gpu"), kinds.count("nic")) == (8, 8, 16)


def test_nvlinks_between_gpus_are_drawn_with_their_counts():
    diagram = _picture("fixtures/drawing/cube-mesh-8gpu-dump.xml", estimate=False).diagram
    peers = {(diagram.boxes[link.a].title, diagram.boxes[link.b].title): link.label
             for link in diagram.links if link.kind == "peer"}
    assert len(peers) == 16 and not any(link.kind == "nvswitch" for link in diagram.links)
    assert peers[("GPU 0", "GPU 3")] == "NVL x2 40 GB/s" and peers[("GPU 0", "GPU 1")] == "NVL x1 20 GB/s"


def test_gb200_tray_draws_its_c2c_links_to_grace():
    diagram = _picture("fixtures/drawing/gb200-tray-dump.xml", estimate=False).diagram
    c2c = [link for link in diagram.links if link.kind == "cpu"]
    assert len(c2c) == 4 and all(link.label == "C2C 400 GB/s" for link in c2c)
    assert [link.a for link in c2c] == ["cpu:0", "cpu:0", "cpu:1", "cpu:1"]


def test_same_input_gives_byte_identical_svg_in_another_process():
    first = run_cli("graph", DGX, "--isolated").stdout
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-m", "topolint", "graph", DGX, "--isolated"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert other.stdout == first


# ---- the text formats --------------------------------------------------------------------------------
def test_dot_and_mermaid_snapshots():
    assert_snapshot("drawing/dump.dot", run_cli("graph", DGX, "--isolated", "--format", "dot").stdout)
    assert_snapshot("drawing/dump.mmd", run_cli("graph", DGX, "--isolated", "--format", "mermaid").stdout)


def test_graph_picks_the_node_to_draw_and_names_the_others(tmp_path):
    cluster = tmp_path / "cluster"
    for name, source in (("calm", "8gpu-16nic-2numa-dump.xml"), ("busy", "../samples/dgx-like-2socket-dump.xml")):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text((DRAWING / source).read_text())
    chosen = run_cli("graph", cluster, "--isolated", "--no-estimate")
    assert chosen.exit_code == 0 and "busy: NCCL topology dump" in chosen.stdout  # the one with findings
    named = run_cli("graph", cluster, "--isolated", "--host", "calm", "--no-estimate", "--format", "mermaid")
    assert named.exit_code == 0 and "NUMA 0" in named.stdout
    missing = run_cli("graph", cluster, "--host", "nope")
    assert missing.exit_code == 2 and "calm" in missing.stderr and "busy" in missing.stderr


# ---- reports -----------------------------------------------------------------------------------------
class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self.attrs = [], 0, []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.scripts += tag == "script"
        self.attrs += attrs


def test_check_html_is_one_self_contained_page_under_500_kb(tmp_path):
    report = tmp_path / "report.html"
    result = run_cli("check", DGX, "--isolated", "--no-cache", "--format", "concise", "--format", "html",
                     "-o", "-", "-o", report)
    assert result.exit_code == 1 and "NUMA001" in result.stdout  # the repeated --format/-o still works
    text = report.read_text(encoding="utf-8")
    assert len(text.encode()) <= 500_000, len(text.encode())
    wide = tmp_path / "wide.html"  # 8 GPUs and 16 NICs on 8 NUMA nodes
    run_cli("check", "fixtures/drawing/8gpu-16nic-8numa-dump.xml", "--isolated", "--no-cache", "--format", "html",
            "-o", wide)
    assert len(wide.read_bytes()) <= 500_000, len(wide.read_bytes())
    page = _Page()
    page.feed(text)
    assert page.scripts == 1 and "link" not in page.tags and "img" not in page.tags and "iframe" not in page.tags
    assert not [a for a in page.attrs if a[0] in ("src", "srcset") or (a[0] == "href" and not a[1].startswith("#"))]
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", text)
    assert "default-src 'none'" in text  # nothing may be fetched
    assert text.count("<svg") == 1
    assert 'data-severity="warning"' in text and 'id="tl-filter" hidden' in text  # the table is whole without JS
    assert "Estimate: allreduce of 8G per rank on 2 node(s)" in text and "channel orders of" in text


def test_a_cached_run_still_draws_its_nodes(tmp_path, monkeypatch):
    """The rules stage drops a node's facts, and the cache spares parsing it: a drawing run is not
    answered by the cache (each node is drawn while it is checked), so a warm run draws what a cold
    one does; it still writes the entries a later run without drawings reads."""
    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    cold, warm = tmp_path / "cold.html", tmp_path / "warm.html"
    for out in (cold, warm):
        run_cli("check", DGX, "--isolated", "--cache-dir", tmp_path / "cache", "--format", "html", "-o", out)
    assert any((tmp_path / "cache").rglob("*.json"))
    assert warm.read_text() == cold.read_text() and "tl-mark-warning" in warm.read_text()


def test_the_python_api_renders_html_and_markdown():
    import topolint

    result = topolint.check([DGX], isolated=True, drawings=True)
    assert result.render("html").count("<svg") == 1 and "```mermaid" in result.render("markdown")
    # rendered twice, marked once each time: the kept drawing is not marked in place
    assert result.render("html") == result.render("html")
    assert "<svg" not in topolint.check([DGX], isolated=True).render("html")  # drawings not asked for


def test_check_html_draws_each_node_of_a_cluster(tmp_path):
    cluster = tmp_path / "cluster"
    for name, source in (("a", DRAWING / "gb200-tray-dump.xml"), ("b", ROOT / DGX)):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text(source.read_text())
    report = tmp_path / "r.html"
    run_cli("check", cluster, "--isolated", "--no-cache", "--format", "html", "-o", report)
    text = report.read_text()
    assert text.count("<svg") == 2
    assert text.index("Node b") < text.index("Node a")  # the node with findings first


def test_markdown_job_summary_draws_the_node_with_the_most_severe_finding(tmp_path):
    cluster = tmp_path / "cluster"
    for name, source in (("warned", ROOT / DGX), ("failing", DRAWING / "bundle-node" / "nccl-topo-dump.xml")):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text(source.read_text())
    (cluster / "failing" / "ibstat.txt").write_text((DRAWING / "bundle-node" / "ibstat.txt").read_text())
    result = run_cli("check", cluster, "--isolated", "--no-cache", "--format", "markdown")
    out = result.stdout
    assert out.startswith("## topolint: 5 findings")
    assert "| 1 | 4 | 0 | 0 |" in out
    assert out.count("```mermaid") == 1 and "### failing (the node with the most severe finding)" in out
    rows = [line for line in out.splitlines() if re.match(r"\| (error|warning|info) \| [A-Z]", line)]
    assert len(rows) == 5


def test_estimate_html_shows_the_drawing_bottleneck_and_channel_orders():
    result = run_cli("estimate", DGX, "--nodes", "2", "--format", "html")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "tl-bottleneck" in text and "<svg" in text
    assert "channel orders of tree (topolint&#39;s approximation of NCCL&#39;s graph search" in text
    assert re.search(r"channels? [\d, ]+: NIC mlx5_0:1 &gt; GPU 0 &gt; GPU 2", text)


def test_estimate_json_exposes_the_channel_orders_as_an_approximation():
    result = run_cli("estimate", DGX, "--nodes", "2", "--format", "json")
    est = json.loads(result.stdout)["estimates"][0]
    ring = next(a for a in est["algorithms"] if a["name"] == "ring")
    orders = ring["channel_orders"]
    assert "approximation of NCCL's graph search" in orders["source"]
    assert len(orders["channels"]) == ring["channels"]
    for channel in orders["channels"]:
        assert sorted(channel["gpus"]) == sorted(set(channel["gpus"])) and len(channel["gpus"]) == 8
        assert channel["net_in"] and channel["net_in"] == channel["net_out"]
    assert next(a for a in est["algorithms"] if a["name"] == "hierarchical")["channel_orders"] is None
    schema = json.loads((ROOT / "docs" / "estimate.schema.json").read_text())
    pytest.importorskip("jsonschema").validate(json.loads(result.stdout), schema)


# ---- escaping: hostile names in every format -----------------------------------------------------------
HOSTILE = "fixtures/drawing/hostile-names-dump.xml"


def test_hostile_names_in_svg_and_html_stay_text(tmp_path):
    svg_text = run_cli("graph", HOSTILE, "--isolated").stdout
    svg = _svg(svg_text)  # well-formed XML (no raw control character, no broken markup)
    assert not list(svg.iter(f"{SVG_NS}script")) and "<script" not in svg_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg_text
    assert "\x1b" not in svg_text and "\u202e" not in svg_text and "\x85" not in svg_text
    assert "\\u202e" in svg_text  # shown as an escape
    report = tmp_path / "r.html"
    run_cli("check", HOSTILE, "--isolated", "--no-cache", "--format", "html", "-o", report)
    page = _Page()
    text = report.read_text()
    page.feed(text)
    assert page.scripts == 1 and not [a for a in page.attrs if a[0].startswith("on")]
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "\x1b" not in text and "\u202e" not in text


def test_hostile_names_in_dot_stay_inside_their_strings():
    dot = run_cli("graph", HOSTILE, "--isolated", "--format", "dot").stdout
    string = r'"(?:[^"\\\n]|\\.)*"'
    attr = rf"\w+=(?:{string}|[\w.#]+)"
    statement = re.compile(rf"^  (?:n\d+(?: (?:->|--) n\d+)?|graph|node|edge) \[{attr}(?:, {attr})*\];$")
    lines = dot.splitlines()
    assert lines[0].startswith('digraph "topolint ') and lines[-1] == "}"
    assert not [line for line in lines[1:-1] if not statement.match(line)]
    assert '\\"]:::evil' in dot and "\\\\l\\\\N" in dot  # the quote and DOT's own escapes kept literal


def test_hostile_names_in_mermaid_cannot_leave_their_labels():
    mermaid = run_cli("graph", HOSTILE, "--isolated", "--format", "mermaid").stdout
    allowed = re.compile(r'^(?:flowchart LR|  n\d+\["[^"]*"\]|  n\d+ ---\|"[^"]*"\| n\d+|  linkStyle \d+ [\w:#,. -]+'
                         r'|  classDef \w+ [\w:#,. -]+|  class [n\d,]+ \w+)$')
    assert all(allowed.match(line) for line in mermaid.splitlines())
    assert "#34;#93;#58;#58;#58;evil" in mermaid  # its quote and bracket as entities: the label goes on
    for bad in ("%%", ":::", "<script", "`", "](", "click("):
        assert bad not in mermaid.replace("<br/>", ""), bad
    assert "click n0 call alert#40;1#41;" in mermaid  # the name is label text, never a statement


def test_hostile_names_in_markdown_stay_in_their_cells():
    out = run_cli("check", HOSTILE, "--isolated", "--no-cache", "--format", "markdown").stdout
    rows = [line for line in out.splitlines() if line.startswith("| warning")]
    assert rows and all(len(re.split(r"(?<!\\)\|", row)) == 6 for row in rows)  # 4 cells each
    table = "\n".join(rows)
    assert "<script>" not in table and "&lt;script&gt;" in table and "@octocat" not in out
    body, fences = out.split("```mermaid"), out.count("```")
    assert len(body) == 2 and fences == 2  # the Mermaid block opens and closes; no input adds a fence


# ---- the README's picture -------------------------------------------------------------------------------
def test_the_readme_picture_is_what_its_command_draws(corpus, tmp_path):
    from readme_snippets import blocks

    (command,) = [line for block in blocks("Pictures: `topolint graph`, HTML reports, job summaries", "bash")
                  for line in block.splitlines() if "docs/images/" in line]
    target = re.search(r"-o (docs/images/\S+\.svg)", command).group(1)
    assert f"]({target})" in (ROOT / "README.md").read_text(encoding="utf-8")  # the picture shown is that file
    again = tmp_path / "again.svg"
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(command.replace(target, str(again)), shell=True, cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == (ROOT / target).read_bytes(), "regenerate it with the README's command"


def test_the_corpus_node_of_the_readme_is_laid_out_without_overlaps(corpus):
    path = str(corpus / "nccl-topo/oci-bm-gpu-h100-8-8xH100-16x200G-roce-2numa_oci-hpc.xml")
    (node,) = collect([path]).nodes
    findings = run_check(CheckOptions(paths=[path], cache=False, isolated=True)).active
    rects = layout(picture(node, findings, VERSION).diagram).label_rects()
    assert not [(a, b) for i, (a, ra) in enumerate(rects) for b, rb in rects[i + 1:] if ra.intersects(rb)]


def test_graph_of_an_unreadable_input_says_why_and_exits_2(tmp_path):
    bad = tmp_path / "topo.xml"
    bad.write_text('<system version="1"><cpu', encoding="utf-8")
    result = run_cli("graph", bad, "--isolated")
    assert result.exit_code == 2 and "TL001" in result.stderr and "Traceback" not in result.stderr
    nothing = run_cli("graph", FIXTURES / "rules" / "ENV004" / "bad.env", "--isolated")
    assert nothing.exit_code == 2 and "nothing to draw" in nothing.stderr


def test_a_drawing_run_parses_each_input_once(tmp_path, monkeypatch):
    """The drawings are made while each node is checked (drawing/views.py DrawingRequest), from the
    facts the run parsed: html, markdown and graph read no input a second time."""
    import topolint.inputs.collect as collect_module

    cluster = tmp_path / "cluster"
    for name in ("a", "b"):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text((ROOT / DGX).read_text())
    parsed = []
    real = collect_module.parse

    def counting(fmt, source):
        parsed.append(source.path)
        return real(fmt, source)

    monkeypatch.setattr(collect_module, "parse", counting)
    result = run_check(CheckOptions(paths=[str(cluster)], isolated=True, cache=False, drawings={}))
    assert sorted(parsed) == sorted(str(cluster / n / "topo.xml") for n in ("a", "b"))
    html = result.render("html") + result.render("markdown")
    assert html.count("<svg") == 2 and len(parsed) == 2
    from topolint.commands.graph import run_graph

    parsed.clear()
    assert run_graph([str(cluster)], host="b", isolated=True).picture.node == "b" and len(parsed) == 2


def test_a_run_keeps_the_drawings_of_its_worst_nodes_only(tmp_path, monkeypatch):
    """Memory follows the kept count, not the node count: a clean node's drawing gives way to one
    with a finding; the report still counts the nodes it left out."""
    import topolint.commands.check as check_module

    monkeypatch.setattr(check_module, "KEPT_VIEWS", 1)
    cluster = tmp_path / "cluster"
    for name, source in (("a-clean", DRAWING / "gb200-tray-dump.xml"), ("b-warned", ROOT / DGX)):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text(source.read_text())
    result = run_check(CheckOptions(paths=[str(cluster)], isolated=True, cache=False, drawings={}))
    assert any(f.node == "b-warned" for f in result.active) and not any(f.node == "a-clean" for f in result.active)
    assert list(result.views) == ["b-warned"] and result.views_made == 2
    pictures, left_out = check_module.drawings(result, result.active)
    assert [p.node for p in pictures] == ["b-warned"] and left_out == 1
