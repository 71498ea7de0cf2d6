"""The words of relation names, English and Chinese: what a name says of a relation's role and direction.

:func:`kgmind.relations.infer_schema` reads a relation's name when the entity types at its
ends say nothing (a triples file): ``presents_with`` and ``症状`` name symptom relations,
``symptom_of`` and ``可见于`` put the disease at the tail. Word lists only; no graph.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Role", "names_other", "role_from_name", "weak_symptom_name"]

Role = Literal["symptom", "test", "treatment", "other"]

# Words of a relation name that give its role (lower-case substrings; Chinese as written).
_ROLE_WORDS: tuple[tuple[Role, tuple[str, ...]], ...] = (
    (
        "treatment",
        (
            "treat",
            "medicat",
            "medicin",
            "drug",
            "cure",
            "therap",
            "prescri",
            "remed",
            "pharma",
            "relieve",
            "manag",
        ),
    ),
    ("treatment", ("药", "治疗", "疗法", "处方")),
    (
        "test",
        (
            "test",
            "check",
            "diagnos",
            "exam",
            "screen",
            "lab_",
            "procedure",
            "detect",
            "imaging",
            "assay",
            "confirm",
        ),
    ),
    ("test", ("检查", "检验", "化验", "诊断", "筛查", "检测")),
    (
        "symptom",
        ("symptom", "sign", "present", "manifest", "feature", "complain", "characteri", "exhibit", "finding"),
    ),
    ("symptom", ("症状", "表现", "症候", "体征", "征象", "见于")),
)
# Words of relations between a disease and something that is not a symptom, test or drug: never a
# medical role, even when the name also says "disease" (``department_of_disease``, ``food_good_for``).
_OTHER_WORDS = ("department", "food", "recipe", "diet", "complication", "cause", "科室", "食", "并发", "病因")
# Words that name the disease end itself: with no role word, a relation toward a disease is read as
# a symptom relation, the commonest kind (``possible_disease``, ``可能疾病``).
_DISEASE_WORDS = ("disease", "疾病")
# Words that put the disease at the tail (``symptom_of``, ``treats``, ``可见于``); else the head.
_TAIL_DISEASE_EN = ("disease", "_of", "_for", "indicat", "suggest", "treats", "cures", "diagnoses", "detects")
_TAIL_DISEASE_ZH = ("见于", "提示", "用于", "可治", "主治", "疾病")
_TAIL_DISEASE_ZH_START = ("治疗", "诊断", "检查出")
_ZH_NOUN_ENDS = ("药物", "检查", "症状", "方法", "方案")
_HEAD_DISEASE_EN = ("has_", "need", "_with", "_by", "presents", "shows", "requires")
# The same cues at the ends of a name written without underscores (``hasSymptom`` is stored ``hassymptom``).
_TAIL_END_EN = ("of", "for")
_HEAD_END_EN = ("with", "by")


def role_from_name(relation: str) -> tuple[Role | None, str | None]:
    """The role the words of a name give, and the disease end they give (``None``: not said).

    >>> role_from_name("presents_with")
    ('symptom', 'head')
    >>> role_from_name("symptom_of")
    ('symptom', 'tail')
    """
    low = relation.lower()
    if any(w in low for w in _OTHER_WORDS):
        return None, None
    role: Role | None = next((r for r, words in _ROLE_WORDS if any(w in low for w in words)), None)
    if role is None and any(w in low for w in _DISEASE_WORDS):
        role = "symptom"
    end: str | None = None
    zh_tail = any(w in low for w in _TAIL_DISEASE_ZH) or (
        low.startswith(_TAIL_DISEASE_ZH_START) and not low.endswith(_ZH_NOUN_ENDS)
    )
    if zh_tail or any(w in low for w in _TAIL_DISEASE_EN) or low.endswith(_TAIL_END_EN):
        end = "tail"
    elif any(w in low for w in _HEAD_DISEASE_EN) or low.startswith("has") or low.endswith(_HEAD_END_EN):
        end = "head"
    return role, end


def names_other(relation: str) -> bool:
    """Whether the name says the relation is no medical role (``complication_of``, ``所属科室``)."""
    low = relation.lower()
    return any(w in low for w in _OTHER_WORDS)


def weak_symptom_name(relation: str) -> bool:
    """Whether a name gives the symptom role by its disease words alone (no role word)."""
    low = relation.lower()
    return not any(w in low for _, words in _ROLE_WORDS for w in words) and any(
        w in low for w in _DISEASE_WORDS
    )
