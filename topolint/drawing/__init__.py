"""Drawings of one node: what the model holds, marked with findings and the estimate's bottleneck.

diagram.py takes the model (the completed node's NCCL graph, an hwloc export's topology, or an
``nvidia-smi topo -m`` matrix as the pairwise paths it states) into a Diagram of boxes and links;
marks.py puts findings, finding paths and the bottleneck on it; layout.py places it (pure and
deterministic, from a fixed width per character); svg.py, dot.py and mermaid.py write it.
Nothing here computes a path, a bandwidth or a verdict the model or the estimate does not hold.
Imported only by the commands and reporters that draw (start-up stays light).
"""
