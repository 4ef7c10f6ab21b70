"""topolint/model/schema.py: models declared like pydantic's, validated by pydantic only on demand."""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar, Optional

import pytest
from conftest import FIXTURES, ROOT
from pydantic import ValidationError

from topolint.model.schema import ConfigDict, Field, Model


class Leaf(Model):
    model_config = ConfigDict(extra="forbid")

    line: int = Field(ge=1)
    note: Optional[str] = None


class Tree(Model):
    """A tree of leaves."""

    model_config = ConfigDict(extra="forbid")
    KIND: ClassVar[str] = "tree"

    name: str
    leaves: list[Leaf] = []
    tags: dict[str, str] = Field(default_factory=dict, description="free-form tags")


def test_fields_are_declared_without_pydantic():
    fields = Tree.model_fields
    assert list(fields) == ["name", "leaves", "tags"]  # ClassVar is not a field
    assert fields["name"].is_required() and not fields["leaves"].is_required()
    assert fields["tags"].description == "free-form tags" and fields["tags"].get_default(True) == {}


def test_construct_gives_fresh_mutable_defaults():
    a, b = Tree.model_construct(name="a"), Tree.model_construct(name="b")
    a.leaves.append(Leaf.model_construct(line=1))
    assert b.leaves == [] and a.tags is not b.tags


def test_validation_is_pydantics_and_returns_declared_classes():
    tree = Tree.model_validate({"name": "t", "leaves": [{"line": 3}]})
    assert type(tree) is Tree and type(tree.leaves[0]) is Leaf and tree.leaves[0].line == 3
    with pytest.raises(ValidationError) as info:
        Tree(name="t", leaves=[{"line": 0}])
    assert info.value.errors()[0]["loc"] == ("leaves", 0, "line")
    with pytest.raises(ValidationError):
        Leaf(line=1, extra=2)
    assert Tree(name="t", leaves=[Leaf(line=2)]).leaves[0] == Leaf(line=2)  # instances are accepted


def test_equality_copy_dump_and_schema():
    tree = Tree(name="t", leaves=[Leaf(line=2)])
    assert tree == Tree(name="t", leaves=[Leaf(line=2)]) and tree != Tree(name="u")
    moved = tree.model_copy(update={"name": "u"})
    assert moved.name == "u" and tree.name == "t" and moved.leaves is tree.leaves
    assert tree.model_copy(deep=True).leaves is not tree.leaves
    assert tree.model_dump() == {"name": "t", "leaves": [{"line": 2, "note": None}], "tags": {}}
    assert Tree.model_validate(tree.model_dump()) == tree
    assert '"line":2' in tree.model_dump_json()
    schema = Tree.model_json_schema()
    assert schema["description"] == "A tree of leaves." and "Leaf" in schema["$defs"]


def _imports_pydantic(*args: str, cwd=ROOT) -> bool:
    code = ("import sys, io, contextlib; from topolint.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    main({list(args)!r})\n"
            "print('pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1] == "True"


def test_a_config_only_check_never_imports_pydantic():
    assert not _imports_pydantic("check", str(FIXTURES / "rules" / "ENV004" / "bad.env"), "--isolated")
    assert not _imports_pydantic("check", "fixtures/infra-repo", "--isolated")


def test_pydantic_loads_where_validation_happens(tmp_path):
    (tmp_path / ".topolint.toml").write_text('select = ["ENV"]\n')
    (tmp_path / "job.env").write_text("NCCL_DEBUG=INFO\n")
    assert _imports_pydantic("check", "job.env", cwd=tmp_path)  # a configuration file is validated
    assert _imports_pydantic("check", str(FIXTURES / "site-templates" / "site_env_required" / "bad.sh"),
                             "--rule-dir", str(FIXTURES / "site-templates" / "site_env_required" / "rules"),
                             "--isolated")  # so are site rules


class Plain(Model):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    below: float = 0.5
    enabled: bool = False
    name: str = "x"
    count: int = 1
    bounded: int = Field(default=1, ge=1)


@pytest.mark.parametrize("values", [{}, {"below": 0.25}, {"enabled": True, "name": "y", "count": 3}])
def test_plain_values_are_taken_as_pydantic_takes_them(values):
    assert Plain.model_validate_plain(values) == Plain(**values)


@pytest.mark.parametrize("values", [
    {"below": 1},  # pydantic converts an int for a float field
    {"count": True},  # a bool is no int here
    {"count": "3"},  # nor a digit string
    {"bounded": 5},  # a constraint to check
    {"other": 1},  # an extra field: pydantic's error
])
def test_anything_else_is_left_to_pydantic(values):
    assert Plain.model_validate_plain(values) is None


def test_built_in_rules_parameters_read_plainly_are_what_pydantic_validates():
    """PERF001/PERF002 share a check with their own parameter values (engine/runner.py prepare)."""
    from topolint.checks import load_check
    from topolint.engine.rule import load_rules

    compared = 0
    for rule in load_rules():
        if rule.check == "inputs" or not rule.parameters:
            continue
        model = load_check(rule.check).Parameters
        plain = model.model_validate_plain(rule.parameters)
        if plain is not None:
            assert plain.model_dump() == model(**rule.parameters).model_dump(), rule.code
            compared += 1
    assert compared >= 2


def test_a_node_check_with_the_built_in_rules_never_imports_pydantic():
    assert not _imports_pydantic("check", str(FIXTURES / "topologies"), "--isolated", "--select", "ALL", "--preview")
