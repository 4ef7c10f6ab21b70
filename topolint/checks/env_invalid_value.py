"""ENV003: a value that NCCL does not read as written (type, choices, level names, list syntax)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit, value_fix, value_fix_refusal, where
from topolint.engine.finding import Hit
from topolint.model.nccl_env import check_value, corrected_value, lookup
from topolint.model.nccl_reads import value_problem

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for config, setting in literal_settings(context):
        entry = lookup(setting.name) or {}
        in_force = None
        if entry.get("ranges"):  # a range that changed by version (MAXCHANNELS): it must hold for each one in force
            in_force = context.nccl_in_force(config, setting)
            problems = [check_value(setting.name, setting.value, v) for v in in_force.judged]
            problem = problems[-1] if all(problems) else None
        else:
            problem = check_value(setting.name, setting.value)
        if not problem and setting.name in ("NCCL_ALGO", "NCCL_PROTO"):  # syntax that changed by version
            in_force = context.nccl_in_force(config, setting)
            problem = value_problem(setting.name, setting.value, in_force.judged)
        if problem:
            hit = setting_hit(setting, problem=problem, expected=entry.get("values") or entry.get("type") or "")
            hit.evidence.append(f"catalog: {setting.name} ({entry.get('type', '?')}): {entry.get('values', '')}")
            if in_force is not None:
                hit.evidence.extend(in_force.evidence())
            corrected = corrected_value(setting.name, setting.value)
            if corrected is not None:  # unsafe: NCCL then reads a setting it ignored until now
                refusal = value_fix_refusal(setting, corrected)
                if refusal:  # --verbose says why the finding has no fix
                    context.notes.append(f"{where(setting.loc)}: no fix to {corrected} offered "
                                         f"for {setting.name}: {refusal}")
                else:
                    hit.autofix = value_fix(setting, corrected)
            yield hit
