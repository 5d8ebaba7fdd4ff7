"""Settings: `[tool.occlint]` in pyproject.toml, or occlint.toml / .occlint.toml.

The Config dataclass is the contract every part reads. `load_config` finds the closest file
walking up from a path, follows `extend`, validates every key (a near-miss gets a "did you mean")
and applies CLI overrides. Any problem is one `OcclintError` line naming the key and the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from occlint import record
from occlint.errors import OcclintError
from occlint.files import read_regular, toml
from occlint.record import dataclass, field

MAX_SECONDS = 86400      # compile-timeout: one day is more than any compile needs

@dataclass(frozen=True)
class Config:
    """The settings of one run: the config files, then the command line."""

    arch: tuple[str, ...] = ()               # empty: archs from the build flags, else ("sm_90",)
    gpu: str = "h100"
    select: tuple[str, ...] = ("OCC",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()     # added to `exclude` (ruff's extend-exclude)
    force_exclude: bool = False              # exclude even files named on the command line
    min_occupancy: float = 0.5
    cliff_margin: int = 4              # OCC010: half the 8-register allocation granule
    max_register_cut: float = 0.4      # OCC001: the largest share of a kernel's registers a cap
                                       # may remove (more is a rewrite: ptxas spills what is live)
    nvcc: str | None = None
    nvcc_flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    compile_commands: str | None = None
    cache_dir: str | None = None             # None: <project root>/.occlint_cache
    no_cache: bool = False
    jobs: int | None = None                  # None: os.cpu_count()
    compile_timeout: float = 300.0
    root: str = "."                          # project root (where the config file lives)
    extra: dict = field(default_factory=dict, compare=False, hash=False)


CONFIG_NAMES = (".occlint.toml", "occlint.toml", "pyproject.toml")   # precedence within one folder

# kebab-case key -> kind; the field is the key with "-" -> "_"
KEYS = {
    "arch": "archs", "gpu": "str", "select": "codes", "extend-select": "codes",
    "ignore": "codes", "per-file-ignores": "per-file", "exclude": "strs",
    "extend-exclude": "strs", "force-exclude": "bool",
    "min-occupancy": "fraction", "cliff-margin": "count", "max-register-cut": "fraction", "nvcc": "path",
    "nvcc-flags": "strs", "include-dirs": "paths", "defines": "strs",
    "compile-commands": "path", "cache-dir": "path", "no-cache": "bool", "jobs": "count",
    "compile-timeout": "seconds",
}
SPECIAL_KEYS = ("extend",)


def find_config_file(start: str | os.PathLike | None = None) -> Path | None:
    """The closest .occlint.toml, occlint.toml or pyproject.toml with [tool.occlint]."""
    here = Path(start or os.getcwd()).resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            if name != "pyproject.toml" or (_may_name_occlint(candidate) and
                                            "occlint" in _read_toml(candidate).get("tool", {})):
                return candidate
    return None


def _may_name_occlint(file: Path) -> bool:
    """Can this pyproject.toml hold a [tool.occlint] table? Not without the word, unless a key
    spells it with escapes: a project's own pyproject.toml is then not parsed (nor the TOML
    parser imported, ~15 ms of a warm run), and says nothing to occlint, valid or not."""
    try:
        data = read_regular(file)
    except OSError:
        return True             # _read_toml says why
    return b"occlint" in data or b"\\u" in data or b"\\U" in data


def project_root(start: str | os.PathLike | None = None, from_cwd: bool = False) -> Path:
    """Where the closest config file lives, else the closest folder with .git, else, with
    `from_cwd` (the command line's), the current folder when `start` is inside it (a tree with
    no .git, as ruff: paths and hints read from where occlint was run, whatever the order of
    the arguments), else `start`. (The language server's current folder may be `/`.)"""
    found = find_config_file(start)
    if found:
        return found.parent
    here = Path(start or os.getcwd()).resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    if not from_cwd:
        return here
    cwd = Path.cwd().resolve()
    return cwd if cwd.parent != cwd and (here == cwd or cwd in here.parents) else here


def load_config(path: str | os.PathLike | None = None, *, start: str | os.PathLike | None = None,
                overrides: dict | None = None, extend: dict | None = None,
                from_cwd: bool = False) -> Config:
    """Read `path` (or the closest config file from `start`), then apply `overrides`, then append
    `extend` (list keys: `extend-select`, `ignore` from the command line add to the file's).

    `overrides` uses kebab-case keys with values as in TOML (lists, strings, numbers). This is
    the one config loader: every command reaches it through `occlint.commands.options.load`.
    """
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise OcclintError(f"config file not found: {path}")
    else:
        file = find_config_file(start)
    values: dict = {}
    if file is not None:
        values = _load_chain(file.resolve(), ())
        root = file.resolve().parent
    else:
        root = project_root(start, from_cwd)
    for key, value in (overrides or {}).items():
        values[_check_key(key, "the command line")] = _check_value(key, value, "the command line", Path.cwd())
    for key, value in (extend or {}).items():
        values[key] = tuple(values.get(key, ())) + _check_value(key, value, "the command line", Path.cwd())
    return _build(values, root)


def config_from_table(table: dict, *, root: str | os.PathLike = ".", where: str = "settings") -> Config:
    """A Config from an in-memory table with kebab-case keys (tests, the language server)."""
    values = {key: _check_value(_check_key(key, where), value, where, Path(root).resolve())
              for key, value in table.items() if key != "extend"}
    return _build(values, Path(root).resolve())


def parse_inline(text: str) -> dict:
    """`--config "min-occupancy = 0.6"`: one TOML `key = value` pair."""
    try:
        return toml().loads(text)
    except toml().TOMLDecodeError as exc:
        raise OcclintError(f"--config {text!r} is neither a file nor a TOML `key = value`: {exc}") from None


def split_config_options(options) -> tuple[str | None, dict]:
    """Repeated `--config` values, as in ruff: (the one config file or None, the inline
    `key = value` pairs merged in order, later ones winning). A value is a file when it names one
    or has no `=`; two files are an error."""
    file = None
    inline: dict = {}
    for option in options:
        if os.path.isfile(option) or "=" not in option:
            if file is not None:
                raise OcclintError(f"only one --config file can be given ({file}, {option}); "
                                   "the other --config options must be inline `key = value` pairs")
            file = option
        else:
            inline.update(parse_inline(option))
    return file, inline


def _read_toml(file: Path) -> dict:
    try:
        return toml().loads(read_regular(file).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise OcclintError(f"{file}: not valid UTF-8 (byte {exc.start + 1})") from None
    except OSError as exc:
        raise OcclintError(f"cannot read {file}: {exc.strerror or exc}") from None
    except toml().TOMLDecodeError as exc:
        raise OcclintError(f"{file}: invalid TOML: {exc}") from None


def _table(file: Path) -> dict:
    data = _read_toml(file)
    if file.name == "pyproject.toml":
        data = data.get("tool", {}).get("occlint", {})
        if not isinstance(data, dict):
            raise OcclintError(f"{file}: [tool.occlint] must be a table")
    return data


def _load_chain(file: Path, seen: tuple[Path, ...]) -> dict:
    if file in seen:
        raise OcclintError(f"{file}: `extend` forms a cycle")
    table = _table(file)
    where = f"{file}" + (" [tool.occlint]" if file.name == "pyproject.toml" else "")
    values: dict = {}
    if "extend" in table:
        base = table["extend"]
        if not isinstance(base, str):
            raise OcclintError(f"{where}: `extend` must be a path string")
        base_file = (file.parent / os.path.expanduser(base)).resolve()
        if not base_file.is_file():
            raise OcclintError(f"{where}: `extend` names a missing file: {base}")
        values = _load_chain(base_file, (*seen, file))
    for key, value in table.items():
        if key == "extend":
            continue
        values[_check_key(key, where)] = _check_value(key, value, where, file.parent)
    return values


def _check_key(key: str, where: str) -> str:
    if key in KEYS:
        return key
    known = [*KEYS, *SPECIAL_KEYS]
    hint = _close(key.replace("_", "-").lower(), known, n=1, cutoff=0.6)
    suggestion = f"; did you mean `{hint[0]}`?" if hint else f"; known keys: {', '.join(sorted(known))}"
    raise OcclintError(f"{where}: unknown key `{key}`{suggestion}")


def _check_value(key: str, value, where: str, base: Path):
    kind = KEYS[_check_key(key, where)]

    def bad(expected: str):
        return OcclintError(f"{where}: `{key}` must be {expected}, got {value!r}")

    def strings(v) -> tuple[str, ...]:
        if isinstance(v, str):
            v = [s for s in re.split(r"[,\s]+", v) if s] if kind in ("codes", "archs") else [v]
        if not isinstance(v, (list, tuple)) or not all(isinstance(s, str) for s in v):
            raise bad("a list of strings")
        return tuple(v)

    if kind == "str":
        if not isinstance(value, str) or not value:
            raise bad("a string")
        if key == "gpu":
            return _check_gpu(value, where)
        return value
    if kind == "path":
        if not isinstance(value, str) or not value:
            raise bad("a path string")
        expanded = os.path.expanduser(value)
        if key == "nvcc" and os.sep not in expanded and "/" not in expanded:
            return expanded        # a command name found on PATH
        if key == "nvcc":          # links kept: the tracked-program guard looks at each one
            return os.path.join(base, expanded)
        return str((base / expanded).resolve())
    if kind == "paths":
        return tuple(str((base / os.path.expanduser(p)).resolve()) for p in strings(value))
    if kind == "strs":
        return strings(value)
    if kind == "codes":
        return tuple(_check_code(c, key, where) for c in strings(value))
    if kind == "archs":
        return tuple(_check_arch(a, where) for a in strings(value))
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "cliff-margin" else 1):
            raise bad("a positive integer")
        return value
    if kind == "fraction":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number between 0 and 1")
        value = float(value)
        if value > 1 and value <= 100:
            raise bad("a fraction between 0 and 1 (0.5, not 50)")
        if not 0 <= value <= 1:
            raise bad("a number between 0 and 1")
        return value
    if kind == "seconds":
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 < value <= MAX_SECONDS:      # nan, inf and 1e300 too
            raise bad(f"a positive number of seconds, at most {MAX_SECONDS}")
        return float(value)
    if kind == "per-file":
        if not isinstance(value, dict):
            raise bad('a table of glob = ["CODE", ...]')
        return tuple((glob, tuple(_check_code(c, key, where) for c in strings(codes)))
                     for glob, codes in value.items())
    raise AssertionError(kind)


def _check_code(code: str, key: str, where: str) -> str:
    from occlint import registry

    code = code.strip().upper()
    if code == "ALL":
        return "OCC"
    if any(c.startswith(code) for c in registry.RULES) and code.startswith("OCC"):
        return code
    digits = "OCC" + code[3:].replace("O", "0").replace("I", "1").replace("L", "1")
    hint = [digits] if any(c.startswith(digits) for c in registry.RULES) else \
        _close(code, list(registry.RULES), n=1, cutoff=0.6)
    suggestion = f"; did you mean `{hint[0]}`?" if hint else "; see `occlint rules`"
    raise OcclintError(f"{where}: `{key}` names unknown rule code `{code}`{suggestion}")


def _check_arch(spec: str, where: str) -> str:
    spec = spec.strip()
    try:
        from occlint import gpus
    except ImportError:
        gpus = None
    if gpus is not None and hasattr(gpus, "arch_name"):
        try:
            name = gpus.arch_name(spec)
        except Exception:
            pass
        else:   # a feature arch (sm_90a, sm_100f) keeps its suffix: nvcc compiles for it
            feature = re.fullmatch(r"(?:sm_|compute_)?\d+\.?\d([af])", spec.lower())
            return name + feature.group(1) if feature else name
    else:
        m = re.fullmatch(r"(?:sm_|compute_)?(\d)\.?(\d)([af]?)", spec.lower())
        if m:
            return f"sm_{m.group(1)}{m.group(2)}{m.group(3)}"
    raise OcclintError(f"{where}: `arch` has unknown architecture `{spec}` (expected e.g. sm_90 or 8.6)")


def _check_gpu(name: str, where: str) -> str:
    try:
        from occlint import gpus
    except ImportError:
        return name
    try:
        gpus.gpu(name)
    except Exception:
        known = list(getattr(gpus, "GPUS", {}) or [])
        hint = _close(name.lower(), [k.lower() for k in known], n=1, cutoff=0.6)
        suggestion = f"; did you mean `{hint[0]}`?" if hint else ""
        raise OcclintError(f"{where}: `gpu` names unknown GPU `{name}`{suggestion}") from None
    return name


def _build(values: dict, root: Path) -> Config:
    kwargs = {key.replace("-", "_"): value for key, value in values.items()}
    names = {f.name for f in record.fields(Config)}
    return Config(**{k: v for k, v in kwargs.items() if k in names}, root=str(root))


def _close(word: str, choices, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """difflib's close matches (imported only for a misspelt setting)."""
    import difflib
    return difflib.get_close_matches(word, choices, n=n, cutoff=cutoff)
