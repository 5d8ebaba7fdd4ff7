"""Rules: their words from rules/OCCnnn.toml, selection by config like ruff.

`RULES` maps a code to a `Rule` carrying every TOML field. `render(code, **values)` fills the
rule's message (or a named variant from its `[messages]` table). `python -m occlint.registry
docs/rules` writes one Markdown page per rule.
"""

from __future__ import annotations

import fnmatch
import os
import re
import string
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from occlint.record import dataclass, field

URL = "https://github.com/occlint/occlint/blob/main/docs/rules/{code}.md"
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    """One rule: its code, name, texts and defaults."""

    code: str
    name: str
    summary: str
    severity: str
    message: str
    fix_title: str = ""
    fix_summary: str = ""             # the fix in words for the rule page (no placeholders)
    fix_safety: str = ""              # safe | unsafe: what checks.py gives the rule's fixes
    rationale: str = ""
    example: str = ""
    use_instead: str = ""
    messages: dict = field(default_factory=dict, compare=False, hash=False)   # variant -> template
    fix_titles: dict = field(default_factory=dict, compare=False, hash=False)
    path: str = ""

    @property
    def url(self) -> str:
        return URL.format(code=self.code, name=self.name)


def rules_dir() -> Path:
    """rules/ beside the package in a checkout, occlint/rules in a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("occlint's rules/ folder is missing from the installation")


def load_rule(file: Path) -> Rule:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    with open(file, "rb") as fh:
        data = tomllib.load(fh)
    if data.get("code") != file.stem:
        raise RuntimeError(f"{file}: code {data.get('code')!r} does not match the file name")
    messages = data.pop("messages", {})
    fix_titles = data.pop("fix_titles", {})
    return Rule(**data, messages=messages, fix_titles=fix_titles, path=str(file))


class Rules(Mapping):
    """code -> Rule, in code order; each rules/OCCnnn.toml is read when its rule is first asked
    for (a `check` needs the words of the few rules that fired, not all of them)."""

    def __init__(self, folder: Path | None = None):
        self._folder = folder
        self._files: dict[str, Path] | None = None
        self._rules: dict[str, Rule] = {}

    def _index(self) -> dict[str, Path]:
        if self._files is None:
            files = sorted((self._folder or rules_dir()).glob("OCC*.toml"))
            self._files = {f.stem: f for f in files}
        return self._files

    def __getitem__(self, code: str) -> Rule:
        rule = self._rules.get(code)
        if rule is None:
            rule = self._rules[code] = load_rule(self._index()[code])
        return rule

    def __contains__(self, code) -> bool:
        return code in self._index()

    def __iter__(self) -> Iterator[str]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())


def load_rules(folder: Path | None = None) -> dict[str, Rule]:
    """Every rule, read now."""
    return dict(Rules(folder).items())


RULES: Mapping[str, Rule] = Rules()


def template_fields(template: str) -> set[str]:
    return {name.split(".")[0].split("[")[0]
            for _, name, _, _ in string.Formatter().parse(template) if name}


def render(code: str, variant: str = "message", **values) -> str:
    """Fill the rule's `message` (or `messages[variant]`) with `values`; a kernel's long
    template arguments are shortened (`short_label`)."""
    rule = RULES[code]
    kernel = values.get("kernel")
    if type(kernel) is str and len(kernel) > _LONG:
        values["kernel"] = short_label(kernel)
    template = rule.message if variant == "message" else rule.messages[variant]
    return singular(template.format(**values).strip())


_LONG = 40


def short_label(label: str) -> str:
    """`label` (`k<512, Span<transform_iterator<..., lambda ...>>>`) with each template argument
    longer than 40 characters written as its own template's name and `<...>`, or `...`
    (xgboost's `EvaluateSplitsKernel<512, xgboost::common::IterSpan<...>>`, not 700
    characters of thrust iterators): the findings' data and `occlint kernels` keep the whole."""
    open_ = label.find("<")
    if open_ < 0 or not label.endswith(">"):
        return label
    args, depth, start = [], 0, open_ + 1
    for i in range(open_ + 1, len(label) - 1):
        c = label[i]
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(label[start:i].strip())
            start = i + 1
    args.append(label[start:-1].strip())
    if depth != 0:
        return label
    out = []
    for arg in args:
        if len(arg) > _LONG:
            head = arg.split("<", 1)[0]
            arg = f"{head}<...>" if "<" in arg and "(" not in head and len(head) <= _LONG else "..."
        out.append(arg)
    return f"{label[:open_]}<{', '.join(out)}>"


def render_fix_title(code: str, variant: str = "fix_title", **values) -> str:
    rule = RULES[code]
    template = rule.fix_title if variant == "fix_title" else rule.fix_titles[variant]
    return singular(template.format(**values).strip())


_ONE = re.compile(r"(?<![\w.,])1( fewer)? (block|register|thread|byte|warp|element|lane|SM|instantiation|launch)s\b")


def singular(text: str) -> str:
    """"1 blocks/SM" -> "1 block/SM", "1 fewer registers" -> "1 fewer register": the templates
    write the plural, which is wrong for a count of exactly one."""
    return _ONE.sub(lambda m: f"1{m.group(1) or ''} {m.group(2)}", text)


# --- selection -----------------------------------------------------------------------------------


def _longest(code: str, prefixes) -> int:
    return max((len(p) for p in prefixes if code.startswith(p)), default=-1)


def is_enabled(code: str, config, path: str | None = None) -> bool:
    """ruff's rule: the most specific matching prefix decides; ignore wins a tie."""
    enable = _longest(code, (*config.select, *config.extend_select))
    disable = _longest(code, config.ignore)
    if path is not None:
        disable = max(disable, _longest(code, file_ignores(path, config)))
    return enable >= 0 and enable > disable


def file_ignores(path: str, config) -> tuple[str, ...]:
    """Codes `per-file-ignores` removes for `path` (globs relative to the project root)."""
    if not config.per_file_ignores:
        return ()
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(config.root))
    except ValueError:
        rel = path
    rel = rel.replace(os.sep, "/")
    codes: list[str] = []
    for glob, ignored in config.per_file_ignores:
        if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(os.path.basename(rel), glob) \
                or fnmatch.fnmatch(rel, glob.rstrip("/") + "/*"):
            codes.extend(ignored)
    return tuple(codes)


def selected(config, path: str | None = None) -> list[str]:
    return [code for code in RULES if is_enabled(code, config, path)]


# --- documentation -------------------------------------------------------------------------------


def page(code: str) -> str:
    """The rule's Markdown page (also what `occlint rule CODE` prints)."""
    rule = RULES[code]
    parts = [f"# {rule.code} {rule.name}", "", rule.summary, "",
             f"Severity: {rule.severity}. " + fix_words(rule)]
    if rule.rationale:
        parts += ["", "## Why", "", rule.rationale.strip()]
    if rule.example:
        parts += ["", "## Example", "", "```cuda", rule.example.strip("\n"), "```"]
    if rule.use_instead:
        parts += ["", "## Use instead", "", "```cuda", rule.use_instead.strip("\n"), "```"]
    parts += ["", f"Suppress with `// noqa: {rule.code}` on the reported line, or select and "
              f"ignore it with `select`/`ignore` in `[tool.occlint]`."]
    return "\n".join(parts) + "\n"


def fix_words(rule: Rule) -> str:
    """The page's sentence about the rule's fix: what it does and whether `--fix` applies it."""
    if not rule.fix_title:
        return "No automatic fix."
    how = ("safe: `occlint check --fix` applies it" if rule.fix_safety == "safe" else
           "unsafe: applied only with `--fix --unsafe-fixes`; review it")
    return f"Fix ({how}): {rule.fix_summary.rstrip('.')}."


def write_docs(folder: str | os.PathLike) -> list[Path]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for code in RULES:
        target = out / f"{code}.md"
        target.write_text(page(code), encoding="utf-8")
        written.append(target)
    index = ["# occlint rules", "", "| code | name | severity | summary |", "|---|---|---|---|"]
    index += [f"| [{r.code}]({r.code}.md) | {r.name} | {r.severity} | {r.summary} |" for r in RULES.values()]
    (out / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return written


if __name__ == "__main__":  # python -m occlint.registry docs/rules
    for written in write_docs(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"):
        print(written)
