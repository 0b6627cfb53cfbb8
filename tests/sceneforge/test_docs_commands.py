"""Issue 33 item 9: every `sceneforge <command> [<action>] --flag` written in README.md and docs/*.md
names a command and flags the parser really has (docs/assets.md once listed a `--manifest` that
`generate` never had). Commands are read from code blocks (one line, `\\` continuations joined) and
from inline code; a command ends at `|`, `;`, `&&`, `#`, a backtick or the end of the line."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sceneforge.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
END = re.compile(r"\||;|&&|#|`|\)\s|$")


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction)), {})


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def code(text: str):
    """(line number, code) for each line of a fenced block (``\\`` continuations joined) and each
    inline code span: prose ("sceneforge ships ...") is not a command."""
    lines, fenced, i = text.splitlines(), False, 0
    while i < len(lines):
        line, no = lines[i], i + 1
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i]
            yield no, line
        else:
            yield from ((no, m.group(1)) for m in re.finditer(r"`([^`]+)`", line))
        i += 1


def invocations(text: str):
    """(line number, tokens after `sceneforge`, whether it stands where a shell command starts) for
    every `sceneforge ...` in the code of ``text``."""
    for no, line in code(text):
        for m in re.finditer(r"(?<![\w/.-])sceneforge\s+(?=[a-z-])", line):
            rest = line[m.end() :]
            before = line[: m.start()].rstrip()
            at_start = not before or before.endswith(("&&", ";", "|", "$", "("))
            yield no, rest[: END.search(rest).start()].split(), at_start


def check(tokens: list[str], parser: argparse.ArgumentParser, at_start: bool = True) -> list[str]:
    """Unknown command names and flags in one invocation (empty: all exist). Mid-line ("connected
    to sceneforge on port N") an unknown word is prose, not a missing command."""
    tokens = [t.strip("[]()',.:") for t in tokens]  # also "sceneforge probe: error: ..." output
    if tokens and not tokens[0].startswith("-") and tokens[0] not in _subcommands(parser):
        return [f"no command {tokens[0]!r}"] if at_start else []
    path, p, problems = [], parser, []
    for word in tokens:
        subs = _subcommands(p)
        if word in subs:
            path.append(word)
            p = subs[word]
            if word == "bench":  # `bench NAME args...`: the rest are the benchmark's own flags
                break
        elif word.startswith("--") and len(word) > 2:
            # `assets list [--manifest X] | build ...`: a flag of any of its actions is fine there
            known = _options(p) | {o for s in subs.values() for o in _options(s)}
            if word.split("=")[0] not in known:
                problems.append(f"sceneforge {' '.join(path)}: no flag {word.split('=')[0]}")
    return problems


def test_the_checker_catches_a_flag_that_does_not_exist():
    parser = build_parser()
    assert check("generate --env desert --manifest x.yaml".split(), parser) == ["sceneforge generate: no flag --manifest"]
    assert check("assets list --manifest p.yaml".split(), parser) == []
    assert check("bench render --anything".split(), parser) == []
    assert check("probe-report runs/ --min-test 0".split(), parser) == []
    assert check("frobnicate --x".split(), parser)[0] == "no command 'frobnicate'"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_command_and_flag_exists(doc):
    parser = build_parser()
    problems = [
        f"{doc.name}:{no}: {msg}"
        for no, tokens, at_start in invocations(doc.read_text())
        for msg in check(tokens, parser, at_start)
    ]
    assert not problems, "\n".join(problems)
