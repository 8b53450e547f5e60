"""Usernames: the one form in which two names are the same name, and names that only look alike.

``username_normal``: NFKC and case folding. ``ｓec_dave`` (fullwidth) and ``Sec_Dave`` are
``sec_dave``: sign-in finds the account by it, the sign-in throttle counts attempts under it, and
sign-up and the admin refuse a second account with it.

Look-alikes: a skeleton per Unicode TS #39, from the confusable_homoglyphs data.

Two names with the same skeleton read the same to a person (Latin ``admin`` and ``аdmin`` with
a Cyrillic ``а``; ``bill`` and ``biII``; ``modern`` and ``rnodern``), so the second one could
pass itself off as the first on public pages. ``confusable_homoglyphs`` ships the Unicode
confusables table (confusables.txt) as, for each character, the characters it is confusable
with: a source character lists its prototype, a prototype lists its sources. The skeleton maps
every character to its prototype, case-folds, and maps again (a capital's lower case may
itself be confusable).
"""

from __future__ import annotations

import functools
import unicodedata

from confusable_homoglyphs import confusables

_LEFT_TO_RIGHT_MARK = "\u200e"  # the table wraps right-to-left characters in these


def _homoglyphs(character: str) -> list[str]:
    # is_confusable with greedy=True reports, for each confusable character, this same list.
    return [entry["c"].strip(_LEFT_TO_RIGHT_MARK) for entry in confusables.confusables_data.get(character, ())]


@functools.lru_cache(maxsize=8192)
def _prototype(character: str) -> str:
    found = _homoglyphs(character)
    if len(found) != 1:
        return character  # a prototype (it lists its sources), or confusable with nothing
    target = found[0]
    if _homoglyphs(target) == [character]:
        return min(character, target)  # a pair that lists each other: either one stands for both
    return target


def _mapped(text: str) -> str:
    return "".join(_prototype(character) for character in text)


def username_normal(username: str) -> str:
    """The name ``username`` is the same name as: NFKC, case-folded (NFKC again, as folding can
    undo it), surrounding spaces dropped."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username.strip()).casefold())


def username_skeleton(username: str) -> str:
    """What ``username`` looks like: equal skeletons mean names a reader cannot tell apart."""
    text = unicodedata.normalize("NFKC", username)
    return unicodedata.normalize("NFKC", _mapped(_mapped(text).casefold()))
