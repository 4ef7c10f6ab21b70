"""The model in the middle: typed facts with source positions, assembled per node and cluster."""
