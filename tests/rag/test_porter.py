"""The Porter stemmer against the examples of Porter's paper, step by step."""

from __future__ import annotations

import pytest

from rag.embeddings.porter import porter_stem

# (word, stem) from "An algorithm for suffix stripping" (1980), grouped by the step each one exercises.
PAPER = {
    "1a": [("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("caress", "caress"), ("cats", "cat")],
    "1b": [
        ("feed", "feed"),
        ("agreed", "agre"),
        ("plastered", "plaster"),
        ("bled", "bled"),
        ("motoring", "motor"),
        ("sing", "sing"),
        ("conflated", "conflat"),
        ("troubled", "troubl"),
        ("sized", "size"),
        ("hopping", "hop"),
        ("tanned", "tan"),
        ("falling", "fall"),
        ("hissing", "hiss"),
        ("fizzed", "fizz"),
        ("failing", "fail"),
        ("filing", "file"),
    ],
    "1c": [("happy", "happi"), ("sky", "sky")],
    "2": [
        ("relational", "relat"),
        ("conditional", "condit"),
        ("rational", "ration"),
        ("valenci", "valenc"),
        ("digitizer", "digit"),
        ("radicalli", "radic"),
        ("differentli", "differ"),
        ("vietnamization", "vietnam"),
        ("predication", "predic"),
        ("operator", "oper"),
        ("feudalism", "feudal"),
        ("decisiveness", "decis"),
        ("hopefulness", "hope"),
        ("callousness", "callous"),
        ("formaliti", "formal"),
        ("sensitiviti", "sensit"),
        ("sensibiliti", "sensibl"),
    ],
    "3": [
        ("triplicate", "triplic"),
        ("formative", "form"),
        ("formalize", "formal"),
        ("electriciti", "electr"),
        ("electrical", "electr"),
        ("hopeful", "hope"),
        ("goodness", "good"),
    ],
    "4": [
        ("revival", "reviv"),
        ("allowance", "allow"),
        ("inference", "infer"),
        ("airliner", "airlin"),
        ("gyroscopic", "gyroscop"),
        ("adjustable", "adjust"),
        ("defensible", "defens"),
        ("irritant", "irrit"),
        ("replacement", "replac"),
        ("adjustment", "adjust"),
        ("dependent", "depend"),
        ("adoption", "adopt"),
        ("homologou", "homolog"),
        ("communism", "commun"),
        ("activate", "activ"),
        ("angulariti", "angular"),
        ("homologous", "homolog"),
        ("effective", "effect"),
        ("bowdlerize", "bowdler"),
    ],
    "5": [
        ("probate", "probat"),
        ("rate", "rate"),
        ("cease", "ceas"),
        ("controll", "control"),
        ("roll", "roll"),
    ],
}


@pytest.mark.parametrize("step", sorted(PAPER))
def test_the_papers_examples(step: str) -> None:
    assert [porter_stem(word) for word, _ in PAPER[step]] == [stem for _, stem in PAPER[step]]


def test_word_families_share_a_stem_and_other_words_pass_through() -> None:
    assert {porter_stem(w) for w in ("generalization", "generalizations", "generalize", "general")} == {
        "gener"
    }
    assert {porter_stem(w) for w in ("connect", "connected", "connecting", "connection", "connections")} == {
        "connect"
    }
    for word in ("il10", "x", "is", "café", "東京", ""):
        assert porter_stem(word) == word
