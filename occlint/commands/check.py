"""`occlint check [PATHS]`: lint CUDA sources and build files, optionally fixing them."""

from __future__ import annotations

import argparse

from occlint.commands.options import add_lint_arguments, csv, load

FORMATS_HELP = "output format (full, concise, json, ...); default: full"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lint_arguments(parser, here=True)
    parser.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    parser.add_argument("--no-fix", dest="fix", action="store_false", help="do not apply fixes")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply (or show) unsafe fixes")
    parser.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    parser.add_argument("--fix-only", action="store_true", default=False,
                        help="apply fixes, but do not report or exit non-zero for what is left "
                             "(implies --fix)")
    parser.add_argument("--no-fix-only", dest="fix_only", action="store_false")
    parser.add_argument("--show-fixes", action="store_true", default=False,
                        help="list the fixes applied, per file and rule")
    parser.add_argument("--no-show-fixes", dest="show_fixes", action="store_false")
    parser.add_argument("--exit-non-zero-on-fix", action="store_true",
                        help="exit 1 when any fix was applied, even with no finding left")
    parser.add_argument("--fixable", type=csv, metavar="CODES",
                        help="rule codes or prefixes whose fixes may be applied (default: all)")
    parser.add_argument("--unfixable", type=csv, metavar="CODES",
                        help="rule codes or prefixes whose fixes are never applied")
    parser.add_argument("--extend-fixable", type=csv, metavar="CODES",
                        help="rule codes or prefixes to make fixable in addition to --fixable")
    parser.add_argument("--add-noqa", action="store_true",
                        help="add `// noqa: CODE` to every line with a finding; report nothing")
    parser.add_argument("--diff", action="store_true", help="print fixes as a unified diff; write nothing")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--output-format", action="append", type=csv, metavar="FORMAT[:FILE]",
                        help=FORMATS_HELP + "; several at once, each but one to a file: "
                             "`--output-format github,sarif:occlint.sarif`")
    parser.add_argument("--output-file", "-o", metavar="FILE",
                        help="write the output to FILE instead of stdout (the summary goes to stderr)")
    parser.add_argument("--diff-base", metavar="REF",
                        help="report only findings on lines changed since the merge-base with REF")
    parser.add_argument("--baseline", metavar="FILE", help="hide the findings recorded by `occlint baseline`")
    parser.add_argument("--lock", metavar="FILE", help="report resource regressions (OCC050) against this lockfile")
    parser.add_argument("--stdin-filename", metavar="PATH",
                        help="the path of the buffer read from stdin (`check -`): its flags, "
                             "compile database entry and config apply")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the settings that apply to the first file, and exit")
    parser.add_argument("--show-files", action="store_true", help="print the files that would be linted, and exit")
    parser.add_argument("--watch", "-w", action="store_true", help="lint again whenever a file changes")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text output (auto: on a terminal; NO_COLOR and FORCE_COLOR are honoured)")
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("--quiet", "-q", action="store_true",
                      help="print the findings only: no summary, no notices")
    loud.add_argument("--silent", "-s", action="store_true",
                      help="print nothing, not even the findings (the exit code tells)")
    loud.add_argument("--verbose", "-v", action="store_true",
                      help="also print what was linted, the cache hits and the time taken")


def run(args) -> int:
    if getattr(args, "watch", False):
        from occlint.commands.watch import watch

        return watch(args, once)
    return once(args)


def once(args) -> int:
    import sys
    import time

    from occlint.emit import EMITTERS, FIX_AWARE, RUN_FORMATS, TEXT_FORMATS
    from occlint.errors import OcclintError

    started = time.perf_counter()
    stdin = "-" in (args.paths or [])
    if stdin and len(args.paths) > 1:
        raise OcclintError("`-` (read stdin) cannot be combined with other paths")
    if args.stdin_filename and not stdin and not args.paths:
        args.paths = ["-"]
        stdin = True
    outputs = _outputs(args, EMITTERS)
    config = load(args)
    if args.lock:
        from occlint import lock

        config = lock.with_lock(config, args.lock)
    if args.show_settings or args.show_files:
        from occlint.commands.settings import show

        return show(args, config)
    known = None
    if args.baseline:
        from occlint import baseline

        known = baseline.load(args.baseline)
    buffer = sys.stdin.buffer.read() if stdin else None
    reuse = all(name != "html" for name, _file in outputs)    # the report needs the parses
    result, findings = _lint(args, config, known, buffer=buffer, reuse=reuse)
    # what only the output needs loads after the lint (a cold run's compiles start sooner)
    from occlint import fix as fixing
    from occlint.commands import summary as say
    from occlint.emit.encode import output_bytes
    if args.add_noqa:
        return _add_noqa(findings, result, args)
    err = sys.stderr
    fixed: list = []
    if args.diff:
        diffs = []
        for path, file_findings in _by_file(findings).items():
            text = result.sources.get(path)
            new_text, applied = fixing.apply_fixes(text, file_findings, unsafe=args.unsafe_fixes) \
                if text is not None else (None, [])
            if text is not None and new_text != text:
                fixed.extend(applied)
                diffs.append(fixing.unified_diff(path, text, new_text))
        if not args.silent:
            _stdout(output_bytes("".join(diffs)))
        if fixed and not (args.quiet or args.silent):
            print(f"\nWould fix {say.plural(len(fixed), 'finding')}.", file=err)
        return 1 if fixed and not args.exit_zero else 0
    fix_mode = bool(args.fix or args.fix_only) and not stdin     # a buffer is never written
    unwritable: set[str] = set()      # one error each; the other files are still fixed
    for _ in range(MAX_FIX_PASSES if fix_mode else 0):
        written = 0
        for path, file_findings in _by_file(findings).items():
            text = result.sources.get(path)
            if text is None or path in unwritable:
                continue
            new_text, applied = fixing.apply_fixes(text, file_findings, unsafe=args.unsafe_fixes)
            if new_text != text:
                if not _write(path, text, new_text):
                    unwritable.add(path)
                    continue
                fixed.extend(applied)
                written += 1
        if not written:
            break
        # as ruff does: report what the fixed files say now (lines moved, findings the fixes
        # exposed), and fix again what became fixable
        result, findings = _lint(args, config, known, quiet=True)
    if fix_mode:
        findings = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.code))

    if args.verbose:
        print(f"occlint: {say.plural(len(result.files), 'file')} linted in "
              f"{time.perf_counter() - started:.2f} s ({result.compiled} compiled, "
              f"{result.cached} from the compile cache"
              f"{'; findings from the findings cache' if result.reused else ''})", file=err)
    color = say.use_color(args.color, sys.stdout)
    shown = [] if args.fix_only else findings
    stdout_format = None
    for name, file in outputs:
        if args.silent and file is None:
            continue
        if file is None and args.statistics:     # like ruff: the counts replace the findings
            table = say.statistics(shown, as_json=name != "full" and name not in TEXT_FORMATS)
            sys.stdout.write(say.paint(table) if color else table)
            stdout_format = name
            continue
        extra = {"result": result} if name in RUN_FORMATS else {}
        if name in FIX_AWARE:
            extra["unsafe_fixes"] = args.unsafe_fixes
        rendered = EMITTERS[name](shown, root=config.root, sources=result.sources, **extra)
        if file is None and color and name in TEXT_FORMATS:
            rendered = say.paint(rendered)
        out = output_bytes(rendered)
        if file is None:
            _stdout(out)
            stdout_format = name
            continue
        try:     # rendered and encoded before the file is opened: a failure never truncates it
            with open(file, "wb") as fh:
                fh.write(out)
        except OSError as exc:
            raise OcclintError(f"cannot write {file}: {exc.strerror or exc}") from None
    text_out = any(name in TEXT_FORMATS for name, _file in outputs)
    if text_out and not (args.quiet or args.silent):
        # on stdout after text findings, as ruff; on stderr when the findings went to a file
        stream = sys.stdout if stdout_format in TEXT_FORMATS else err
        if stream is sys.stdout and shown and stdout_format == "full" and not args.statistics:
            stream.write("\n")
        if args.show_fixes:
            stream.write(say.show_fixes(fixed, lambda p: _display(p, config.root)))
        if args.fix_only:
            stream.write(say.fix_only_summary(findings, len(fixed), args.unsafe_fixes))
        else:
            stream.write(say.summary(findings, len(fixed), args.unsafe_fixes))
        stream.flush()
    if result.errors or unwritable:
        return 2
    if fixed and args.exit_non_zero_on_fix:
        return 1
    if args.fix_only:
        return 0
    return 1 if findings and not args.exit_zero else 0


MAX_FIX_PASSES = 10      # fix, re-lint, fix what became fixable: as ruff, a bounded number of times


def _lint(args, config, known, quiet: bool = False, buffer: bytes | None = None,
          reuse: bool = False):
    """Lint the paths (or the stdin buffer); (result, findings after --fixable/--unfixable,
    --diff-base and --baseline). `reuse`: findings may come from the findings cache."""
    import sys

    from occlint.engine import lint_paths

    quiet = quiet or args.quiet or args.silent
    changed = None
    if args.diff_base:
        from occlint import diffbase

        changed = diffbase.changed_lines(args.diff_base, config.root)
    if buffer is not None:
        from occlint.stdin import lint_stdin

        result = lint_stdin(buffer, args.stdin_filename, config)
    else:
        result = lint_paths(args.paths, config, jobs=config.jobs, reuse=reuse)
    for notice in ([] if quiet else result.notices):
        print(notice if notice.startswith("occlint:") else f"occlint: notice: {notice}", file=sys.stderr)
    for error in result.errors:
        print(f"occlint: error: {error}", file=sys.stderr)
    findings = _fixable_only(result.findings, args)
    if changed is not None:
        findings = diffbase.keep_changed(findings, *changed)
    if known is not None:
        from occlint import baseline
        from occlint.commands.summary import plural

        findings, hidden = baseline.filter_known(findings, known, root=config.root, sources=result.sources)
        if hidden and not quiet:
            print(f"occlint: {plural(hidden, 'known finding')} hidden by {args.baseline}", file=sys.stderr)
    return result, findings


def _by_file(findings) -> dict[str, list]:
    by_file: dict[str, list] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    return by_file


def _display(path: str, root: str) -> str:
    from occlint.emit.concise import display_path

    return display_path(path, root)


def _fixable_only(findings, args):
    """Drop the fixes of rules outside --fixable/--extend-fixable or inside --unfixable (ruff's
    selection: the longest matching prefix decides, unfixable wins a tie)."""
    if not (args.fixable or args.unfixable or args.extend_fixable):
        return findings
    from occlint import record

    def longest(code, prefixes):
        return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

    allowed = [*(args.fixable or ["OCC"]), *(args.extend_fixable or [])]
    out = []
    for f in findings:
        if f.fix is not None and not (longest(f.code, allowed) > longest(f.code, args.unfixable or [])):
            f = record.replace(f, fix=None)
        out.append(f)
    return out


def _add_noqa(findings, result, args) -> int:
    """ruff's --add-noqa: a `// noqa: CODE` (`# noqa` on Python and build-file lines) on every
    line with a finding; the files keep their line endings. Prints how many were added."""
    import sys

    from occlint import noqa
    from occlint.commands import summary as say
    from occlint.discover import C_FAMILY_SUFFIXES
    from occlint.source.text import split_lines

    by_file: dict[str, list] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    added = 0
    failed = False
    for path, file_findings in sorted(by_file.items()):
        text = result.sources.get(path)
        if text is None or path.endswith(".json"):
            continue
        comment = "//" if path.endswith(C_FAMILY_SUFFIXES) else "#"
        lines = split_lines(text, keepends=True)
        changed = False
        here = 0
        for f in sorted(file_findings, key=lambda f: f.span.line):
            i = f.span.line - 1
            if not 0 <= i < len(lines):
                continue
            body = lines[i].rstrip("\r\n")
            end = lines[i][len(body):]
            where = noqa.add_code(body, f.code, comment)
            if where is None:
                continue
            at, insert = where
            lines[i] = body[:at] + insert + body[at:] + end
            here += 1
            changed = True
        if changed and not _write(path, text, "".join(lines)):
            failed = True
        elif changed:
            added += here
    if not (args.quiet or args.silent):
        print(f"Added {say.plural(added, 'noqa directive')}.", file=sys.stderr)
    return 2 if failed else 0


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


def _write(path: str, before: str, after: str) -> bool:
    """Write a fixed file (fix.write_fixed keeps BOM, mode, links and refuses a changed file);
    False, with one error line, when it cannot be written."""
    import sys

    from occlint import fix as fixing
    from occlint.errors import OcclintError

    try:
        fixing.write_fixed(path, before, after)
        return True
    except OcclintError as exc:
        print(f"occlint: error: {exc}", file=sys.stderr)
        return False


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
