"""The kgmind LangGraph: state, context, one module per node, the wiring and its Runnable forms.

Import :mod:`kgmind.graphs.pipeline` for ``graph``; importing this package builds nothing.
"""
