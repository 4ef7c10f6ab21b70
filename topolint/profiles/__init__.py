"""Profiles: the expected shape of a kind of node, as rule data (rules/profiles/*.toml).

A profile states, for one kind of node (a DGX H100, an Azure ND H100 v5, an AWS p5.48xlarge),
values such as the GPU count, the GPU model, the NVLinks of each GPU, the fabric NICs and their
rates, each with the document it comes from. The site templates (checks/site_*.py,
net_speed_minimum) and NET004 read them: a template parameter a rule leaves unset is taken from
the node's profile (``PROFILE`` in the check module names which value), so a profile is one more
way to give the templates their values, not a second mechanism. docs/profiles.md.

- ``model``: the profile file format (validated with pydantic by ``load_profile_file`` and the
  project's tests; a run constructs the built-in ones without validating).
- ``library``: every profile by name (built-in and ``profile-dirs``), ``extends`` resolved.
- ``reveal``: what a node's own files reveal of its shape (GPU model and count, NVLinks, NICs).
- ``choice``: which profile a node gets: ``--profile``, a glob of node names in the
  configuration, or the profile its revealed shape matches.
- ``genconf``: ``topolint profile --from NODE``: a profile written from a known-good node.
"""
