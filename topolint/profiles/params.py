"""Template parameters from the node's profile: the one place a profile reaches the checks.

A check module declares ``PROFILE = {"count": "gpu_count"}``: its parameter ``count``, when the
rule (or the configuration) leaves it at its default, takes the value ``gpu_count`` of the node's
profile. A parameter whose default is None is needed: without a profile stating it the rule
does not run on that node (a note says why); one with another default (NET004's empty rate
table) runs with the default. A hit of a rule that ran on profile values names them, with their
sources, in its evidence; its message and fix can use ``{profile}`` and the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Profiled:
    params: object | None  # the check's Parameters with the profile's values; None: do not run
    note: str = ""  # why it does not run (with params None)
    fields: dict = field(default_factory=dict)  # what messages get: the values used, {profile}
    evidence: list[str] = field(default_factory=list)


def _unset(value) -> bool:
    return value is None or value == {} or value == []


def chosen_profile(context):
    """The node's Chosen (profiles/choice.py), once per node."""
    found = context.shared.get("profile:chosen")
    if found is None:
        choice = getattr(context.options, "profiles", None)
        if choice is None:
            from topolint.profiles.choice import Chosen

            found = Chosen(None, "no profile choice in this run")
        else:
            found = choice.for_node(context.node)
        context.shared["profile:chosen"] = found
    return found


def profiled(module, params, context) -> Profiled:
    mapping = getattr(module, "PROFILE", None)
    unset = [name for name in (mapping or {}) if _unset(getattr(params, name, None))]
    if not unset:
        return Profiled(params)
    chosen = chosen_profile(context)
    profile = chosen.profile
    needed = [name for name in unset if module.Parameters.model_fields[name].get_default() is None]
    if profile is None:
        if needed:
            return Profiled(None, f"no profile for the node: {chosen.how}")
        return Profiled(params)
    update, evidence = {}, []
    for name in unset:
        value = profile.value(mapping[name])
        if value is None:
            continue
        update[name] = value
        evidence.append(f"profile {profile.name} ({profile.title}; {chosen.how}): {profile.cited(mapping[name])}")
    missing = [name for name in needed if name not in update]
    if missing:
        value = mapping[missing[0]]
        why = profile.unknown.get(value, "it does not state it")
        return Profiled(None, f"profile {profile.name} states no {value}: {why}")
    if not update:
        return Profiled(params)
    evidence += chosen.evidence[:6]
    return Profiled(params.model_copy(update=update), fields={**update, "profile": profile.name}, evidence=evidence)
