"""The fleet: what many nodes look like side by side (docs/fleet.md).

Parsing stays per node. Each node is reduced to an inventory (inventory.py: a small typed
record with a JSON Schema, written and read by the same model); the cluster stage sees only
inventories, gathered in a ClusterModel (cluster.py), and the cross-node rules
(topolint/checks/node_differs.py, config_differs.py) read that model. build.py turns a node's
facts into its inventory; groups.py sorts nodes into groups of like hardware and finds each
group's majority.
"""
