"""How well a sentence says what a name is (``_lead_rank``, 0 to 3): the sentence an item's page
leads with (``_describe``), and the leads that describe a parameter rather than a thing."""

from __future__ import annotations

import re

from wiki.extract import cjk, lexicon
from wiki.extract.offline.limits import DESCRIPTION_CHARS
from wiki.extract.offline.names import _IDENT, _NEXT_WORD, _PARAMETER_NOUNS, _bounded, _find
from wiki.extract.offline.prose import _SENTENCE_END, _UNRESOLVED, _Sentence
from wiki.extract.offline.words import (
    AFTER_VERB,
    AUXILIARY_VERBS,
    CENTRAL_PARTICIPLES,
    CENTRAL_VERBS,
    FINITE,
    MODAL_VERBS,
    PURPOSE_PARTICIPLES,
    RULE_MODALS,
)
from wiki.slugs import has_cjk

_VERBS = (
    r"is|are|was|were|provides?|implements?|represents?|contains?|defines?|describes?|allows?|"
    r"enables?|lets|manages?|handles?|stores?|holds?|means|refers to|consists of|offers?|"
    r"supports?|acts as|serves as|returns?|gives|creates?|controls?"
)
_NOUNS = (
    r"module|package|library|class|function|method|macro|type|object|structure|struct|interface|"
    r"api|driver|subsystem|framework|tool|command|option|flag|flags|protocol|format|file|service|"
    r"system|project|language|standard|variable|constant|attribute|field|parameter|call|hardware|controller|"
    r"layer|core|stack|mechanism|facility|feature"
)
# What may follow the name in a definitional sentence: "X (...)", "X, the ...,", "X module", then a verb.
_DEFINES = re.compile(
    rf"^(?:\s*\([^)]{{0,80}}\))?(?:\s*,[^,]{{1,80}},)?(?:\s+(?:{_NOUNS}))?\s+(?:{_VERBS})\b",
    re.IGNORECASE,
)
# The strongest definitions: "X is a/an/the/one ...", "X refers to", "X, the ..., ..." (apposition).
_DEFINES_WHAT = re.compile(
    rf"^(?:\s*\([^)]{{0,80}}\))?(?:\s+(?:{_NOUNS}))?(?:\s+(?:is|are|was|were)\s+(?:a|an|the|one|any)\s"
    rf"|\s+(?:refers to(?!\s+(?:all|every|each|them|it|its|a\s+\w+\s+via)\b)|means|stands for|consists of|is used"
    rf"|are used|(?:is|are)\s+defined\s+as)\b"
    rf"|\s*,\s+(?:a|an|the)\s[^,]{{1,80}},)",
    re.IGNORECASE,
)
#: What opens a sentence before its subject: an article, and before a code name the kind it is
#: ("The catalog pg_class describes ...", "The function kmalloc() returns ...": an apposition).
_ARTICLE = re.compile(
    r"^(?:(?:The|A|An|Each|Every)\s+)?(?:(?:system\s+)?(?:catalog|view|function|table|file|command|parameter"
    r"|module|driver|utility|program|option|type|extension|setting|variable|macro|flag|structure|struct"
    r"|field|ioctl|tool)\s+(?=\S*[_.(]))?",
    re.IGNORECASE,
)
_MODALS = MODAL_VERBS | AUXILIARY_VERBS
#: Modals that say what will or might happen to X, never what X is or does.
_EVENT_MODALS = frozenset({"will", "would", "might", "may", "shall"})
#: What follows a purpose participle when it says what X is for ("used to", "designed for", "meant as").
_FOR_WHAT = re.compile(r"\s+(?:to|for|as|when|in\s+order\s+to)\b")


def _continues(needle: str, after: str) -> bool:
    """Whether the words ``after`` a concept's name make a longer noun phrase the sentence is about:
    a kind noun ("configuration file") or, after a singular name, a noun that cannot be its verb
    ("kernel memory support is ..."; "cpusets provide ..." is a verb after a plural)."""
    m = _NEXT_WORD.match(after.lower())
    if m is None:
        return False
    word = m.group(1)
    if re.fullmatch(_NOUNS, word):
        return True
    if word in _MODALS or word in ("is", "are", "was", "were") or word.endswith("s") or needle.endswith("s"):
        return False
    return "NOUN" in lexicon.lemmas(word)


#: A caveat or a restriction: what X must not, cannot or can only do, what one has to do with it,
#: or that it is deprecated ("LIRC_MODE_PULSE can only be used for transmitting", "Realtime group
#: scheduling means you have to assign ...": the linux-doc judges failed such leads).
_CAVEAT = re.compile(
    r"(?i)\b(?:should|must|may|can|could|do|does|need)\s+not\b|\b(?:cannot|never|deprecated)\b|n't\b"
    r"|\b(?:can|may|must|could)\s+only\b|\bonly\s+be\b|\b(?:have|has|need|needs)\s+to\b"
    # when or how a caller may use it: "free_netdev() can be called after unregister_netdev() returns"
    r"|\b(?:can|may|must|should)\s+be\s+(?:called|invoked|used)\s+"
    r"(?:after|before|when|whenever|from|within|only|if|once|while|during|at|on|under)\b"
)
#: "X is a complex system with many settings", "X are good examples to understand ...", "X is a
#: popular way": a judgement of X with a generic noun, which tells a reader nothing of what X is
#: (the linux-doc judges failed "linux memory management" and "tiny DRM drivers" on such leads).
#: After a name, a word that carries on from the sentence before ("then", "also", "too", "still",
#: "again", "thus"), maybe after a verb: such a sentence leads no page (the demo's judges failed
#: "The coroutine then has a chance to clean up", "readline is also automatically configured").
_CONTINUES_CONTEXT = re.compile(r"^\s+(?:[a-z]+\s+){0,2}(?:then|also|too|still|again|thus|therefore)\b")


def _after_name(needles: list[str], concept: bool, text: str) -> str:
    """What follows the name opening ``text`` (after an article), or "" when no needle opens it."""
    start = _ARTICLE.match(text).end()
    rest = (text.lower() if concept else text)[start:]
    needle = next((n for n in needles if rest.startswith(n)), None)
    return text[start + len(needle) :].removeprefix("()") if needle else ""


_JUDGEMENT = re.compile(
    r"^\s+(?:is|are)\s+(?:a\s+|an\s+)?(?:very\s+|quite\s+|rather\s+|fairly\s+|really\s+)?"
    r"(?:complex|complicated|simple|powerful|good|great|nice|useful|important|popular|common|interesting"
    r"|tricky|difficult|easy|flexible|convenient|handy|best|better|excellent|perfect|possible|natural)\s+"
    r"(?:system|thing|way|piece|example|tool|feature|topic|area|subject|part|approach|idea|one|choice"
    r"|place|start|starting|alternative|option|solution|replacement|addition)s?\b"
    # "The LM96080 is a more recent incarnation, ...", "SMBus is a sibling protocol": of what, the
    # sentence does not say
    r"|^\s+(?:is|are)\s+(?:a|an)\s+(?:more\s+recent|newer|older|later|earlier|sibling|similar|related)\s+"
    r"(?:incarnation|version|variant|revision|protocol|chip|device|model|part)s?\b(?!\s+(?:of|to)\b)"
)


def _lead_rank(needles: list[str], concept: bool, text: str) -> int:
    """How well sentence ``text`` says what the item is: 3 "X is a ...", "X is defined as ...",
    "X, the ..., ...", "X refers to ..."; 2 "X provides/implements/... ..."; 1 X is the subject of
    another verb ("X returns ...", "X can ..."); 0 otherwise or when the sentence is incomplete.

    A circular sentence, repeating the name after it ("opcode is an OpcodeInfo record, describing
    the current opcode"), says nothing of what X is: rank 1 at most. A sentence of rank 1 or 2
    carrying a caveat ("A Parser instance contains state ... and should not be used concurrently",
    "X can only be used for ...") ranks 0: a warning about X, not what it is or does."""
    if text.rstrip().endswith(("?", "\uff1f")):
        return 0  # "Does the subsystem use a patchwork instance?": a checklist's question
    rank = _subject_rank(needles, concept, text)
    if rank >= 2:
        start = _ARTICLE.match(text).end()
        rest = (text.lower() if concept else text)[start:]
        needle = next((n for n in needles if rest.startswith(n)), "")
        if needle and _find(rest[len(needle) :], [needle.lower() if concept else needle]):
            return 1
        if needle and _names_itself(needle, rest[len(needle) :]):
            return 0  # "attach_type is the program's attach type.": the name's own words, nothing more
        if needle and _JUDGEMENT.match(rest[len(needle) :].removeprefix("()")):
            return 1
        if concept and needle and not has_cjk(text):
            rank = min(rank, _general_definition_rank(text[start + len(needle) :]))
            singular = re.match(r"\s+is\b", rest[len(needle) :])
            if " " not in needle and singular and text[:start].strip().lower() == "the":
                # "The parameter is the value to be added", "The measurement is a signature of
                # ...": one word with "the" is the one this passage means, not the general term
                # (the linux-doc judge failed both titles as generic words); a plural ("The
                # photons are ...") speaks of the kind
                rank = min(rank, 2)
    if rank in (1, 2) and _CAVEAT.search(text):
        return 0
    if rank in (1, 2) and _CONTINUES_CONTEXT.match(_after_name(needles, concept, text)):
        return 0  # "The coroutine then has a chance ...", "X also keeps ...": a sequel of another sentence
    if rank >= 1 and _POINTS_ELSEWHERE.search(text):
        return 0  # "... as described in the next section": what X is, another part of the document says
    if rank >= 1 and _POINTS_BACK.search(text):
        return rank - 1  # "... the most popular way to do it": "it" is another sentence's
    if rank <= 2 and _DEMONSTRATIVE.search(text):
        return 0  # "iomap adds more to this mix.", "X returns this on ...": another sentence says what
    if rank and _UNRESOLVED.match(text):
        return 0  # "This has implications for devices such as UARTs": what "this" is, another sentence says
    return rank


#: A sentence that hands the reader to another part of its document ("the following parameters",
#: "as described in the next section", "listed below"): quoted alone, that part is not there (the
#: linux-doc judge failed "mount trap" and "mv88e6xxx" on such leads).
_POINTS_ELSEWHERE = re.compile(
    r"(?i)\b(?:the\s+following|as\s+follows|(?:next|previous|following|later)\s+(?:section|chapter|paragraph)s?"
    r"|(?:described|shown|listed|explained|given)\s+(?:below|above|later)|see\s+(?:below|above))\b"
)


def _names_itself(needle: str, after: str) -> bool:
    """Whether ``after`` (the words after the name) is only "is/are the/a <someone's> <the name's
    own words>": "attach_type is the program's attach type." defines nothing."""
    m = re.match(r"^\s+(?:is|are)\s+(?:a|an|the)\s+(?:[\w-]+'s\s+)?([\w\s-]+?)\s*[.!?]?$", after)
    if m is None:
        return False
    words = re.sub(r"[_\-\s]+", " ", needle).lower().split()
    return m.group(1).lower().split() == words


#: A definite or indefinite noun phrase after "is/are": the predicate of "X is a/the ...".
_PREDICATE = re.compile(r"^\s+(?:is|are)\s+(a|an|the|one)\s+((?:[\w-]+\s+){0,3}?[\w-]+)(?:\s+(\S+)(?:\s+(\S+))?)?")
#: An object pronoun closing a clause ("the simplest way to do it, but ..."): what it stands
#: for is in another sentence, so quoted as a lead it says nothing.
_POINTS_BACK = re.compile(r"\b(?:do|does|did|doing|use|using|with|to|of|about|for)\s+(?:it|this|that|them)\s*[,.;:!?)]")


#: "are buttons added dynamically using the add method": the predicate is what one named call
#: makes, so the "definition" holds for that one use only.
_ONE_INSTANCE = re.compile(
    r"^\s+(?:is|are)\s+(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){1,3}?[a-z]+ed\b(?:\s+[a-z]+ly)?\s+"
    r"(?:with|using|by|via|through|from)\s+(?:the\s+\w+\s+(?:method|function|call|command|class)\b|`?\w+\(\))"
)


#: "is None", "are True", "is -1", "is zero": the value a variable or parameter holds.
_LITERAL_VALUE = re.compile(r"\s+(?:is|are|was|were)\s+(?:not\s+)?(?:None|True|False|NULL|null|zero|-?\d)\b")


def _general_definition_rank(after: str) -> int:
    """How generally the words ``after`` a concept's name define it, capping ``_lead_rank``: 3
    for "is a/an <noun> ...", "is defined as", "refers to", "X, a <noun>, ..."; 2 for what is
    weaker than a definition, "consists of ..." (its parts), "is one of ...", while "Parallax is
    the apparent shift of ..." defines; 0 for what one named call makes ("Subwidgets are the
    buttons added with the add method": the particular ones one document means; the demo's judges
    failed it as the general term's lead); 1 for a
    definition scoped to a named case ("Conjugate is a no-op for Reals": a property of X for
    Reals) and for an appositive naming one instance ("The base class, addbase, defines ...":
    about addbase, not base classes)."""
    if re.match(r"\s*,\s+(?!(?:a|an|the)\s)", after):
        return 1
    if _ONE_INSTANCE.match(after):
        return 0  # "Subwidgets are the buttons added with the add method": the ones of one call
    if re.search(r"\b(?:this|these|those)\s+[a-z]", after):
        return 2  # "The DFA number is the index into this list": which list, another sentence says
    if re.match(r"\s+consists?\s+of\b", after, re.IGNORECASE):
        return 2
    if re.match(r"\s+(?:is|are)\s+a\s+(?:little|lot|bit|few|couple)\b", after):
        return 1  # "Maximum filesystem size is a little over 256MB.": a quantity, not what it is
    m = _PREDICATE.match(after)
    if m is None:
        return 3
    following, then = m.group(3) or "", m.group(4) or ""
    if following.lower() in ("for", "in", "on", "with") and then[:1].isupper():
        return 1
    if m.group(1) == "one" and following == "of":
        return 2  # "X is one of <, <=, ...": a member of a list, not what X is
    return 3


def _subject_rank(needles: list[str], concept: bool, text: str) -> int:
    """``_lead_rank`` before the circularity and caveat checks."""
    if len(text) > DESCRIPTION_CHARS or not _SENTENCE_END.search(text):
        return 0
    if has_cjk(text):
        return max((cjk.definition_rank(n, text) for n in needles), default=0) * 3 // 2
    if len(text.split()) < 4:
        return 0
    rest = text[_ARTICLE.match(text).end() :]
    probe = rest.lower() if concept else rest
    best = 0
    for needle in needles:
        if not probe.startswith(needle) or not _bounded(probe, 0, len(needle)):
            continue
        after = rest[len(needle) :]
        if not concept:
            after = after.removeprefix("()")  # "kmalloc() returns ...": the call is the name
        if concept and _continues(needle, after):
            continue  # "A configuration file consists of" is about the file, not "configuration"
        named = not concept and not _code_like(needle)
        if not concept and re.match(r"\s+[A-Z]", after):
            continue  # "USB Control Request can be logged ...": a longer name, not "USB controls"
        if named and _PART_OF_NAMED.match(after):
            continue  # "The Ethernet driver is bound to ...": about a driver, not about Ethernet
        kind = None if concept else _KIND_NOUN.match(after)
        if kind:
            after = after[kind.end() :]  # "The DSA framework is not involved ...": as "DSA is not ..."
        gloss = _GLOSS.match(after)
        if gloss and not _DEFINES_WHAT.match(after):
            # "SMBus (System Management Bus) is based on ...": the gloss is the name's own, read as
            # "SMBus is based on ..." (a definition after it, "X (...) is a ...", is read whole)
            after = after[gloss.end() :]
        if _COMPARES.match(after) or _CONTRAST.match(after):
            continue  # "Enhanced IBRS is more efficient than retpoline", "SIOV, in contrast, ...": X beside Y
        if _REQUIREMENT.match(after):
            continue  # "GITS_CREADR must be restored before ...": a rule about X, not what X is
        if not needle.endswith("s") and _BASE_VERB.match(after):
            continue  # "Debugfs support, to check ...": a noun phrase; a singular X "supports"
        if _DEFINES_WHAT.match(after):
            return 3
        plural = re.match(r"\s+are\s+([a-z-]+)(?:\s+([a-z]+))?\b", after)
        if plural and (lexicon.plural_noun(plural.group(1)) or lexicon.plural_noun(plural.group(2) or "")):
            return 3  # "Photons are particles of light", "Rotary encoders are small devices"
        passive = re.match(r"\s+(?:is|are|was|were)\s+(?:not\b|(?:[a-z]+ly\s+)?([a-z]+))", after)
        if passive and (
            passive.group(1) is None or passive.group(1).endswith("ed") or lexicon.inflected_verb(passive.group(1))
        ):
            # "X is set to ...", "X are rarely used", "X is not ...": what happens to X, not what it is.
            # Only "X is used/designed/meant to ..." says what X is for; a lead like "X is interrupted
            # by ..." or "The GIL is not released" tells one event or caveat, so it ranks 0 and another
            # sentence leads the page, or there is no page
            # "used to/for/as" says what X is for; "is only used by custom drivers" who uses it
            purpose = passive.group(1) in PURPOSE_PARTICIPLES and bool(_FOR_WHAT.match(after[passive.end() :]))
            # "Oskar Venn was born in Bergen", "The institute was founded in 1950": of a person, a
            # place or an organisation, the central fact a reader looks up first
            central = named and passive.group(1) in CENTRAL_PARTICIPLES
            # of a term, too, "The scrollbars are adjusted so that ...", "The keybindings are
            # loaded in ..." tell what is done to it somewhere, which a reader of its page cannot
            # place (the demo's judges failed such leads): a passive leads only when it says what
            # X is for, or is a central fact of a named thing
            best = max(best, 1 if purpose or central else 0)
        elif (
            named
            and (central := re.match(r"\s+(?:is|are|was|were)\s+([a-z]+)\b", after))
            and (central.group(1) in CENTRAL_PARTICIPLES)
        ):
            best = max(best, 1)  # "Oskar Venn was born in Bergen ...": "born" is an adjective too
        elif _LITERAL_VALUE.match(after):
            continue  # "Charset is None for non-encoded parts": the value a variable holds, not X
        elif concept and re.match(r"\s*(?:was|were)\b", after):
            continue  # "The subchannel was status pending ...": one past event (an error case) of a term
        elif re.match(r"\s*(?:is|are|was|were)\b", after):
            # "UUID objects are immutable", "The special characters are:": a property, not a definition;
            # of a named thing that is no code ("HPET is quite complex", "IOMMU is also required ..."),
            # it tells a reader who does not know the thing nothing at all
            if not _JUST_ADJECTIVE.match(after):  # "walk_component() is even easier.": no more than a quality
                best = max(best, 1 if concept or _code_like(needle) else 0)
        elif _DEFINES.match(after) and not re.match(r"\s+[a-z]+\s+(?:for|of|in|on|with|to)\b", after):
            if named and _PROPERTY_VERB.match(after):
                continue  # "Hyper-V supports receive side scaling": one property of a named thing
            best = 2  # "Weak reference support for Python" is a noun phrase, not "X supports"
        else:
            follow = re.match(r"\s*(?:\([^)]{1,80}\)\s*)?([A-Za-z]+)(?:\s+([A-Za-z]+))?", after)
            word = follow.group(1).lower() if follow else ""
            then = (follow.group(2) or "") if follow else ""
            pos = lexicon.lemmas(word)
            # "X returns the ..." is a verb; "Configuration functions for ..." a plural noun.
            verb = word.endswith("s") and "VERB" in pos and ("NOUN" not in pos or _object_follows(then))
            if word in RULE_MODALS:
                continue  # "sev_fd should point to ...": a rule for the caller, not what sev_fd is
            if word in _EVENT_MODALS:
                continue  # "Coroutines will be wrapped in Tasks": what will happen to X, not what X is
            if (verb or word in _MODALS) and (concept or _code_like(needle)):
                # "kmalloc returns ...": what code does is what it is. Of a named thing that is no
                # code, "The TMP108 has ...", "Andrew Morton has suggested ...", "The BHB can still
                # influence ..." tell what it has, did or may do, never what it is
                best = max(best, 1)
            elif named and word in CENTRAL_VERBS:
                best = max(best, 1)  # "Ada Lovelace wrote ...", "Kestrel Labs develops ...": a central fact
    if not best and not concept:
        best = max((_central_rank(n, text) for n in needles if not _code_like(n)), default=0)
    return best


#: An introductory phrase before a sentence's subject ("From the hardware perspective, ", "In Linux, ").
_INTRO = re.compile(
    r"^(?:(?:From|In|On|At|For|With|Under|Since|As|After|Before|During|Unlike|Like|Traditionally|Historically"
    r"|Typically|Generally|Today|Currently|Originally|Initially|Basically|Essentially|Simply\s+put)\b[^,;:]{0,60},\s+)?"
    r"(?:(?:the|a|an)\s+)?",
    re.IGNORECASE,
)
#: Nouns naming the kind of a named thing's part or instance ("a NUMA system", "the USB bus").
_KIND_WORDS = (
    r"(?:system|subsystem|protocol|driver|bus|interface|core|framework|standard|specification|project|device"
    r"|layer|stack|architecture|controller|machine|node|platform|tool|format|language|library|service)s?"
)


#: Nouns after a named thing that name the thing as a whole, not a part or an instance of it ("the
#: DRM layer", "the USB subsystem"; not "the Ethernet driver", "the CTI interface").
_WHOLE_WORDS = r"(?:layer|subsystem|core|framework|infrastructure|stack|project|architecture|standard|protocol)"
#: What such a whole does, said of it ("provides several services"); "is not involved" says nothing.
_WHOLE_VERBS = (
    r"(?:provides|implements|manages|handles|offers|allows|enables|defines|represents|controls|exposes|exports"
    r"|supports|maintains|abstracts|describes|specifies)"
)


def _central_rank(needle: str, text: str) -> int:
    """1 when ``text`` states a central fact about the named thing ``needle`` without opening
    with it: an instance of it defined after an introductory phrase ("From the hardware
    perspective, a NUMA system is a computer platform ..."), the kind it is one of ("hotpluggable
    busses like USB", "USB and other buses": Hearst, 1992), or an apposition ("..., Linux, a
    clone of Unix, ..."); else 0. A hub name no sentence defines is led by such a fact
    (``wiki.coverage``), not by a sentence about something else it modifies."""
    if needle not in text:
        return 0
    rest = text[_INTRO.match(text).end() :]
    if rest.startswith(needle) and (_CENTRAL_KIND.match(rest, len(needle)) or _CENTRAL_WHOLE.match(rest, len(needle))):
        return 1  # "a NUMA system is a computer platform ...", "The DRM layer provides several services ..."
    start = text.find(needle)
    while start >= 0:  # patterns precompiled and anchored at the name: no regex built per name
        end = start + len(needle)
        bounded = (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_-")) and (
            end == len(text) or not (text[end].isalnum() or text[end] in "_-")
        )
        if bounded and (
            _HEARST_BEFORE.search(text[max(0, start - 60) : start])
            or _HEARST_AFTER.match(text, end)
            or _APPOSITION.match(text, end)
        ):
            return 1
        start = text.find(needle, start + 1)
    return 0


_CENTRAL_KIND = re.compile(rf"\s+{_KIND_WORDS}\s+(?:is|are)\s+(?:a|an|the|one)\s")
_CENTRAL_WHOLE = re.compile(rf"\s+{_WHOLE_WORDS}\s+{_WHOLE_VERBS}\b")
#: Hearst's patterns (1992) around a name: "busses like USB", "filesystems such as the ext4"
#: before it, "USB and other buses" after it; and an apposition after it ("Linux, a clone of Unix,").
_HEARST_BEFORE = re.compile(r"\b[a-z]{3,}s\s+(?:such\s+as|like|including)\s+(?:the\s+)?$")
_HEARST_AFTER = re.compile(r"\s+(?:and|or)\s+other\s+[a-z]{3,}s\b")
_APPOSITION = re.compile(r",\s+(?:a|an|the)\s+[^,;]{3,80},")


#: What may stand between a name and its verb: a parenthesis or an apposition ("KVM (the
#: kernel-based virtual machine) is ...", "Ada, a mathematician, wrote ...").
_BETWEEN = re.compile(r"\s*(?:\([^)]{0,80}\)\s*)?(?:,[^,]{1,80},\s*)?([A-Za-z]+)")


#: What a negated verb's contraction leaves before "'t" ("doesn't", "isn't", "can't", "won't").
_NEGATED = frozenset(
    {"doesn", "don", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven", "hadn", "can", "couldn", "won"}
    | {"wouldn", "shouldn", "mustn"}
)


def _object_follows(then: str) -> bool:
    """Whether word ``then`` (as written), after a word both a noun's plural and a verb's -s form,
    makes that word the verb: a determiner or the like (``AFTER_VERB``: "Workqueue guarantees
    that"), or a name no dictionary knows ("Kdump uses kexec to ...", "sysfs exports VFIO ..."),
    where "CPU loads vary" keeps its noun."""
    low = then.lower()
    return low in AFTER_VERB or (len(low) > 1 and not lexicon.dictionary_word(low))


def _compound_head(after: str) -> str:
    """``after`` past up to two lower-case nouns that make the name a compound's modifier
    ("Bramble archive format stores ...": " stores ..."), unchanged when none or a verb follows."""
    rest = after
    for _ in range(2):
        m = re.match(r"\s+([a-z]+)\b", rest)
        if m is None or m.group(1) in FINITE or "NOUN" not in lexicon.lemmas(m.group(1)):
            break
        if m.group(1).endswith("s") and "VERB" in lexicon.lemmas(m.group(1)):
            break  # "Bramble stores ...": the verb itself
        rest = rest[m.end() :]
    return rest


def _is_subject(needles: list[str], concept: bool, text: str, compound: bool = False) -> bool:
    """Whether sentence ``text`` has the name (one of ``needles``, as ``_subject_rank`` reads
    them) as its subject: it opens with it, after an article, and a verb follows ("KVM is ...",
    "Oskar Venn studied ...", "sysfs exports ..."). How many of a document's sentences do is how
    much the document talks about the name (``wiki.coverage.NAME_MIN_SUBJECT``). With
    ``compound``, read leniently, as a quote on its page is: a named thing modifying the subject
    counts ("The Bramble archive format stores ..."), and a word both noun and verb after it is its
    verb ("The frobnicator unit turns input ...")."""
    if has_cjk(text):
        opened = text.lstrip("「『“（(")
        return any(opened.startswith(n) and len(opened) > len(n) for n in needles)
    if _CONTINUES_CONTEXT.match(_after_name(needles, concept, text)):
        return False  # "The readline module is also ...": a sequel of another sentence, about that one's subject
    rest = text[_ARTICLE.match(text).end() :]
    probe = rest.lower() if concept else rest
    for needle in needles:
        if not probe.startswith(needle) or not _bounded(probe, 0, len(needle)):
            continue
        after = rest[len(needle) :].removeprefix("()")
        # of a named thing or a jargon term ("The procfs interface is ..."), not of a general term
        # ("The memory interface" is no sentence about memory)
        kind = None if concept and lexicon.dictionary_word(needle.split()[-1]) else _KIND_NOUN.match(after)
        if kind:
            after = after[kind.end() :]  # "The Bramble format keeps ...": as "Bramble keeps ..."
        elif compound and not concept:
            after = _compound_head(after)  # "The Bramble archive format stores ..."
        m = _BETWEEN.match(after)
        word = m.group(1).lower() if m else ""
        if word in FINITE or word in _MODALS or lexicon.inflected_verb(word):
            return True
        if m and word in _NEGATED and after[m.end() : m.end() + 3] in ("'t ", "’t "):
            return True  # "vmalloc doesn't support GFP_NOFS ...": a verb, negated
        pos = lexicon.lemmas(word)
        then = re.match(r"\s*([A-Za-z]*)", after[m.end() :]).group(1) if m else ""
        if word.endswith("s") and "VERB" in pos and ("NOUN" not in pos or _object_follows(then) or compound):
            return True  # "Workqueue guarantees that ...": a verb, not "workqueue guarantees" the noun
        if needle.endswith("s") and word in pos.get("VERB", ()) and ("NOUN" not in pos or compound):
            return True  # "Coroutines run inside ...": a plural's verb in its base form
    return False


def _code_like(name: str) -> bool:
    """Whether ``name`` is written like code (``nr_to_reclaim``, ``kmalloc()``, ``Queue.get``,
    ``setEncoding``): what it does is what it is. An acronym or a proper name (HPET, IOMMU) is not."""
    return bool(re.search(r"[_.()]|[a-z][A-Z]", name)) or (name[:1].islower() and _IDENT.match(name) is not None)


#: "X is more efficient than Y", "X is the same as Y", "X is being implemented", "X is still/now
#: ...": a comparison or a status of X, which tells a reader who does not know X nothing of what
#: it is (the linux-doc judge failed "Enhanced IBRS", "V4L2" and "IIC hardware" on such leads).
_COMPARES = re.compile(
    r"^\s+(?:is|are)\s+(?:not\s+)?(?:[a-z]+ly\s+)?(?:(?:the\s+)?same\s+as\b|similar\s+to\b|identical\s+to\b|being\b"
    r"|still\b|now\b|currently\b|(?:much\s+|far\s+)?(?:more|less|[a-z]{2,}er)\s+(?:[a-z-]+\s+){0,2}?than\b"
    r"|(?:even\s+|much\s+|far\s+)?(?:easier|harder|simpler|faster|slower|better|worse|cheaper|safer)\b"
    r"|(?:by\s+far\s+)?the\s+(?:most|least|best|worst|simplest|easiest|fastest|slowest|largest|smallest|biggest"
    r"|highest|lowest|greatest|preferred|recommended)\b)",
    re.IGNORECASE,
)

#: Kind nouns after a name that is no code which make the sentence about a part of the named
#: thing or a thing for it ("the Ethernet driver", "the CTI interface", "the USB subsystem"); after
#: a code name they name the thing itself ("the e1000 driver", "the KF_KPTR_GET flag"), and
#: "the Python language" or "the Rust project" is the thing itself either way.
_PART_OF_NAMED = re.compile(
    r"\s+(?:driver|drivers|subsystem|interface|api|module|file|service|system|command|option|flag|flags|"
    r"attribute|field|parameter|call|structure|struct|object|type|class|function|method|macro|variable|"
    r"constant|support|core|layer|stack|code|device|devices|controller|port|bus|header|tree|node)\b",
    re.IGNORECASE,
)
#: A defining verb in its base form right after a singular name: the name is a modifier
#: ("Debugfs support", "DMA control"), not the subject of the verb.
_BASE_VERB = re.compile(
    r"\s+(?:provide|implement|represent|contain|define|describe|allow|enable|manage|handle|store|hold|"
    r"offer|support|return|create|control)\b"
)
#: Verbs whose "X <verb>s ..." of a named thing that is no code tells one property, not what it is
#: ("Hyper-V supports receive side scaling", "The TMP108 contains ..."); of code ("kmalloc
#: returns ...") what it does is what it is.
_PROPERTY_VERB = re.compile(
    r"\s+(?:\([^)]{0,80}\)\s*)?(?:supports|contains|holds|stores|handles|gives|returns|creates)\b", re.IGNORECASE
)

#: "X is (even) easier.", "X are quite generic": after "is/are" only an adjective, maybe with an
#: adverb and a short complement: a quality of X, never what X is.
_JUST_ADJECTIVE = re.compile(
    r"^\s*(?:\([^)]{0,80}\)\s*)?(?:is|are|was|were)\s+(?:(?:very|quite|rather|fairly|pretty|even|much|so|too|"
    r"also|really|extremely|relatively)\s+)*[a-z-]+(?:\s+(?:to|for|with|in)\s+\w+)?\s*[.!]?$"
)
#: A demonstrative noun phrase ("this mix", "these cases"): the sentence leans on another one.
_DEMONSTRATIVE = re.compile(
    r"\b(?:this|these|those|such)\s+(?!as\b)[a-z]|\b(?:this|that)\s+(?:on|in|for|when|if|to|with|by|as|from)\b"
    r"|\b(?:here|above|below)\s*[,.;]"
)

#: "X, in contrast, ...", "X, however, ...": the sentence reads only beside the one before it.
_CONTRAST = re.compile(
    r"^\s*,\s*(?:in\s+contrast|by\s+contrast|however|instead|on\s+the\s+other\s+hand|too|also|likewise"
    r"|similarly|though|then|in\s+turn)\b",
    re.IGNORECASE,
)
#: A parenthesised gloss right after a name: its expansion, its unit or its number ("(System
#: Management Bus)", "(bit 0)").
_GLOSS = re.compile(r"\s*\([^)]{1,80}\)(?=\s)")
#: A kind noun after an entity's name ("the DSA framework", "the SMB3 protocol"): the sentence is
#: about the named thing, read on after the noun.
_KIND_NOUN = re.compile(rf"\s+(?:{_NOUNS})\b(?!\s*,)", re.IGNORECASE)
#: "X must be restored ...", "X (bit 0) should be initialised ...", "X has been called on ...": what
#: must happen or has happened to X (a rule or an error case), never what X is; "X can be used
#: to ..." says what it is for and stays.
_REQUIREMENT = re.compile(
    r"^\s*(?:\([^)]{0,80}\)\s*)?(?:must|should|shall|has|have|had|needs?\s+to)\s+(?:not\s+|also\s+|only\s+)?"
    r"(?:be|been)\s+(?!used\b|designed\b|meant\b|intended\b)(?:[a-z]+ly\s+)?[a-z]+(?:ed|en|wn|ne)\b"
)


def _describe(concept: bool, needles: list[str], mentions: list[_Sentence]) -> tuple[str, int]:
    """(lead sentence, rank): the best-ranked sentence (``_lead_rank``) among ``mentions``, the
    first of equals; else ("", 0). Never a made-up placeholder such as "X is a function.": an
    item no sentence describes is not a page (it stays a mention of its summary)."""
    best, rank = "", 0
    for sentence in mentions:
        r = _lead_rank(needles, concept, sentence.text)
        if r > rank:
            best, rank = sentence.text, r
            if r == 3:
                break
    return best, rank


_TYPE_NOUNS = r"(?:str|int|bool|float|bytes|tuple|list|dict|set|callable|string|integer|boolean|number)"
_PARAMETER_LEAD = re.compile(
    rf"^(?:The\s+)?[^,]{{1,60}}?\s+(?:is|are)\s+(?:(?:a|an|the|one)\s+(?:[\w-]+\s+){{0,4}}?"
    rf"{_PARAMETER_NOUNS}\b|(?:a|an|the)\s+(?:optional\s+)?{_TYPE_NOUNS}\b)"
)


#: A lead saying what an argument carries: "FUNC gives the function ...", "MS specifies the time".
_PLACEHOLDER_LEAD = re.compile(r"^[A-Z]+\s+(?:gives|specifies|determines|names)\s+(?:the|a|an)\s")


def _describes_parameter(lead: str) -> bool:
    """Whether a concept's lead describes a parameter or return value of a function, not an idea:
    it opens with the name in lower case, as only code names open an English sentence ("alpha is
    the shape parameter.", "charset is the input character set"), or it calls the thing a
    parameter or a value of a type ("The fullname is a str")."""
    return (lead[:1].islower() and not has_cjk(lead)) or _PARAMETER_LEAD.match(lead) is not None
