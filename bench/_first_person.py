"""The first-person rule of bench/longdev.py (issue 28's long-history view): a LoCoMo question about what
one speaker said, asked as that speaker would ask it ("What did Caroline research?" -> "What did I
research?"). One simple rule applied to every question the same way, not a grammar:

* the question must name the speaker (the name, or a nickname: a word of 3+ letters, capitalised, that
  begins the name: "Mel") and not the other speaker of the conversation (else: None, asked as it is);
* "Caroline's" (or "James'") -> "my"; the name -> "me" after a preposition, an object-taking verb, an
  -ing word, or a verb in -s when a function word or nothing follows ("What motivates Joanna to ...?"),
  else "I";
* she/he -> "I", him -> "me", his -> "my", her -> "me" before a function word or the end, else "my",
  herself/himself -> "myself";
* agreement: "is I" -> "am I", "has I" -> "have I", "does I" -> "do I", "I <verb>s" -> "I <verb>",
  "I and Name" -> "Name and I".

Pronouns about someone else come out wrong ("her friend" of a mother) and "I and my partner" stays.
"""

from __future__ import annotations

import re

_PREPOSITIONS = frozenset({
    "to", "for", "with", "about", "from", "by", "of", "at", "on", "in", "into", "than", "like",
    "between", "without", "toward", "towards", "during"})
_OBJECT_VERBS = frozenset({
    "give", "gave", "given", "tell", "told", "help", "helped", "ask", "asked", "send", "sent", "show",
    "showed", "teach", "taught", "remind", "reminded", "inspire", "inspired", "motivate", "motivated",
    "encourage", "encouraged", "surprise", "surprised", "bring", "brought", "offer", "offered",
    "recommend", "recommended", "join", "joined", "visit", "visited", "meet", "met", "call", "called",
    "support", "supported", "invite", "invited", "make", "made", "let"})
_FUNCTION = frozenset({
    "and", "or", "to", "for", "with", "about", "from", "by", "at", "on", "in", "into", "of", "off",
    "up", "out", "back", "a", "an", "the", "that", "this", "as", "than", "when", "after", "before",
    "while", "during", "if", "so"})
_NOT_VERBS = frozenset({
    "is", "was", "has", "does", "this", "always", "sometimes", "perhaps", "as", "its", "us", "thus",
    "yes", "less", "unless", "whereas", "across"})
_AGREE = [(r"\bI is\b", "I am"), (r"\bis I\b", "am I"), (r"\bIs I\b", "Am I"), (r"\bI has\b", "I have"),
          (r"\bhas I\b", "have I"), (r"\bHas I\b", "Have I"), (r"\bdoes I\b", "do I"), (r"\bDoes I\b", "Do I"),
          (r"\bI does\b", "I do"), (r"\bI goes\b", "I go"), (r"\bisn't I\b", "am I not"), (r"\bhasn't I\b", "haven't I"),
          (r"\bdoesn't I\b", "don't I")]


def names(question: str, person: str) -> bool:
    """Does the question name `person` (the name, or a prefix of 3+ letters of it as a word: "Mel")?"""
    return any(len(w) >= 3 and person.lower().startswith(w.lower()) and w[0].isupper()
               for w in re.findall(r"[A-Za-z]+", question))


def first_person(question: str, user: str, other: str) -> str | None:
    """The question in the first person of `user` (the rule of the module docstring), or None when it does
    not name the user alone."""
    if not names(question, user) or names(question, other):
        return None
    words = "|".join(sorted({w for w in re.findall(r"[A-Za-z]+", question)
                             if len(w) >= 3 and w[0].isupper() and user.lower().startswith(w.lower())}))

    def before(text: str, at: int) -> str:
        found = re.findall(r"[A-Za-z']+", text[:at])
        return found[-1].lower() if found else ""

    def name(m: re.Match[str]) -> str:
        if m.group(2):
            return "my"
        prev = before(question, m.start())
        nxt = re.match(r"\s*([A-Za-z]*)", question[m.end():])
        # "What motivates X to ...?": a verb in -s before the name, a function word (or nothing) after it
        verb_s = prev.endswith("s") and len(prev) > 3 and prev not in _NOT_VERBS \
            and (not nxt or not nxt.group(1) or nxt.group(1).lower() in _FUNCTION)
        return "me" if prev in _PREPOSITIONS or prev in _OBJECT_VERBS or prev.endswith("ing") or verb_s else "I"

    text = re.sub(rf"\b({words})(['\u2019]s?)?(?!\w)", name, question)

    def her(m: re.Match[str]) -> str:
        nxt = re.match(r"\s+([A-Za-z]+)", text[m.end():])
        return "me" if not nxt or nxt.group(1).lower() in _FUNCTION else "my"

    text = re.sub(r"\bher\b", her, text)
    for pat, rep in [(r"\b(she|he)\b", "I"), (r"\bhim\b", "me"), (r"\bhis\b", "my"), (r"\bhers\b", "mine"),
                     (r"\b(herself|himself)\b", "myself")]:
        text = re.sub(pat, rep, text)
    text = re.sub(r"\b(She|He)\b", "I", text)
    text = re.sub(r"\bHis\b|\bHer\b", "My", text)
    def third_person(m: re.Match[str]) -> str:  # "I enjoys" -> "I enjoy", "I watches" -> "I watch"
        word = m.group(1) + "s"
        if word in _NOT_VERBS or word in ("does", "goes"):
            return m.group(0)
        return "I " + (word[:-2] if re.search(r"(ch|sh|ss|x|z)es$", word) else word[:-1])

    for pat, rep in _AGREE:
        text = re.sub(pat, rep, text)
    text = re.sub(r"\bI ([a-z]+)s\b", third_person, text)
    text = re.sub(r"\bI and ([A-Z][a-z]+)\b", r"\1 and I", text)
    return text[0].upper() + text[1:]
