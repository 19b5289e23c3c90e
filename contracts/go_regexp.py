"""Go's regular expressions as kiam v4.2 compiles them, read next to Python's `re`, which this
project checks them with.

kiam compiles two user-supplied values with Go's `regexp.Compile`: the agent's
`--allow-route-regexp` (kingpin's `RegexpVar`, cmd/kiam/agent.go: the agent exits at start on one
that does not compile) and a namespace's `iam.amazonaws.com/permitted` (pkg/server/policy.go: every
pod of the namespace is then refused). Go's syntax is RE2's (package regexp/syntax); Python reads
most of it the same way, but not all of it, in both directions:

- `refused`: constructs Python compiles and Go's parser refuses (lookarounds, backreferences,
  atomic groups, possessive repeats, conditionals, comments, `\\Z`, flags other than `imsU`,
  escapes such as `\\u`, repeat counts above 1000). A check that only asks Python would let them
  through, and kiam would fail on them.
- `read_otherwise`: constructs Go compiles that Python refuses or reads differently (`\\z`,
  `\\pL`, `\\Q...\\E`, `[[:alpha:]]`, `(?U)`, `\\x{41}`, a two-digit octal `\\12`, `{,3}`). Python
  cannot match them as kiam does.

Nothing here compiles Go: the scanner below walks the expression the way Go's parser does
(regexp/syntax/parse.go of the Go kiam is built with) far enough to find those constructs, and
leaves every other syntax error to Python's compiler, which refuses the same malformed input
(unbalanced parentheses, a reversed range, a repeat of nothing).
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from dataclasses import dataclass
from typing import NoReturn

# kiam v4.2's image is built `FROM golang:1.15.15` (Dockerfile at tag v4.2): its regexp/syntax is
# the one that matters. Go 1.22 later added `(?<name>...)`; 1.15 refuses it.
GO_VERSION = "1.15.15"
# regexp/syntax doc.go: "The counting forms x{n,m}, x{n,}, and x{n} reject forms that create a
# minimum or maximum repetition count above 1000" (parse.go applies it to nested counts too).
MAX_REPEAT = 1000
# The flags a `(?flags)` or `(?flags:re)` group may set or clear (doc.go, "Grouping").
FLAGS = frozenset("imsU")
# The ASCII classes `[[:name:]]` (doc.go, "ASCII character classes"); `[:^name:]` negates one.
POSIX_CLASSES = frozenset(
    {
        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
        "space", "upper", "word", "xdigit",
    }
)  # fmt: skip
# Escapes that stand for a class: Perl's (doc.go, "Perl character classes").
PERL_CLASSES = frozenset("dDsSwW")
# Single-character C escapes (doc.go, "Escape sequences"); Go has no `\b` backspace.
C_ESCAPES = frozenset("afnrtv")
# Zero-width escapes outside a class (doc.go, "Empty strings"); `\z` is Go-only (below).
EMPTY_ESCAPES = frozenset("AbB")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
# Go's counted repeat: no leading zeros, no missing minimum (parse.go, parseRepeat/parseInt).
_GO_REPEAT = re.compile(r"\{(0|[1-9][0-9]*)(,(0|[1-9][0-9]*)?)?\}")
# Python's: either count may be missing or have leading zeros (re/_parser.py); `{}` is literal.
_PYTHON_REPEAT = re.compile(r"\{[0-9]*(,[0-9]*)?\}")

REFUSED = "uses {}, which Go's regexp (kiam's) does not compile"
READ_OTHERWISE = "uses {}, which this check (Python's re) does not read as Go does"
NOT_A_REGEXP = "is not a regular expression ({})"


@dataclass(frozen=True)
class Construct:
    """One piece of an expression, as written, and what it is."""

    kind: str
    text: str
    hint: str = ""
    """What to write instead, where there is a Go spelling."""

    def __str__(self) -> str:
        return f"{self.kind} `{self.text}`" + (f" ({self.hint})" if self.hint else "")


def refused(expression: str) -> Construct | None:
    """The first construct of `expression` Go's regexp refuses to compile, or None."""
    return _scan(expression).refused


def read_otherwise(expression: str) -> Construct | None:
    """The first construct Go compiles that Python's re refuses or reads differently, or None
    (only meaningful when `refused` found nothing)."""
    return _scan(expression).otherwise


def compile_problem(expression: str) -> str | None:
    """Why kiam could not compile `expression`, as a phrase following the value ("'x' uses ..."),
    or None.

    Go's refusals first; then Python's compiler stands in for Go's on what both refuse. Where
    Python cannot read Go-only syntax (`\\pL`, `\\Q`, `(?U)`), that is named instead: the value
    may be valid, but this check cannot tell, so it refuses rather than guess.
    """
    scan = _scan(expression)
    if scan.refused is not None:
        return REFUSED.format(scan.refused)
    try:
        python_pattern(expression)
    except (re.error, ValueError) as error:
        if scan.otherwise is not None:
            return READ_OTHERWISE.format(scan.otherwise)
        return NOT_A_REGEXP.format(error)
    return None


# Remembered per expression: a plan checks each namespace's permitted expression against every
# application of the namespace, so without it the scan ran once per pair (issue 39: 60,124 scans,
# 36 of 45 s, for 250 applications). `re.compile`'s own cache is keyed by the translated text,
# which is what the scan produces.
@functools.cache
def python_pattern(expression: str) -> re.Pattern[str]:
    """`expression` compiled by Python as close to Go as Python reads it: Go's `\\z` (end of
    text) as Python's `\\Z`, and `\\d`, `\\w`, `\\s`, `\\b` ASCII-only as in Go. Raises
    `re.error` (or ValueError for contradictory flags) where Python cannot compile it."""
    python = _scan(expression).python
    # Python warns that `[[` or `--` inside a class may change meaning in a future version;
    # today it reads them literally, as Go does.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(python, re.ASCII)


@dataclass(frozen=True)
class _Scan:
    """What one scan of an expression found."""

    refused: Construct | None
    otherwise: Construct | None
    python: str
    """The expression as Python writes it."""


@functools.cache
def _scan(expression: str) -> _Scan:
    """The scan of `expression`, once per expression (see `python_pattern`)."""
    scanner = _Scanner(expression).run()
    return _Scan(scanner.refused, scanner.otherwise, scanner.python)


class _RefusedError(Exception):
    """Stops the scan at the first construct Go refuses."""


class _Scanner:
    """One pass over an expression in Go's parse order.

    Tracks, per open group, the counted repeats of each item (as chains of counts from the outside
    in) because Go also refuses nested counts whose product exceeds 1000 (parse.go,
    `repeatIsValid`), and whether the previous token was a repeat, because Go refuses a repeat of
    a repeat (`a**`, and Python's possessive `a*+`).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.refused: Construct | None = None
        self.otherwise: Construct | None = None
        # Positions of Go's `\z`, which Python writes `\Z`.
        self._end_of_text: list[int] = []
        # One list per open group; an item is its repeat chains, None marks a `|`.
        self._frames: list[list[tuple[tuple[int, ...], ...] | None]] = [[]]

    @property
    def python(self) -> str:
        text = self.text
        for at in reversed(self._end_of_text):
            text = f"{text[: at + 1]}Z{text[at + 2 :]}"
        return text

    def run(self) -> _Scanner:
        with contextlib.suppress(_RefusedError):
            self._scan()
        return self

    def _refuse(self, kind: str, start: int, end: int, hint: str = "") -> NoReturn:
        self.refused = Construct(kind, self.text[start:end], hint)
        raise _RefusedError

    def _differ(self, kind: str, start: int, end: int) -> None:
        if self.otherwise is None:
            self.otherwise = Construct(kind, self.text[start:end])

    def _atom(self) -> None:
        self._frames[-1].append(())

    def _scan(self) -> None:
        text, i, n = self.text, 0, len(self.text)
        last_repeat: int | None = None  # where the previous token, if a repeat, started
        while i < n:
            repeat: int | None = None
            c = text[i]
            if c == "(":
                i = self._group(i)
            elif c == ")":
                if len(self._frames) > 1:
                    items = self._frames.pop()
                    chains = tuple(ch for item in items if item for ch in item)
                    self._frames[-1].append(chains)
                i += 1
            elif c == "|":
                self._frames[-1].append(None)
                i += 1
            elif c in "*+?":
                end = i + 2 if text.startswith("?", i + 1) else i + 1
                if last_repeat is not None:
                    self._refuse("a possessive or nested repeat", last_repeat, end)
                repeat, i = i, end
            elif c == "{" and (counted := _GO_REPEAT.match(text, i)):
                end = counted.end() + (1 if text.startswith("?", counted.end()) else 0)
                low = int(counted[1])
                high = (
                    low if counted[2] is None else (-1 if counted[3] is None else int(counted[3]))
                )
                if low > MAX_REPEAT or high > MAX_REPEAT:
                    self._refuse("a repeat count above 1000", i, counted.end())
                if 0 <= high < low:
                    self._refuse("a repeat whose minimum exceeds its maximum", i, counted.end())
                if last_repeat is not None:
                    self._refuse("a possessive or nested repeat", last_repeat, end)
                self._count(low, high, i, counted.end())
                repeat, i = i, end
            elif c == "{":
                loose = _PYTHON_REPEAT.match(text, i)
                if loose and loose[0] != "{}":
                    self._differ("a repeat Go reads as literal text", i, loose.end())
                self._atom()
                i += 1
            elif c == "[":
                i = self._class(i)
                self._atom()
            elif c == "\\":
                i = self._escape_outside(i)
            else:
                self._atom()
                i += 1
            last_repeat = repeat

    def _count(self, low: int, high: int, start: int, end: int) -> None:
        """Apply `{low,high}` (high -1: unbounded) to the last item, as Go's `repeatIsValid`
        weighs it: the maximum, or the minimum when unbounded; `{0}` ends a chain."""
        items = self._frames[-1]
        if not items or items[-1] is None:
            return  # a repeat of nothing: Python refuses it too
        weight = high if high >= 0 else max(low, 1)
        inner = items[-1] or ((),)
        chains = tuple((weight, *chain) for chain in inner)
        items[-1] = chains
        if (low >= 2 or high >= 2) and not all(_fits(chain) for chain in chains):
            self._refuse("nested repeat counts above 1000 in all", start, end)

    def _group(self, i: int) -> int:
        text, n = self.text, len(self.text)
        if not text.startswith("(?", i):
            self._frames.append([])
            return i + 1
        rest = text[i + 2 : i + 4]
        if rest.startswith("P<"):
            close = text.find(">", i)
            if close < 0:
                self._refuse("an unterminated group name", i, n)
            name = text[i + 4 : close]
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                self._refuse("a group name not of letters, digits and _", i, close + 1)
            self._frames.append([])
            return close + 1
        for prefix, kind in (
            ("P=", "a backreference"),
            ("P>", "a recursion"),
            ("<=", "a lookbehind"),
            ("<!", "a lookbehind"),
            ("<", "a named group of later Go versions"),
            ("=", "a lookahead"),
            ("!", "a lookahead"),
            (">", "an atomic group"),
            ("(", "a conditional"),
            ("#", "a comment"),
        ):
            if rest.startswith(prefix):
                self._refuse(kind, i, i + 2 + len(prefix))
        # Flags: set some, then optionally `-` and clear some, ending in `)` or `:` (parse.go,
        # parsePerlFlags).
        j, negated, saw_flag = i + 2, False, False
        while j < n:
            ch = text[j]
            j += 1
            if ch in FLAGS:
                saw_flag = True
                if ch == "U":
                    self._differ("the ungreedy flag", i, j)
            elif ch == "-" and not negated:
                negated, saw_flag = True, False
            elif ch in ":)" and (saw_flag or not negated):
                if ch == ":":
                    self._frames.append([])
                return j
            else:
                self._refuse("an unknown flag or group", i, j)
        self._refuse("an unterminated group", i, n)

    def _escape_outside(self, i: int) -> int:
        text, n = self.text, len(self.text)
        c = text[i + 1] if i + 1 < n else ""
        if c in EMPTY_ESCAPES and c:
            self._atom()
            return i + 2
        if c == "z":
            self._end_of_text.append(i)
            self._atom()
            return i + 2
        if c == "Q":
            stop = text.find("\\E", i + 2)
            end = n if stop < 0 else stop + 2
            self._differ("quoted text", i, end)
            self._atom()
            return end
        end = self._escape(i, in_class=False)
        self._atom()
        return end

    def _escape(self, i: int, *, in_class: bool) -> int:
        """One escape starting at `i` inside or outside a class, as Go's parseEscape reads it
        (plus the class escapes `\\d` and `\\p` both places share). Returns where it ends."""
        text, n = self.text, len(self.text)
        if i + 1 >= n:
            return n  # a trailing backslash: Python refuses it too
        c = text[i + 1]
        if c in PERL_CLASSES or c in C_ESCAPES:
            return i + 2
        if c in "pP":
            if text.startswith("{", i + 2):
                close = text.find("}", i + 2)
                if close < 0:
                    self._refuse("an unterminated Unicode class", i, n)
                end = close + 1
            else:
                end = min(i + 3, n)
            self._differ("a Unicode class", i, end)
            return end
        if c == "0" or (c in "1234567" and text[i + 2 : i + 3] in _OCTAL):
            end = i + 2
            while end < i + 4 and end < n and text[end] in _OCTAL:
                end += 1
            # Python reads `\12` outside a class as a backreference to group 12.
            if not in_class and c != "0" and end == i + 3:
                self._differ("a two-digit octal escape", i, end)
            return end
        if c == "x":
            if text.startswith("{", i + 2):
                close = text.find("}", i + 3)
                digits = text[i + 3 : close] if close >= 0 else ""
                if digits and all(d in _HEX for d in digits) and int(digits, 16) <= 0x10FFFF:
                    self._differ("a braced hex escape", i, close + 1)
                    return close + 1
                self._refuse("an invalid hex escape", i, (close + 1) if close >= 0 else n)
            if i + 3 < n and text[i + 2] in _HEX and text[i + 3] in _HEX:
                return i + 4
            self._refuse("an invalid hex escape", i, min(i + 4, n))
        if c.isascii() and not c.isalnum():
            return i + 2  # punctuation, space and the like stand for themselves
        if c in "0123456789":
            self._refuse("a backreference", i, i + 2)
        if c == "Z" and not in_class:
            self._refuse("Python's end-of-text escape", i, i + 2, "Go writes `\\z`")
        self._refuse("an escape", i, i + 2)

    def _class(self, i: int) -> int:
        """A `[...]` class starting at `i`; returns where it ends (or the text's end, unclosed)."""
        text, n = self.text, len(self.text)
        j = i + 1
        if text.startswith("^", j):
            j += 1
        first = True  # `]` right after `[` or `[^` is a literal
        while j < n:
            c = text[j]
            if c == "]" and not first:
                return j + 1
            first = False
            if text.startswith("[:", j) and (close := text.find(":]", j + 2)) >= 0:
                name = text[j + 2 : close].removeprefix("^")
                if name not in POSIX_CLASSES:
                    self._refuse("an unknown ASCII class", j, close + 2)
                self._differ("an ASCII class", j, close + 2)
                j = close + 2
            elif c == "\\":
                # Go reads escapes in a class as parseEscape does (plus `\d`, `\p`): so no
                # `\b` backspace, `\A` or `\z`, which `_escape` refuses.
                j = self._escape(j, in_class=True)
            else:
                j += 1
        return n


def _fits(chain: tuple[int, ...]) -> bool:
    """Whether nested counts (outermost first) stay within 1000 copies as Go's repeatIsValid
    divides them down; a count of 0 ends the chain."""
    budget = MAX_REPEAT
    for count in chain:
        if count == 0:
            return True
        if count > budget:
            return False
        budget //= count
    return True
