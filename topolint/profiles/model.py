"""The profile file format (rules/profiles/NAME.toml; docs/profiles.md).

```toml
name = "nd-h100-v5"
title = "Azure ND H100 v5 (Standard_ND96isr_H100_v5)"
extends = "hgx-h100"                 # values not stated here come from that profile

[sources]                            # every value names one of these
nhc = "https://github.com/Azure/azurehpc-health-checks/blob/.../conf/nd96isr_h100_v5.conf"

[values]
gpu_count = { value = 8, source = "nhc", says = "check_gpu_count 8" }

[unknown]                            # values left out: no document could be cited
net_gbps = "why"

match = ["gpu_count", "nic_count"]   # what a node must reveal, and agree on, to be matched to it
also = ["nic_names"]                 # what must agree where the node reveals it
```

Every value names its source; a value no document states is left out and said so in
``[unknown]``, never guessed.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

from topolint.model.schema import ConfigDict, Field
from topolint.model.schema import Model as BaseModel

NAME = r"^[a-z0-9]+(-[a-z0-9]+)*$"

# The values a profile may state: name -> (type, what it means). Which template parameter reads
# each is declared by the templates themselves (``PROFILE`` in topolint/checks/*.py).
VALUES: dict[str, tuple[type, str]] = {
    "gpu_count": (int, "GPUs the node has"),
    "gpu_model": (str, 'the GPU model, as topolint/data/pci_devices.toml or nvidia-smi names it ("H100 SXM5")'),
    "gpu_sm": (int, "the GPUs' compute capability x 10 (90 for Hopper)"),
    "nvlinks": (int, "NVLinks each GPU has"),
    "nic_count": (int, "network devices NCCL can use for the fabric (HCA ports, EFA devices), at least"),
    "nic_names": (str, 'a glob the fabric NICs\' names match ("mlx5_ib*")'),
    "net_gbps": (float, "the rate of each fabric network device, Gb/s, at least"),
    "port_gbps": (dict, 'HCA name glob -> the rate its Active ports run at, Gb/s ({"mlx5_ib*" = 400})'),
    "numa_nodes": (int, "NUMA nodes the node has"),
}
# Values a node's files reveal and a profile can be matched on (profiles/reveal.py).
MATCHABLE = ("gpu_model", "gpu_sm", "gpu_count", "nvlinks", "nic_count", "nic_names", "numa_nodes")


class ProfileValue(BaseModel):
    """One expected value and the document that states it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    value: Union[bool, int, float, str, dict[str, float]] = Field(description="the value")
    source: str = Field(min_length=1, description="a key of the profile's [sources]")
    says: str = Field(default="", max_length=300, description="what the source says, in its words or near them")


class Profile(BaseModel):
    """A profile as its file holds it (``extends`` not yet resolved: library.py does that)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(pattern=NAME, description="the profile's name: --profile NAME, [profiles] in the config")
    title: str = Field(min_length=1, max_length=200, description="the kind of node, for messages")
    extends: Optional[str] = Field(default=None, pattern=NAME, description="a profile whose values this one inherits")
    match: list[str] = Field(default_factory=list, description="values a node must reveal and agree on to be matched "
                                                               "to this profile (empty: chosen by name only)")
    also: list[str] = Field(default_factory=list, description="values that must agree where the node reveals them "
                                                              "(a node that reveals more that agrees matches better)")
    sources: dict[str, str] = Field(default_factory=dict, description="source key -> URL or document")
    values: dict[str, ProfileValue] = Field(default_factory=dict)
    unknown: dict[str, str] = Field(default_factory=dict, description="value name -> why the profile leaves it out")
    notes: str = Field(default="", description="anything else worth knowing about this kind of node")
    path: str = Field(default="", description="the file it was read from (not in the file)")

    def value(self, name: str) -> Any:
        found = self.values.get(name)
        return found.value if found is not None else None

    def cited(self, name: str) -> str:
        """``name = VALUE (SOURCE)`` for evidence: the value and the document it comes from."""
        found = self.values[name]
        return f"{name} = {_shown(found.value)} ({self.sources.get(found.source, found.source)})"


def _shown(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in sorted(value.items()))
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    return str(value)


class ProfileError(ValueError):
    """A profile file that cannot be used; the message names the file and the key."""


def check_profile(profile: Profile, path: str) -> None:
    """What pydantic cannot say: known value names of the right type, sources that exist, match
    keys that are matchable values the profile states (inherited ones are checked once resolved)."""
    for name, found in profile.values.items():
        if name not in VALUES:
            raise ProfileError(f"{path}: values.{name}: unknown value (known: {', '.join(VALUES)})")
        kind = VALUES[name][0]
        value = found.value
        ok = (isinstance(value, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values())
              if kind is dict else isinstance(value, kind) and not isinstance(value, bool)
              or (kind is float and isinstance(value, int) and not isinstance(value, bool)))
        if not ok:
            raise ProfileError(f"{path}: values.{name}: expected {kind.__name__}, got {value!r}")
        if found.source not in profile.sources:
            raise ProfileError(f"{path}: values.{name}.source: {found.source!r} is not a key of [sources]")
    for name in profile.unknown:
        if name not in VALUES:
            raise ProfileError(f"{path}: unknown.{name}: unknown value (known: {', '.join(VALUES)})")
    for name in [*profile.match, *profile.also]:
        if name not in MATCHABLE:
            raise ProfileError(f"{path}: match: {name!r} cannot be matched (matchable: {', '.join(MATCHABLE)})")
    for key, where in profile.sources.items():
        if not re.fullmatch(r"[a-z0-9_-]{1,40}", key) or not where.strip():
            raise ProfileError(f"{path}: sources.{key}: a key of a-z, 0-9, _ and - naming a URL or document")
