"""The one Slurm hostlist expansion (topolint/model/hostlist.py), as ``scontrol show hostnames``
expands: order and duplicates kept, zero padding, text after brackets, several groups, bounds."""

from __future__ import annotations

import pytest

from topolint.model.hostlist import MAX_HOSTS, Budget, HostlistError, count_hosts, expand


@pytest.mark.parametrize("expression, hosts", [
    ("gpu[001-003,040]", ["gpu001", "gpu002", "gpu003", "gpu040"]),
    ("gpu-b4-[1,0]", ["gpu-b4-1", "gpu-b4-0"]),  # the bracket's order, not sorted
    ("n1,n1,n0", ["n1", "n1", "n0"]),  # duplicates kept
    ("rack[1-2]-ib", ["rack1-ib", "rack2-ib"]),  # text after the brackets
    ("a[1-2]b[7-8]", ["a1b7", "a1b8", "a2b7", "a2b8"]),  # the first group varies slowest
    ("x[8-11]", ["x8", "x9", "x10", "x11"]),  # no padding without a leading zero
    ("x[08-11]", ["x08", "x09", "x10", "x11"]),
    ("m22-blue-[0-1],m22-green-3", ["m22-blue-0", "m22-blue-1", "m22-green-3"]),
    ("switch.1.[1-2]", ["switch.1.1", "switch.1.2"]),
    ("10.140.71.103,10.140.79.152", ["10.140.71.103", "10.140.79.152"]),
    (" a , ,b ", ["a", "b"]),
    ("", []),
])
def test_expands_as_slurm_does(expression, hosts):
    assert expand(expression) == hosts


@pytest.mark.parametrize("expression, column, says", [
    ("gpu[1-3", 4, "without ']'"),
    ("gpu1-3]", 7, "without '['"),
    ("gpu[3-1]", 5, "backwards"),
    ("gpu[a-c]", 5, "numbers"),
    ("gpu[1,[2]]", 7, "inside brackets"),
    ("ok,gpu[1-2,x]", 12, "numbers"),
])
def test_refuses_what_slurm_refuses_with_a_column(expression, column, says):
    with pytest.raises(HostlistError) as caught:
        expand(expression)
    assert says in caught.value.message
    assert caught.value.column == column


def test_expansion_is_bounded_per_expression_and_per_file():
    with pytest.raises(HostlistError, match="more than"):
        expand("n[0-999999999999]")  # a dozen characters, a trillion hosts: refused before any is made
    budget = Budget()
    expand(f"n[1-{MAX_HOSTS // 2}]", budget)
    with pytest.raises(HostlistError):
        expand(f"m[1-{MAX_HOSTS // 2 + 1}]", budget)  # the file's expressions share one bound


@pytest.mark.parametrize("expression", ["a,b,,c,", ",n1,n1", "gpu[1-3],x,rack[1-2]-ib", " a , ,b ", ""])
def test_counted_without_the_names_made_as_expanded(expression):
    assert count_hosts(expression) == len(expand(expression))


def test_names_written_out_past_the_bound_say_where():
    """Names without brackets are walked by a regex; one past the file's bound still says its column."""
    budget = Budget(3)
    with pytest.raises(HostlistError) as caught:
        expand("n1,n2,,n3,n4", budget)
    assert caught.value.column == 11
    assert count_hosts("n1,n2", Budget(2)) == 2
