"""`occlint check [PATHS]`: lint CUDA sources and build files, optionally fixing them."""

from __future__ import annotations

import argparse

from occlint.commands.options import add_lint_arguments, csv, load

FORMATS_HELP = "output format (full, concise, json, ...); default: full"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lint_arguments(parser)
    parser.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    parser.add_argument("--no-fix", dest="fix", action="store_false", help="do not apply fixes")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply (or show) unsafe fixes")
    parser.add_argument("--diff", action="store_true", help="print fixes as a unified diff; write nothing")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--output-format", action="append", type=csv, metavar="FORMAT[:FILE]",
                        help=FORMATS_HELP + "; several at once, each but one to a file: "
                             "`--output-format github,sarif:occlint.sarif`")
    parser.add_argument("--output-file", metavar="FILE", help="write the output to FILE instead of stdout")
    parser.add_argument("--diff-base", metavar="REF",
                        help="report only findings on lines changed since the merge-base with REF")
    parser.add_argument("--baseline", metavar="FILE", help="hide the findings recorded by `occlint baseline`")
    parser.add_argument("--lock", metavar="FILE", help="report resource regressions (OCC050) against this lockfile")


def run(args) -> int:
    import sys

    from occlint import baseline, lock
    from occlint import fix as fixing
    from occlint.emit import EMITTERS, FIX_AWARE, RUN_FORMATS, TEXT_FORMATS
    from occlint.emit.encode import output_bytes
    from occlint.errors import OcclintError

    outputs = _outputs(args, EMITTERS)
    config = lock.with_lock(load(args), args.lock)
    known = baseline.load(args.baseline) if args.baseline else None
    result, findings = _lint(args, config, known)
    fixed_count = 0
    if args.diff:
        diffs = []
        for path, file_findings in _by_file(findings).items():
            text = result.sources.get(path)
            new_text, applied = fixing.apply_fixes(text, file_findings, unsafe=args.unsafe_fixes) \
                if text is not None else (None, [])
            if text is not None and new_text != text:
                fixed_count += len(applied)
                diffs.append(fixing.unified_diff(path, text, new_text))
        _stdout(output_bytes("".join(diffs)))
        if fixed_count:
            print(f"\nWould fix {fixed_count} finding{'s' * (fixed_count != 1)}.", file=sys.stderr)
        return 1 if fixed_count and not args.exit_zero else 0
    for _ in range(MAX_FIX_PASSES if args.fix else 0):
        written = 0
        for path, file_findings in _by_file(findings).items():
            text = result.sources.get(path)
            if text is None:
                continue
            new_text, applied = fixing.apply_fixes(text, file_findings, unsafe=args.unsafe_fixes)
            if new_text != text:
                fixed_count += len(applied)
                written += 1
                _write(path, new_text)
        if not written:
            break
        # as ruff does: report what the fixed files say now (lines moved, findings the fixes
        # exposed), and fix again what became fixable
        result, findings = _lint(args, config, known, quiet=True)
    if args.fix:
        findings = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.code))

    stdout_format = None
    for name, file in outputs:
        if file is None and args.statistics:     # like ruff: the counts replace the findings
            sys.stdout.write(_statistics(findings, as_json=name != "full" and name not in TEXT_FORMATS))
            continue
        extra = {"result": result} if name in RUN_FORMATS else {}
        if name in FIX_AWARE:
            extra["unsafe_fixes"] = args.unsafe_fixes
        out = output_bytes(EMITTERS[name](findings, root=config.root, sources=result.sources, **extra))
        if file is None:
            _stdout(out)
            stdout_format = name
            continue
        try:     # rendered and encoded before the file is opened: a failure never truncates it
            with open(file, "wb") as fh:
                fh.write(out)
        except OSError as exc:
            raise OcclintError(f"cannot write {file}: {exc.strerror or exc}") from None
    if stdout_format in TEXT_FORMATS:
        sys.stdout.write("\n" if findings and stdout_format == "full" else "")
        sys.stdout.write(_summary(findings, fixed_count, args.unsafe_fixes))
    if result.errors:
        return 2
    return 1 if findings and not args.exit_zero else 0


MAX_FIX_PASSES = 10      # fix, re-lint, fix what became fixable: as ruff, a bounded number of times


def _lint(args, config, known, quiet: bool = False):
    """Lint the paths; (result, findings after --diff-base and --baseline)."""
    import sys

    from occlint import baseline, diffbase
    from occlint.engine import lint_paths

    changed = diffbase.changed_lines(args.diff_base, config.root) if args.diff_base else None
    result = lint_paths(args.paths, config, jobs=config.jobs)
    for notice in ([] if quiet else result.notices):
        print(notice if notice.startswith("occlint:") else f"occlint: notice: {notice}", file=sys.stderr)
    for error in ([] if quiet else result.errors):
        print(f"occlint: error: {error}", file=sys.stderr)
    findings = result.findings
    if changed is not None:
        findings = diffbase.keep_changed(findings, *changed)
    if known is not None:
        findings, hidden = baseline.filter_known(findings, known, root=config.root, sources=result.sources)
        if hidden and not quiet:
            print(f"occlint: {hidden} known finding{'s' * (hidden != 1)} hidden by {args.baseline}", file=sys.stderr)
    return result, findings


def _by_file(findings) -> dict[str, list]:
    by_file: dict[str, list] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    return by_file


def _outputs(args, emitters) -> list[tuple[str, str | None]]:
    """(format, file or None for stdout) from --output-format FORMAT[:FILE],... and --output-file."""
    from occlint.errors import OcclintError

    specs = [spec for group in (args.output_format or [["full"]]) for spec in group]
    outputs = []
    for spec in specs:
        name, _, file = spec.partition(":")
        if name not in emitters:
            raise OcclintError(f"unknown output format `{name}`; choose one of {', '.join(emitters)}")
        outputs.append((name, file or None))
    on_stdout = [name for name, file in outputs if file is None]
    if len(on_stdout) > 1:
        raise OcclintError(f"only one output format can go to stdout ({', '.join(on_stdout)} were "
                           "asked for): give the others a file, as in `sarif:occlint.sarif`")
    if args.output_file:
        if not on_stdout:
            raise OcclintError("--output-file needs an output format without its own file")
        outputs = [(name, file or args.output_file) for name, file in outputs]
    return outputs


def _write(path: str, text: str) -> None:
    import os
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".occlint-fix-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _stdout(data: bytes) -> None:
    """Write encoded output to stdout (bytes: any file name, whatever the locale)."""
    import sys

    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _statistics(findings, as_json: bool = False) -> str:
    import json
    from collections import Counter

    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = {f.code for f in findings if f.fix is not None and f.fix.applicability == "safe"}
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        return json.dumps([{"code": code, "name": names[code], "count": n, "fixable": code in fixable}
                           for code, n in ordered], indent=2) + "\n"
    lines = [f"{n:>5}\t{code}\t{'[*] ' if code in fixable else ''}{names[code]}" for code, n in ordered]
    return "\n".join(lines) + ("\n" if lines else "")


def _summary(findings, fixed: int, unsafe: bool) -> str:
    n = len(findings)
    lines = []
    if fixed:
        lines.append(f"Fixed {fixed} finding{'s' * (fixed != 1)}.")
    if not n:
        if not fixed:
            lines.append("All checks passed!")
        return "\n".join(lines) + "\n"
    lines.append(f"Found {n} finding{'s' * (n != 1)}.")
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    if safe:
        lines.append(f"[*] {safe} fixable with the `--fix` option"
                     + (f" ({hidden} hidden fix{'es' * (hidden != 1)} can be enabled with the `--unsafe-fixes` option)." if hidden and not unsafe else "."))
    elif hidden:
        lines.append(f"No fixes available ({hidden} hidden fix{'es' * (hidden != 1)} can be enabled with the `--unsafe-fixes` option).")
    return "\n".join(lines) + "\n"
