"""Characters a human cannot see, and words that mix scripts.

Untrusted text (tool arguments, model output, thread ids) can carry characters that
render as nothing, as a plain space, or as a letter of another alphabet, so what a
reviewer reads is not what executes. `segments` splits text into what to show as is,
what to mark, and why; the inbox renders the marks (`reviews.templatetags.reviews`),
and `marked` gives plain text with markers (titles, the admin, logs).

A character is invisible (`is_invisible`, shown as `[U+XXXX]`) when it is:

- of category Cc (controls, but line feed and tab), Cf (format: bidi controls,
  zero-width characters, tag characters U+E0000-E007F), Cs, Co (private use), Cn
  (unassigned), Zl or Zp;
- of category Zs but U+0020: NBSP, U+2000-200A, U+202F, U+205F, U+3000 and the other
  spaces that look like a plain space and are not one;
- a default-ignorable code point of Unicode (listed below: variation selectors
  U+FE00-FE0F and U+E0100-E01EF, U+034F COMBINING GRAPHEME JOINER, the Hangul fillers,
  U+17B4/17B5, the Mongolian variation selectors, ...), or a character that draws
  nothing (U+2800 BRAILLE PATTERN BLANK and the others in `_BLANK`);
- a combining mark (Mn, Me) with no visible character to sit on: at the start of the
  text, after white space or after another invisible character.

A word (a run of letters, marks, digits and `. _ @ + -`, such as an e-mail address or an
identifier) mixes scripts when its letters come from more than one script and the mix is
not one of the usual ones of UTS #39's "highly restrictive" level (Latin with Han,
Hiragana and Katakana; Latin with Han and Bopomofo; Latin with Han and Hangul). In such a
word every letter outside the word's main script is marked (`confusable`), e.g. the
Cyrillic U+0430 in an otherwise Latin e-mail address. Scripts are those of RE2's Unicode tables. A
letter or digit that is a compatibility form of an ASCII one (fullwidth U+FF50,
mathematical bold U+1D429, both reading as "p") is marked the same way.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import re2

_KEEP = frozenset("\n\t")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) outside the categories above.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x115F, 0x1160),  # HANGUL CHOSEONG / JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ / AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1..16
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    (0xE0000, 0xE0FFF),  # tags, VARIATION SELECTOR-17..256, reserved
)
# Assigned, not ignorable, and still drawn as nothing at all.
_BLANK = frozenset({"\u2800", "\u3164", "\uffa0", "\u115f", "\u1160", "\U0001d159"})
_MARKS = frozenset({"Mn", "Me"})
_IDENTIFIER_PUNCTUATION = frozenset("._@+-")

# UTS #39 "highly restrictive": the combinations of scripts one word may use.
_ALLOWED_MIXES = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
_SCRIPTS = (
    "Latin", "Greek", "Cyrillic", "Armenian", "Hebrew", "Arabic", "Syriac", "Thaana",
    "Nko", "Samaritan", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil",
    "Telugu", "Kannada", "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar",
    "Georgian", "Hangul", "Ethiopic", "Cherokee", "Canadian_Aboriginal", "Ogham", "Runic",
    "Tagalog", "Khmer", "Mongolian", "Limbu", "Tai_Le", "Buginese", "Balinese", "Sundanese",
    "Lepcha", "Ol_Chiki", "Glagolitic", "Tifinagh", "Coptic", "Hiragana", "Katakana",
    "Bopomofo", "Han", "Yi", "Lisu", "Vai", "Bamum", "Javanese", "Cham", "Tai_Viet",
    "Meetei_Mayek", "Gothic", "Deseret", "Shavian", "Osmanya", "Adlam", "Osage",
)  # fmt: skip


def _script_patterns() -> tuple[tuple[str, object], ...]:
    options = re2.Options()
    options.log_errors = False
    # Common and Inherited first: letters shared by scripts (e.g. U+30FC) belong to none.
    names = ("Common", "Inherited", *_SCRIPTS)
    return tuple((name, re2.compile(rf"\p{{{name}}}", options)) for name in names)


_SCRIPT_PATTERNS = _script_patterns()


@functools.lru_cache(maxsize=4096)
def script(char: str) -> str:
    """The Unicode script of a letter (`Latin`, `Cyrillic`, ...); "" for other characters
    (digits, punctuation, marks: the Common and Inherited scripts)."""
    if not unicodedata.category(char).startswith("L"):
        return ""
    for name, pattern in _SCRIPT_PATTERNS:
        if pattern.fullmatch(char) is not None:  # type: ignore[attr-defined]
            return "" if name in ("Common", "Inherited") else name
    return unicodedata.name(char, "Unknown").split(" ")[0].title()


@functools.lru_cache(maxsize=4096)
def is_invisible(char: str) -> bool:
    """Whether a human cannot see `char` (see the module docstring; combining marks are
    judged in context by `segments`)."""
    if char in _KEEP:
        return False
    category = unicodedata.category(char)
    if category in _INVISIBLE_CATEGORIES or (category == "Zs" and char != " "):
        return True
    if char in _BLANK:
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


@dataclass(frozen=True)
class Segment:
    """A piece of text: `kind` "text" (show it), "invisible" (show `[U+XXXX]` instead) or
    "confusable" (show it, marked); `note` says what the character is."""

    kind: str
    text: str
    note: str = ""


def _name(char: str) -> str:
    return unicodedata.name(char, "unassigned or control character")


def _invisible_runs(text: str) -> Iterator[Segment]:
    start = 0
    previous_visible = False
    for index, char in enumerate(text):
        hidden = is_invisible(char) or (
            unicodedata.category(char) in _MARKS and not previous_visible
        )
        if hidden:
            if start < index:
                yield Segment("text", text[start:index])
            yield Segment("invisible", char, _name(char))
            start = index + 1
        previous_visible = not hidden and not char.isspace()
    if start < len(text):
        yield Segment("text", text[start:])


def _is_word_char(char: str) -> bool:
    return char in _IDENTIFIER_PUNCTUATION or unicodedata.category(char)[0] in "LMN"


def _words(text: str) -> Iterator[tuple[int, int]]:
    start = None
    for index, char in enumerate(text):
        if _is_word_char(char):
            if start is None:
                start = index
        elif start is not None:
            yield start, index
            start = None
    if start is not None:
        yield start, len(text)


def mixed_script_letters(word: str) -> dict[int, str]:
    """The positions of the letters of `word` outside its main script, with a note, when
    the word mixes scripts (see the module docstring); {} otherwise."""
    scripts = [script(c) for c in word]
    used = Counter(s for s in scripts if s)
    if len(used) < 2 or any(set(used) <= allowed for allowed in _ALLOWED_MIXES):
        return {}
    main = max(used, key=lambda s: (used[s], s == "Latin"))
    return {
        index: f"{_name(word[index])} ({name}) in a {main} word"
        for index, name in enumerate(scripts)
        if name and name != main
    }


def _compatibility_letters(word: str) -> dict[int, str]:
    """Letters and digits that are a compatibility form of an ASCII one (fullwidth,
    mathematical alphanumerics, superscripts): they read as that character."""
    found = {}
    for index, char in enumerate(word):
        if char.isascii() or unicodedata.category(char)[0] not in "LN":
            continue
        plain = unicodedata.normalize("NFKC", char)
        if plain != char and plain.isascii():
            found[index] = f"{_name(char)} (reads as {plain!r})"
    return found


def _confusable_runs(piece: str) -> Iterator[Segment]:
    odd: dict[int, str] = {}
    for start, end in _words(piece):
        word = piece[start:end]
        odd.update({start + i: note for i, note in _compatibility_letters(word).items()})
        odd.update({start + i: note for i, note in mixed_script_letters(word).items()})
    if not odd:
        yield Segment("text", piece)
        return
    start = 0
    for index in sorted(odd):
        if start < index:
            yield Segment("text", piece[start:index])
        yield Segment("confusable", piece[index], odd[index])
        start = index + 1
    if start < len(piece):
        yield Segment("text", piece[start:])


def segments(text: str) -> list[Segment]:
    """`text` split into plain text, invisible characters and confusable letters."""
    found: list[Segment] = []
    for segment in _invisible_runs(text):
        if segment.kind == "text":
            found.extend(_confusable_runs(segment.text))
        else:
            found.append(segment)
    return found


def has_hidden(text: str) -> bool:
    """Whether `text` has an invisible character or a word that mixes scripts."""
    return any(segment.kind != "text" for segment in segments(text))


def marked(text: str) -> str:
    """Plain text with every invisible character replaced by `[U+XXXX]` (for a `title`
    attribute, the admin, a log line: places that cannot carry markup)."""
    return "".join(
        f"[U+{ord(s.text):04X}]" if s.kind == "invisible" else s.text for s in segments(text)
    )


__all__ = [
    "Segment",
    "has_hidden",
    "is_invisible",
    "marked",
    "mixed_script_letters",
    "script",
    "segments",
]
