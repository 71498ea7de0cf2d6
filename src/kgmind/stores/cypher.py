"""The one place where Cypher text is completed at run time: a validated hop bound.

Neither Neo4j nor LadybugDB accepts a parameter as the upper bound of a
variable-length pattern (``[*..$n]`` is a syntax error), so the shortest-path
statements are *templates* in the backends' ``queries.py`` with the token
:data:`HOPS` where the bound goes. :func:`with_hop_bound` puts an integer there and
nothing else: values (ids, names, limits) still travel only as ``$parameters``.
The reliability suite's query scan (``tests/reliability/test_injection.py``) accepts
exactly this builder around a ``queries.py`` template and checks that it refuses
anything but a small positive ``int``.
"""

from __future__ import annotations

__all__ = ["HOPS", "with_hop_bound"]

#: Where a template takes its hop bound; not valid Cypher, so an unfilled template fails.
HOPS = "__MAX_HOPS__"


def with_hop_bound(template: str, max_hops: int, *, most: int) -> str:
    """Return ``template`` with its one :data:`HOPS` token replaced by ``max_hops``.

    Args:
        template: A statement constant from a ``queries.py`` module.
        max_hops: The bound: an ``int`` (not a ``bool``) in ``1..most``.
        most: The largest bound the backend accepts.

    Returns:
        The statement to run.

    Raises:
        ValueError: ``max_hops`` is not an int in range, or ``template`` does not hold
            exactly one :data:`HOPS` token.
    """
    if type(max_hops) is not int or not 1 <= max_hops <= most:
        raise ValueError(f"max_hops must be an int in 1..{most}, not {max_hops!r}")
    if template.count(HOPS) != 1:
        raise ValueError("a hop-bound template holds exactly one HOPS token")
    return template.replace(HOPS, str(max_hops))
