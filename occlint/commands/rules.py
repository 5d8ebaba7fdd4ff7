"""`occlint rules`: list every rule."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--output-format", choices=("text", "json"), default="text")


def run(args) -> int:
    import json
    import sys

    from occlint.registry import RULES

    if args.output_format == "json":
        sys.stdout.write(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity,
                                      "summary": r.summary, "fixable": bool(r.fix_title),
                                      "url": r.url} for r in RULES.values()], indent=2) + "\n")
        return 0
    width = max(len(r.name) for r in RULES.values())
    for r in RULES.values():
        mark = "[*]" if r.fix_title else "   "
        sys.stdout.write(f"{r.code}  {mark} {r.name:<{width}}  {r.severity:<7}  {r.summary}\n")
    return 0
