"""``topolint profile --from NODE/``: a profile written from a known-good node (as NHC's genconf
writes its configuration from one), and ``topolint profile --list``.

The node is read as ``topolint check NODE --inventory`` reads it (commands/check.py): its
inventory, and what that reveals (profiles/reveal.py ``inventory_shape``), are the values; each
cites the input file and line that states it as its source, ``file:FOLDER/FILE:LINE`` with the
path relative to the node folder's parent. Nothing of the node is parsed here. The profile is
chosen by name only (no ``match``: a site profile matched by shape would tie with the built-in
one of the same shape and leave both nodes without a profile). Output is deterministic: the same
node gives the same bytes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from topolint.commands import EXIT_CLEAN, UsageError
from topolint.profiles.model import NAME, VALUES

# The order values are written in: profiles/model.py VALUES.
MAX_SAYS = 300


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL is escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_string(k)} = {_scalar(v)}" for k, v in sorted(value.items())) + " }"
    return _string(str(value))


def _glob(names: list[str]) -> str | None:
    """The common leading part of the NICs' names and ``*`` (mlx5_0 .. mlx5_7: ``mlx5_*``)."""
    names = [n for n in names if n]
    if not names:
        return None
    first, last = min(names), max(names)
    common = 0
    while common < min(len(first), len(last)) and first[common] == last[common]:
        common += 1
    prefix = first[:common].rstrip("0123456789")
    if not prefix or any(c in prefix for c in "*?[]"):
        return None
    return prefix + "*" if len(set(names)) > 1 or prefix != first else first


def _cite(path: str, line: int, base: Path) -> str:
    try:
        shown = Path(path).resolve().relative_to(base).as_posix()
    except ValueError:
        shown = Path(path).as_posix()
    return f"file:{shown}:{line}"


def node_inventory(folder: Path, config: Path | None, isolated: bool):
    """(node name, its inventory, error findings of the check) of the one node in ``folder``."""
    from topolint.commands.check import CheckOptions, run_check

    if not folder.is_dir():
        raise UsageError(f"--from {folder}: not a folder (expected one node's folder, as `topolint collect` writes it)")
    result = run_check(CheckOptions(paths=[str(folder)], inventory=Path("-"), cache=False, config=config,
                                    isolated=isolated))
    found = sorted(result.inventories.items())
    if len(found) != 1:
        if found:
            names = ", ".join(_one_line(name) for name, _ in found[:5]) + (", ..." if len(found) > 5 else "")
            raise UsageError(f"--from {folder}: holds {len(found)} nodes ({names}), not one: name one node's folder")
        raise UsageError(f"--from {folder}: no node's hardware in it (no topology dump, lspci, nvidia-smi, ibstat, "
                         "numactl output): nothing to write a profile from")
    name, inventory = found[0]
    return name, inventory, result.summary.error


def _port_rates(inventory, glob: str | None):
    """(port_gbps value, its Sourced) from the Active ports: one rate for the glob, else one per HCA."""
    active = [n for n in inventory.nics if n.rate_gbps is not None and n.state is not None
              and n.state.value == "active"]
    if not active:
        return None, None
    rates = {}
    for nic in active:
        hca = nic.name.rpartition(":")[0] or nic.name
        rates[hca] = min(rates.get(hca, nic.rate_gbps.value), nic.rate_gbps.value)
    if glob is not None and len(set(rates.values())) == 1:
        return {glob: next(iter(rates.values()))}, active[0].rate_gbps
    return rates, active[0].rate_gbps


def profile_text(folder: Path, name: str | None = None, config: Path | None = None, isolated: bool = False,
                 notes: list[str] | None = None) -> str:
    """The profile TOML written from the node in ``folder``; ``notes`` gets what stderr should say."""
    from topolint.profiles.reveal import inventory_shape

    node, inventory, errors = node_inventory(folder, config, isolated)
    name = name or _name_from(node)
    if not re.fullmatch(NAME, name):
        raise UsageError(f"--name {name!r}: a profile name is lower-case letters, digits and single hyphens")
    from topolint.profiles.library import library

    if library().get(name) is not None:
        raise UsageError(f"--name {name}: a built-in profile's name; a site profile needs its own (--name)")
    if errors and notes is not None:
        notes.append(f"topolint: note: node {_one_line(node)} has {errors} error finding(s) (`topolint check {folder}`): "
                     "a profile is written from a known-good node")
    base = folder.resolve().parent
    shape = inventory_shape(inventory)
    found: dict[str, tuple[object, tuple[str, int], str]] = {}  # value name -> (value, (path, line), says)
    for key, revealed in shape.values.items():
        if revealed.origin is None:
            continue
        path, line = revealed.origin
        lead = f"{path}:{line}: "
        says = revealed.where[len(lead):] if revealed.where.startswith(lead) else revealed.where
        found[key] = (revealed.value, revealed.origin, says)
    glob = _glob(shape.nic_names)
    if glob is not None and "nic_count" in found:
        found["nic_names"] = (glob, found["nic_count"][1], f"RDMA ports {', '.join(sorted(set(shape.nic_names))[:4])}"
                                                            + (" .." if len(set(shape.nic_names)) > 4 else ""))
    rates, at = _port_rates(inventory, glob)
    if rates is not None:
        found["port_gbps"] = (rates, (at.path, at.line), f"Active ports' rate {_scalar(at.value)} Gb/s"
                              if len(rates) == 1 else "each HCA's Active ports' rate, Gb/s")
    lines = [f"# Written by `topolint profile --from` from one node: what it showed, each value cited to the",
             "# input file and line that states it. Chosen by name only (--profile, [profiles] in the configuration).",
             f"name = {_string(name)}",
             f"title = {_string(f'as node {node} was'[:200])}",
             f"notes = {_string(f'Written from node {node} by topolint profile --from (its {len(found)} values).')}",
             "", "[sources]"]
    lines += [f"{key} = {_string(_cite(path, line, base))}" for key in VALUES if key in found
              for _, (path, line), _ in [found[key]]]
    lines += ["", "[values]"]
    lines += [f"{key} = {{ value = {_scalar(value)}, source = {_string(key)}, says = {_string(says[:MAX_SAYS])} }}"
              for key in VALUES if key in found for value, _, says in [found[key]]]
    unknown = [key for key in VALUES if key not in found]
    if unknown:
        lines += ["", "[unknown]"]
        lines += [f"{key} = {_string(_WHY.get(key, 'the node files do not show one value for it'))}" for key in unknown]
    return "\n".join(lines) + "\n"


_WHY = {"net_gbps": "NCCL's net speed is not in a node's inventory",
        "port_gbps": "the node shows no Active RDMA port with a rate",
        "nic_names": "the node's RDMA ports show no common name"}


def _name_from(node: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", node.lower()).strip("-")[:60].strip("-")
    return f"node-{slug}" if slug else "node"


def list_text(config: Path | None, isolated: bool) -> str:
    """One line a profile: name, built-in or site (its file), title; the built-in ones first."""
    from topolint.commands.check import CheckOptions, Plans

    library = Plans(CheckOptions(config=config, isolated=isolated)).root.profiles.library
    builtin = [n for n in library.names() if not _is_site(library.raw[n])]
    site = [n for n in library.names() if n not in builtin]
    width = max((len(n) for n in library.names()), default=0)
    lines = [f"{n:<{width}}  built-in  {_one_line(library.get(n).title)}" for n in builtin]
    lines += [f"{n:<{width}}  site      {_one_line(library.get(n).title)} ({_one_line(library.raw[n].path)})" for n in site]
    return "\n".join(lines) + "\n"


def _is_site(profile) -> bool:
    from topolint.profiles.library import builtin_profiles_dir

    return Path(profile.path).parent.resolve() != builtin_profiles_dir().resolve()


def _one_line(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def cli(args) -> int:
    if args.list:
        sys.stdout.write(list_text(args.config, args.isolated))
        return EXIT_CLEAN
    if args.source is None:
        raise UsageError("profile: give --from NODE_FOLDER (write a profile from that node) or --list")
    name = args.name
    if name is None and args.output not in (None, "-"):
        stem = Path(args.output).stem
        name = stem if re.fullmatch(NAME, stem) else None
    notes: list[str] = []
    text = profile_text(Path(args.source), name, args.config, args.isolated, notes)
    for note in notes:
        print(note, file=sys.stderr)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return EXIT_CLEAN
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return EXIT_CLEAN
