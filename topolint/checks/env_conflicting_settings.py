"""ENV007: one variable set twice to different values in one scope (one control-flow path), a
duplicate Kubernetes env name or repeated Dockerfile ENV, or two settings that contradict."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import (
    related_scopes,
    related_setting,
    setting_evidence,
    setting_hit,
)
from topolint.engine.finding import Hit
from topolint.model.nccl_env import param_int

NEEDS = ("config",)
_DUPLICATES = ("k8s-env", "dockerfile-env", "compose-env", "configmap")


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        settings = [s for s in config.settings if not s.passthrough]
        for j, later in enumerate(settings):
            for earlier in settings[:j]:
                if earlier.name != later.name or earlier.scope != later.scope:
                    continue
                if earlier.default_only or later.default_only:
                    continue
                differ = earlier.literal and later.literal and earlier.value != later.value
                if "compose-env-file" in (earlier.source, later.source):  # later files and environment: win by design
                    if differ and later.source == "compose-env" and earlier.source == "compose-env-file":
                        yield _overridden(earlier, later)
                        break
                    continue
                if not differ and later.source not in _DUPLICATES:
                    continue
                hit = setting_hit(later, earlier_value=earlier.value if earlier.value is not None else "(computed)",
                                  earlier_line=earlier.loc.line)
                hit.variant = "default" if differ else "duplicate"
                hit.evidence.insert(0, setting_evidence(earlier))
                hit.related.append(related_setting(earlier, f"first set here to {earlier.value}"))
                yield hit
                break
        yield from _contradictions(settings)


def _overridden(earlier, later) -> Hit:
    """compose's ``environment:`` overrides the service's ``env_file`` (compose-go types/project.go
    ``WithServicesEnvironmentResolved``): worth knowing, not wrong."""
    hit = setting_hit(later, earlier_value=earlier.value, earlier_line=earlier.loc.line, earlier_path=earlier.loc.path)
    hit.variant, hit.severity = "env-file-overridden", "info"
    hit.evidence.insert(0, setting_evidence(earlier))
    hit.related.append(related_setting(earlier, f"{earlier.name}={earlier.value} in env_file, not used"))
    return hit


_PAIRS = [
    # (a, a's value test, b, b's value test, variant)
    ("NCCL_P2P_DISABLE", lambda v: v == "1", "NCCL_P2P_LEVEL", lambda v: True, "p2p"),
    # NCCL_IB_DISABLE=1 with NCCL_NET=IB is NET007's (NCCL fails at init): one finding per cause.
]


def _contradictions(settings) -> Iterator[Hit]:
    literal = [s for s in settings if s.literal]
    for a_name, a_test, b_name, b_test, variant in _PAIRS:
        for a in (s for s in literal if s.name == a_name and a_test(s.value.strip())):
            for b in (s for s in literal if s.name == b_name and b_test(s.value.strip())):
                if related_scopes(a.scope, b.scope):
                    hit = setting_hit(b, other=a.name, other_value=a.value, earlier_line=a.loc.line,
                                      earlier_value=a.value)
                    hit.variant = variant
                    hit.evidence.insert(0, setting_evidence(a))
                    hit.related.append(related_setting(a, f"{a.name}={a.value} wins"))
                    yield hit
                    break
    # Both are NCCL_PARAMs (ncclLoadParam); only clean integers are compared: a value NCCL reads
    # in part is ENV invalid-value's finding, not a range conflict.
    for low, high in (("NCCL_MIN_CTAS", "NCCL_MAX_CTAS"), ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS")):
        for a in (s for s in literal if s.name == low and param_int(s.value) is not None):
            for b in (s for s in literal if s.name == high and param_int(s.value) is not None):
                if related_scopes(a.scope, b.scope) and param_int(a.value) > param_int(b.value):
                    hit = setting_hit(b, other=a.name, other_value=a.value, earlier_line=a.loc.line,
                                      earlier_value=a.value)
                    hit.variant = "range"
                    hit.evidence.insert(0, setting_evidence(a))
                    hit.related.append(related_setting(a, f"{a.name}={a.value}"))
                    yield hit
