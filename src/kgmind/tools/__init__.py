"""LangChain tools over the KG: the four exploration tools and the weight-writing feedback tool.

:mod:`kgmind.tools.exploration` holds ``path_evidence``, ``neighbor_evidence``,
``hykge_chains`` and ``weighted_dfs_chains``; :mod:`kgmind.tools.feedback` holds
``update_edge_weights``, the tool through which the feedback node writes edge weights.
The stores they read and write live in :mod:`kgmind.stores`.
"""
