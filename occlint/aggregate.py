"""One finding per source location and cause.

A template kernel yields one Hit per instantiation and a multi-arch run one per arch, all at the
same line and for the same reason. `merge` folds them: first the instantiations at one (line,
code, arch), then the archs whose merged figures agree. The merged Hit's values show a range
where instances differ (`38-40` registers/thread) and its `instances` keep every one, so no two
findings share (file, line, code, arch).
"""

from __future__ import annotations

from collections.abc import Sequence

from occlint import record
from occlint.checks import FixSpec, Hit


def merge(hits: Sequence[Hit]) -> list[tuple[Hit, tuple[Hit, ...]]]:
    """[(merged hit, the hits it stands for)] in first-seen order."""
    by_arch: dict[tuple, list[Hit]] = {}
    for hit in hits:
        by_arch.setdefault((hit.code, hit.span.line, hit.arch), []).append(hit)
    per_arch = [(_fold(group), tuple(group)) for group in by_arch.values()]
    by_cause: dict[tuple, list[tuple[Hit, tuple[Hit, ...]]]] = {}
    for merged, group in per_arch:
        key = (merged.code, merged.span.line, merged.arch is None, _same_cause(merged))
        by_cause.setdefault(key, []).append((merged, group))
    out = []
    for items in by_cause.values():
        if len(items) == 1:
            out.append(items[0])
            continue
        archs = [m.arch for m, _ in items]
        first = items[0][0]
        values = {**first.values, "arch": ", ".join(archs)}
        out.append((record.replace(first, values=values, arch=",".join(archs)),
                    tuple(h for _, group in items for h in group)))
    return _across_lines(out)


def _across_lines(merged: list[tuple[Hit, tuple[Hit, ...]]]) -> list[tuple[Hit, tuple[Hit, ...]]]:
    """A kernel's finding that is the same at several lines, word for word, with the same fix
    (one edit, at the kernel: one kernel launched the same way from several places) is one
    finding, at its first line, that names the others: one cause, one remedy, one finding.
    Findings without a fix, or whose fix edits each line, stay one per line."""
    by_cause: dict[tuple, list[tuple[Hit, tuple[Hit, ...]]]] = {}
    for hit, group in merged:
        one_remedy = hit.fix is not None and hit.fix.edits and hit.values.get("kernel")
        key = (hit.code, hit.arch, _same_cause(hit)) if one_remedy else (id(hit),)
        by_cause.setdefault(key, []).append((hit, group))
    out = []
    for items in by_cause.values():
        lines = sorted({h.span.line for h, _ in items})
        if len(lines) == 1:
            out.extend(items)
            continue
        first = min(items, key=lambda item: (item[0].span.line, item[0].span.column))[0]
        values = {**first.values, "also_lines": ", ".join(map(str, lines[1:]))}
        out.append((record.replace(first, values=values,
                                        noqa_lines=tuple(sorted({n for h, _ in items for n in h.noqa_lines}))),
                    tuple(h for _, group in items for h in group)))
    return out


def _same_cause(hit: Hit) -> tuple:
    """What must agree for two archs' findings to be one: everything but the arch."""
    values = tuple(sorted((k, repr(v)) for k, v in hit.values.items() if k != "arch"))
    return hit.variant, values, _fix_key(hit.fix)


def _fix_key(fix: FixSpec | None) -> tuple | None:
    if fix is None:
        return None
    return fix.applicability, tuple((e.content, e.span.start, e.span.end) for e in fix.edits)


def _fold(group: list[Hit]) -> Hit:
    """One Hit for the instantiations (or kernels) reported at one line for one code and arch."""
    unique: list[Hit] = []
    for hit in group:
        if all(hit.values != u.values or hit.variant != u.variant for u in unique):
            unique.append(hit)
    if len(unique) == 1:
        return unique[0]
    first = unique[0]
    same_variant = [h for h in unique if h.variant == first.variant]
    values = {key: _combine(key, [h.values.get(key) for h in same_variant]) for key in first.values}
    labels = list(dict.fromkeys(str(h.values.get("kernel")) for h in unique))
    if "kernel" in first.values and len(labels) > 1:
        bases = list(dict.fromkeys(label.split("<")[0] for label in labels))
        noun = "instantiations" if len(bases) == 1 else "kernels"
        values["kernel"] = _KernelLabel(", ".join(bases), len(labels), noun)
    return record.replace(first, values=values, fix=_merged_fix(group),
                               noqa_lines=tuple(sorted({n for h in group for n in h.noqa_lines})))


class _KernelLabel(str):
    """`name` in a message, followed by how many instances it stands for."""

    def __new__(cls, name: str, count: int, noun: str):
        obj = super().__new__(cls, name)
        obj.count, obj.noun = count, noun
        return obj

    def suffix(self) -> str:
        return f" ({self.count} {self.noun})"


def _combine(key: str, values: list):
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    numbers = [v for v in distinct if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) == len(distinct):
        low, high = min(numbers), max(numbers)
        return _Range(low, high)
    if key == "message":        # a compiler's errors at one line: all of them hold
        return "; ".join(str(v) for v in distinct)
    return " or ".join(str(v) for v in distinct)     # one per instance: which one depends


class _Range(str):
    """`low-high`, each end formatted as the values were (`38-40`, `50%-75%`)."""

    def __new__(cls, low, high):
        obj = super().__new__(cls, f"{format(low, '')}-{format(high, '')}")
        obj.low, obj.high = low, high
        return obj


def _merged_fix(group: list[Hit]) -> FixSpec | None:
    """One fix for the whole group, when every instance has one and their edits agree."""
    fixes = [h.fix for h in group]
    if any(f is None for f in fixes) or len({f.applicability for f in fixes}) != 1:
        return None
    edits = list(dict.fromkeys(e for f in fixes for e in f.edits))
    spans = sorted((e.span.start, e.span.end) for e in edits)
    if any(a == c or b > c for (a, b), (c, _) in zip(spans, spans[1:])):
        return None          # two instances want different text at one place
    return record.replace(fixes[0], edits=tuple(edits))


def label_message(message: str, hit: Hit) -> str:
    """Name how many instances a merged message stands for, right after the kernel's name, and
    the other lines it holds for."""
    also = hit.values.get("also_lines")
    if also:
        message = f"{message} (the same at line{'s' if ',' in also else ''} {also})"
    kernel = hit.values.get("kernel")
    if not isinstance(kernel, _KernelLabel):
        return message
    quoted = f"`{kernel}`"
    if quoted in message:
        return message.replace(quoted, quoted + kernel.suffix(), 1)
    return f"{message}{kernel.suffix()}"
