"""Check templates for site rules: checks with typed, documented parameters that no built-in rule
instantiates; a site writes a rule TOML naming one (`check = "site_env_required"`) with its own
values in `[parameters]` and loads it with `--rule-dir` (docs/site-rules.md).

TEMPLATES is the list the docs and the meta-test walk; each has fixtures under
fixtures/site-templates/<template>/.
"""

from __future__ import annotations

TEMPLATES = (
    "site_env_required",
    "site_env_forbidden",
    "site_env_allowed_values",
    "net_speed_minimum",
    "site_nic_min_count",
    "site_gpu_count",
    "site_gpu_model",
    "site_nvlink_min_count",
)


def dumps(context) -> list:
    """The node's topology dumps. A static topology file states only what it states: the GPUs,
    NICs or NVLinks it leaves out are not evidence of absence, so counting templates skip it."""
    return [t for t in context.node.topologies if t.kind == "dump"]
