"""What `check` says besides the findings, in ruff's words: the summary, `--statistics`,
`--show-fixes`, and colour (`--color`, NO_COLOR, FORCE_COLOR)."""

from __future__ import annotations

import os
import re
from collections import Counter


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _hidden(n: int) -> str:
    return (f"{plural(n, 'hidden fix', 'hidden fixes')} can be enabled with the "
            "`--unsafe-fixes` option")


def fix_counts(findings, unsafe: bool) -> tuple[int, int]:
    """(fixes `--fix` would apply, unsafe fixes hidden without `--unsafe-fixes`)."""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    risky = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    return (safe + risky, 0) if unsafe else (safe, risky)


def summary(findings, fixed: int, unsafe: bool, *, fix_mode: bool = False) -> str:
    """ruff's closing lines: `Found 3 findings (1 fixed, 2 remaining).` and the fix hint."""
    n = len(findings)
    if not n and not fixed:
        return "All checks passed!\n"
    lines = []
    if fixed:
        lines.append(f"Found {plural(n + fixed, 'finding')} ({fixed} fixed, {n} remaining).")
    else:
        lines.append(f"Found {plural(n, 'finding')}.")
    can, hidden = fix_counts(findings, unsafe)
    if can:
        lines.append(f"[*] {can} fixable with the `--fix` option"
                     + (f" ({_hidden(hidden)})." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({_hidden(hidden)}).")
    return "\n".join(lines) + "\n"


def fix_only_summary(findings, fixed: int, unsafe: bool) -> str:
    """`--fix-only`: what was fixed, never the findings left."""
    if fixed:
        return f"Fixed {plural(fixed, 'finding')}.\n"
    _can, hidden = fix_counts(findings, unsafe)
    more = f" ({plural(hidden, 'fix', 'fixes')} available with `--unsafe-fixes`)" if hidden else ""
    return f"No findings fixed{more}.\n"


def show_fixes(applied, display) -> str:
    """ruff's `--show-fixes` enumeration of what `--fix` changed, per file and code."""
    if not applied:
        return ""
    by_file: dict[str, Counter] = {}
    names = {}
    for f in applied:
        by_file.setdefault(display(f.path), Counter())[f.code] += 1
        names[f.code] = f.name
    lines = [f"Fixed {plural(len(applied), 'finding')}:"]
    for path in sorted(by_file):
        lines.append(f"- {path}:")
        for code, n in sorted(by_file[path].items()):
            lines.append(f"    {n} \u00d7 {code} ({names[code]})")
    return "\n".join(lines) + "\n"


def statistics(findings, as_json: bool = False) -> str:
    """One line per code, most frequent first (`count\\tcode\\t[*] name`, `[ ]` when not
    fixable), as ruff prints them."""
    import json

    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = {f.code for f in findings if f.fix is not None and f.fix.applicability == "safe"}
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        return json.dumps([{"code": code, "name": names[code], "count": n, "fixable": code in fixable}
                           for code, n in ordered], indent=2) + "\n"
    width = max((len(str(n)) for n in counts.values()), default=1)
    code_width = max((len(code) for code in counts), default=1)
    lines = [f"{n:>{width}}\t{code:<{code_width}}\t{'[*] ' if code in fixable else ''}{names[code]}"
             for code, n in ordered]
    return "\n".join(lines) + ("\n" if lines else "")


# --- colour ----------------------------------------------------------------------------------------

def use_color(choice: str | None, stream) -> bool:
    """`--color always|never|auto`; auto: FORCE_COLOR (non-empty) forces it, NO_COLOR (non-empty)
    turns it off, else only on a terminal (and not for TERM=dumb)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"


BOLD, RED, CYAN, BLUE, RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[34m", "\x1b[0m"
_HEADER = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+)(?P<fix> \[\*\])?",
                     re.M)
_GUTTER = re.compile(r"^(?P<gutter>\s*\d*\s*\|)", re.M)


def paint(text: str) -> str:
    """ruff's colours on text output: bold path, cyan punctuation, bold red code, cyan `[*]`."""
    def header(m: re.Match) -> str:
        fix = f" {CYAN}[*]{RESET}" if m.group("fix") else ""
        return (f"{BOLD}{m.group('path')}{RESET}{CYAN}:{RESET}{m.group('line')}{CYAN}:{RESET}"
                f"{m.group('col')}{CYAN}:{RESET} {BOLD}{RED}{m.group('code')}{RESET}{fix}")

    text = _HEADER.sub(header, text)
    return _GUTTER.sub(lambda m: f"{BLUE}{BOLD}{m.group('gutter')}{RESET}", text)
