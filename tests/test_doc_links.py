"""Every relative link in the documentation resolves to a file in the repository.

The documents are ``README.md`` and every ``docs/**/*.md``. A link is a markdown link or
image, ``[text](path)``, ``[text](path#anchor)`` or ``![alt](path)``, or a reference
definition, ``[label]: path``. A path is relative to the document that holds it (a leading
``/`` means the repository's root). Links to ``http://``, ``https://`` and ``mailto:``, and
links to an anchor in the same document (``#anchor``), are not checked; nor are anchors. Links
inside code (fenced blocks and backtick spans) are text, not links.

The repository must also stand on its own: a link that leaves it fails even when the file
exists on this machine, and so does a mention, in any text or code, of a ``research/`` or
``shared/`` path that is not a file of the repository (notes kept beside the checkout, such as
``../shared/research/``, are not there for a reader).

Each failure names the document, the line and the target. The check reads files only.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CLOSING_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# [text](target) and ![alt](target): the text may hold one level of brackets and wrap lines;
# the target is <anything> or a run without spaces (balanced parentheses allowed), then an
# optional title.
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*(?:<(?P<angled>[^>\n]*)>|(?P<bare>(?:[^()\s]|\([^()\s]*\))+))"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*<?(?P<target>[^\s>]+)>?", re.MULTILINE)
_IGNORED = ("http://", "https://", "mailto:")
# A path naming a research/ or shared/ directory, with any leading ./ or ../ and directories.
_MENTION = re.compile(r"(?<![\w/.-])(?:\.{1,2}/)*(?:[\w.-]+/)*(?:research|shared)/[\w./-]*")


def documents() -> list[Path]:
    """README.md and every markdown file under docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blank(text: str) -> str:
    """``text`` with every character but newlines replaced by a space (offsets kept)."""
    return re.sub(r"[^\n]", " ", text)


def prose(text: str) -> str:
    """The document with fenced code blocks and code spans blanked out, offsets unchanged."""
    out: list[str] = []
    fence = ""  # the open fence's characters, "" outside a fenced block
    for line in text.splitlines(keepends=True):
        marker = _FENCE.match(line)
        if fence:
            out.append(_blank(line))
            closing = _CLOSING_FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = ""
        elif marker:
            fence = marker.group(1)
            out.append(_blank(line))
        else:
            out.append(line)
    return _CODE_SPAN.sub(lambda m: _blank(m.group(0)), "".join(out))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _where(doc: Path) -> str:
    return doc.relative_to(ROOT).as_posix()


def _inside(path: Path) -> bool:
    return path == ROOT or ROOT in path.parents


def link_targets(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link and reference definition outside code."""
    plain = prose(text)
    found = [(_line(plain, m.start("angled") if m.group("angled") is not None
                    else m.start("bare")), m.group("angled") or m.group("bare") or "")
             for m in _INLINE_LINK.finditer(plain)]
    found += [(_line(plain, m.start("target")), m.group("target"))
              for m in _REFERENCE.finditer(plain)]
    return sorted(found)


def link_problem(doc: Path, target: str) -> str | None:
    """Why ``target``, linked from ``doc``, does not resolve; None when it does or is skipped."""
    if not target or target.startswith("#") or target.lower().startswith(_IGNORED):
        return None
    path_text = unquote(target.split("#", 1)[0].split("?", 1)[0])
    base = ROOT if path_text.startswith("/") else doc.parent
    path = (base / path_text.lstrip("/")).resolve()
    if not _inside(path):
        return f"links to {target}, which is outside the repository"
    if not path.exists():
        return f"links to {target}, which does not exist ({path.relative_to(ROOT).as_posix()})"
    return None


def mention_problems(doc: Path, text: str) -> list[str]:
    """Every mention of a research/ or shared/ path that is not a file of the repository."""
    problems = []
    for match in _MENTION.finditer(text):
        mentioned = match.group(0).rstrip(".")
        candidates = [(doc.parent / mentioned).resolve()]
        if not mentioned.startswith("."):
            candidates.append((ROOT / mentioned).resolve())
        if not any(_inside(c) and c.exists() for c in candidates):
            problems.append(f"{_where(doc)}:{_line(text, match.start())}: mentions {mentioned}, "
                            "which is not in the repository (cite the public source instead)")
    return problems


def doc_problems(doc: Path) -> list[str]:
    """Every broken link and outside mention in ``doc``, each as ``file:line: what``."""
    text = doc.read_text(encoding="utf-8")
    problems = [f"{_where(doc)}:{line}: {why}" for line, target in link_targets(text)
                if (why := link_problem(doc, target)) is not None]
    return problems + mention_problems(doc, text)


def test_the_documents_are_found() -> None:
    docs = documents()
    assert (ROOT / "README.md") in docs and len(docs) > 5
    assert all(doc.is_file() for doc in docs)


def test_every_relative_link_resolves_inside_the_repository() -> None:
    problems = [p for doc in documents() for p in doc_problems(doc)]
    assert not problems, "broken documentation links:\n" + "\n".join(problems)


def test_the_checker_finds_what_it_must() -> None:
    """The checker itself, on a document written here (inside the repository's docs/ so that
    relative paths mean what they mean there, but read from a string)."""
    doc = ROOT / "docs" / "probe.md"
    text = "\n".join([
        "# Probe",                                                     # 1
        "[ok](targets.md) and [ok with anchor](targets.md#adb-targetsadbpy).",  # 2
        "[missing](nowhere.md#x) ![image](lab/absent.png)",            # 3
        "[web](https://example.org/x) [mail](mailto:a@b.c) [here](#probe)",  # 4
        "[outside](../../etc/passwd) [root](/README.md)",               # 5
        "`[in code](nowhere.md)` and the note `research/fai-pep.md`.",  # 6
        "```",                                                         # 7
        "[fenced](nowhere.md) ../shared/research/x.md",                # 8
        "```",                                                         # 9
        "[wrapped",                                                    # 10
        "text](gone.md)",                                              # 11
        "[ref]: missing-ref.md",                                       # 12
    ])
    found = [(line, target, link_problem(doc, target)) for line, target in link_targets(text)]
    failing = [(line, target) for line, target, why in found if why]
    assert failing == [(3, "lab/absent.png"), (3, "nowhere.md#x"), (5, "../../etc/passwd"),
                       (11, "gone.md"), (12, "missing-ref.md")]
    assert "outside the repository" in (link_problem(doc, "../../etc/passwd") or "")
    assert {target for _, target, _ in found} >= {"targets.md", "/README.md", "#probe"}
    mentions = mention_problems(doc, text)
    assert [m.split(": mentions ")[0] for m in mentions] == ["docs/probe.md:6", "docs/probe.md:8"]
    assert "research/fai-pep.md," in mentions[0] and "../shared/research/x.md," in mentions[1]
