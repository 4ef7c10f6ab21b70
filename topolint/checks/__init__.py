"""Checks: the code behind rules. One module per check; rules/ instantiates them with data.

Each module defines ``NEEDS`` (the inputs it reads), ``Parameters`` (a pydantic model of its
typed parameters with defaults) and ``check(context, params)`` yielding Hits. The table is
explicit: nothing registers itself on import, and modules load only when a rule uses them.
"""

CHECKS = {
    "gpu_nic_cross_socket": "topolint.checks.gpu_nic_cross_socket",
}
