"""`check --show-settings` and `check --show-files`, as in ruff: what would be used, then exit."""

from __future__ import annotations

import json

from occlint import record


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '""'
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
            return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(list(v))}" for k, v in value) + " }"
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


def show(args, config) -> int:
    import os

    from occlint.config import find_config_file
    from occlint.discover import discover
    from occlint.registry import selected
    from occlint.toolchain.cache import cache_dir

    paths = [p for p in args.paths or [] if p != "-"]
    if "-" in (args.paths or []):
        files = [args.stdin_filename] if args.stdin_filename else []
    else:
        python: list[str] = []
        cuda, builds = discover(paths, config, python)
        files = sorted({*cuda, *builds, *python})
    if args.show_files:
        for f in files:
            print(os.path.abspath(f))
        return 0
    first = files[0] if files else (paths[0] if paths else config.root)
    found = getattr(args, "settings_file", None) or \
        find_config_file(paths[0] if paths else args.stdin_filename)
    found = os.path.abspath(found) if found else found
    print(f'Resolved settings for: "{os.path.abspath(first)}"')
    print(f'Settings path: "{found}"' if found else "Settings path: (none; defaults)")
    print()
    print("# occlint settings")
    for field in record.fields(config):
        if field.name in ("extra",):
            continue
        value = getattr(config, field.name)
        if field.name == "cache_dir":
            value = str(cache_dir(config))
        print(f"{field.name.replace('_', '-')} = {_toml(value)}")
    print(f"rules.enabled = {_toml(selected(config, first))}")
    return 0
