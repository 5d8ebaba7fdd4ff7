"""`occlint rule CODE`: print one rule's page from its TOML."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("code", help="rule code (OCC010) or name (register-cliff)")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")


def find(code: str) -> str:
    import difflib

    from occlint.errors import OcclintError
    from occlint.registry import RULES

    key = code.strip().upper()
    if key in RULES:
        return key
    by_name = {r.name: c for c, r in RULES.items()}
    if code.strip().lower() in by_name:
        return by_name[code.strip().lower()]
    hint = difflib.get_close_matches(key, list(RULES), n=1) or \
        [by_name[n] for n in difflib.get_close_matches(code.lower(), list(by_name), n=1)]
    raise OcclintError(f"unknown rule `{code}`" + (f"; did you mean `{hint[0]}`?" if hint else "; see `occlint rules`"))


def run(args) -> int:
    import json
    import sys

    from occlint import record
    from occlint.registry import RULES, page

    code = find(args.code)
    if args.output_format == "json":
        data = {k: v for k, v in record.asdict(RULES[code]).items() if k != "path"}
        data["url"] = RULES[code].url
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(page(code))
    return 0
