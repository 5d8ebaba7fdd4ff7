"""Which build flags occlint passes on to nvcc: none that makes a compile run a program or
write a file outside its private temp folder.

A compilation database and a config file come with the checkout, so a stranger's pull request
can write them, and nvcc hands parts of them to other programs: `-Xcompiler` words (and, with
`-forward-unknown-to-host-compiler`, every option nvcc does not know) to the host compiler,
`-Xptxas` words to ptxas and `-Xcudafe` words to cicc. Some of those load code (`-fplugin=`,
`-B`, `-specs=`, `-wrapper`, `@file`) or write files (`-o`, `-save-temps`, `-fdump-*`,
`--output-file`). `vet` keeps:

- nvcc's own options, except those that run or write something (`--run`, `--keep-dir`,
  `-odir`, `--time`, `--fdevice-time-trace`, `--archiver-binary`, `--clean-targets`, ...);
- host compiler words that read at most: `-I`/`-D`/`-U`/`-isystem`/`-include` and friends,
  `-W...`, `-f...` (not the ones that load or write: `-fplugin`, `-fdump-*`, ...), `-O`, `-g`,
  `-m...`, `-std=`, and MSVC's `/MD`-style options (not `/Fo`, `/B1`, ...);
- ptxas options from `ptxas --help` other than its output and options files; cicc's
  diagnostics options;
- a host compiler (`-ccbin`) whose name is a C++ compiler's and that the checkout does not
  ship (`host_compiler`).

Link options (`-Xlinker`, `-Xnvlink`, `-Xarchive`, `-Wl,`) and dependency-file options (`-MF`)
are dropped silently: a device-only compile never links, and occlint writes its own depfile.
Every other dropped word gets one warning.
"""

from __future__ import annotations

import os
import re
import shutil


def _names(text: str) -> set[str]:
    return set(text.split())


# nvcc's options (`nvcc --help`, CUDA 13): long and short names, with and without a value
_NVCC_VALUE = _names("""
output-file o pre-include include library l define-macro D undefine-macro U include-path I
system-include isystem library-path L output-directory odir compiler-bindir ccbin
archiver-binary arbin cudart cudadevrt libdevice-directory ldir target-directory target-dir
optimization-info opt-info optimize O Ofast-compile Ofc dopt ftemplate-backtrace-limit
ftemplate-depth x std machine m compiler-options Xcompiler linker-options Xlinker
archive-options Xarchive ptxas-options Xptxas nvlink-options Xnvlink Xcudafe cudafe-options
Xcicc cicc-options Xfatbin fatbin-options Xnvasm nvasm-options Xnvdisasm nvdisasm-options Xtrv
static-global-template-stub device-entity-has-hidden-visibility threads t split-compile
split-compile-extended fdevice-time-trace keep-dir time run-args input-drive-prefix idp
dependency-drive-prefix ddp drive-prefix dp dependency-target-name MT dependency-output MF
gpu-architecture arch gpu-code code generate-code gencode relocatable-device-code rdc
maxrregcount ftz prec-div prec-sqrt fmad default-stream Werror diag-error diag-suppress
diag-warn host-linker-script hls brief-diagnostics brief-diag jump-table-density jtd
device-stack-protector compress-mode frandom-seed sanitize options-file optf entries e
""")
_NVCC_FLAG = _names("""
cuda cubin fatbin ptx optix-ir ltoir preprocess E generate-dependencies M
generate-nonsystem-dependencies MM generate-dependencies-with-compile MD
generate-nonsystem-dependencies-with-compile MMD generate-dependency-targets MP compile c
device-c dc device-w dw device-link dlink link lib run objdir-as-tempdir objtemp
allow-unsupported-compiler use-local-env force-cl-env-setup profile pg debug g device-debug G
generate-line-info lineinfo dlink-time-opt dlto lto gen-opt-lto no-exceptions noeh shared
no-host-device-initializer-list nohdinitlist no-host-device-move-forward nohdmoveforward
expt-relaxed-constexpr extended-lambda expt-extended-lambda m64
forward-unknown-to-host-compiler forward-unknown-to-host-linker forward-unknown-opts
dont-use-profile noprof dryrun verbose v fdevice-syntax-only keep save-temps clean-targets
clean no-device-link nodlink use_fast_math extra-device-vectorization disable-warnings w
keep-device-functions source-in-ptx src-in-ptx restrict Wreorder Wdefault-stream-launch
Wmissing-launch-bounds Wext-lambda-captures-this Wno-deprecated-declarations
Wno-deprecated-gpu-targets resource-usage res-usage extensible-whole-program ewp no-compress
qpp-config compile-as-tools-patch astoolspatch list-gpu-code code-ls list-gpu-arch arch-ls
display-error-number err-no no-display-error-number no-err-no augment-host-linker-script
aug-hls relocatable-link r relocatable-ptx reloc-ptx jobserver help h version V no-align-double
""")
# nvcc options that run a program or write a file of their own
_NVCC_UNSAFE = _names("""
run run-args output-directory odir keep-dir time fdevice-time-trace archiver-binary arbin
clean-targets clean keep save-temps force-cl-env-setup options-file optf output-file o
Xnvasm nvasm-options Xnvdisasm nvdisasm-options Xtrv
""")
# nvcc options that only matter when linking, or stop nvcc from compiling: dropped silently
_NVCC_IRRELEVANT = _names("""
linker-options Xlinker archive-options Xarchive nvlink-options Xnvlink Xfatbin fatbin-options
help h version V
list-gpu-code code-ls list-gpu-arch arch-ls dryrun dependency-output MF
""")
_NVCC_JOINED = ("O", "D", "U", "I", "l", "L")      # short options written `-O3`, `-DX`, `-Ifoo`

# ptxas's options (`ptxas --help`, CUDA 13), without its output and options files
_PTXAS_VALUE = _names("""
Ofast-compile Ofc allow-expensive-optimizations device-function-maxrregcount func-maxrregcount
device-stack-protector entry e fmad gpu-name arch machine m maxntid maxrregcount minnctapersm
opt-level O position-independent-code pic register-usage-level regUsageLevel sanitize
split-compile
""")
_PTXAS_FLAG = _names("""
compile-as-tools-patch astoolspatch compile-only c compiler-annotations annotate
def-load-cache dlcm def-store-cache dscm device-debug g disable-optimizer-constants
disable-optimizer-consts disable-warnings w dont-merge-basicblocks no-bb-merge
extensible-whole-program ewp force-load-cache flcm force-store-cache fscm
g-tensor-memory-access-check g-tmem-access-check generate-line-info lineinfo
gno-tensor-memory-access-check gno-tmem-access-check legacy-bar-warp-wide-behavior
make-errors-visible-at-exit optimize-float-atomics opt-fp-atomics override-directive-values
preserve-relocs return-at-end ret-end sp-bounds-check suppress-async-bulk-multicast-advisory-warning
suppress-debug-info suppress-double-demote-warning suppress-sparse-mma-advisory-info
suppress-stack-size-warning verbose v warn-on-double-precision-use warn-double-usage
warn-on-local-memory-usage warn-lmem-usage warn-on-spills warn-spills warning-as-error Werror
""")

# cicc/cudafe++: its diagnostics options and an optimization level only (others name files)
_CUDAFE_SAFE = re.compile(r"--?(?:no_)?display_error_number|--?diag[_-](?:suppress|warning|warn|"
                          r"error|remark|default|once)(?:=[\w,-]+)?|-O\d")

# host compiler words that take the next word as their value (read-only values)
_HOST_VALUE = {"-I", "-D", "-U", "-isystem", "-iquote", "-idirafter", "-include", "-imacros",
               "-isysroot", "-iprefix", "-iwithprefix", "-iwithprefixbefore", "--sysroot",
               "-x", "--param", "-target", "-arch"}
# ... and those that take one and are dropped silently (dependency files, the linker's options)
_HOST_IRRELEVANT_VALUE = {"-MF", "-MT", "-MQ", "-Xlinker"}
# host compiler words that read at most (gcc, clang, MSVC)
_HOST_SAFE = re.compile(r"""
    -[DUI].+ | -(?:isystem|iquote|idirafter|include|imacros|isysroot|iprefix|iwithprefix
                  |iwithprefixbefore)=?.+ | --sysroot=.+ | --param=\S+ | --target=\S+ | -target\S+
  | -W(?![lap],)[\w=+.,:-]* | -f[\w+.,=:/-]+ | -O\w* | -g[\w=-]* | -m(?!llvm)[\w=.,+-]+
  | -std=[\w+:.-]+ | -ansi | -pedantic(?:-errors)? | -pthreads? | -w | -v | -pipe | -C | -CC
  | -P | -H | -undef | -trigraphs | -nostdinc(?:\+\+)? | -nostdlib(?:\+\+)? | -nodefaultlibs
  | -nostartfiles | -rdynamic | -shared | -static[\w+-]* | -pie | -no-pie | -s | -l\S+ | -L\S+
  | -x\w[\w+-]* | --coverage | -fopenmp
  | --(?:no_)?display_error_number | --diag[_-]\w+(?:=[\w,]+)?      # nvc++ (EDG)
  | /(?:MDd?|MTd?|LDd?|W[0-4]|Wall|WX-?|w[deo1-4]?\d{4}|w|EH\w+|GR-?|GS-?|Gy-?|GL-?|Gd|Gr|Gz
       |Gv|O[12bdgistxy]\d?-?|Z[i7I]|Zc:[\w,-]+|Zp\d*|Zl|Zs|FS|MP\d*|bigobj|utf-8
       |validate-charset-?|(?:source|execution)-charset:[\w.-]+|permissive-?|std:[\w+.]+
       |arch:\w+|fp:\w+|openmp(?::\w+)?|nologo|diagnostics:\w+|external:\S+|favor:\w+|Qpar
       |Qspectre-?|volatile:\w+|[DU]\S+|I\S+|FI\S+|TP|TC|J|sdl-?|guard:\w+|constexpr:\S+
       |Zm\d+|showIncludes|errorReport:\w+|Zf)
""", re.X)
_HOST_IRRELEVANT = re.compile(r"-M[DMPG]?|-MMD|-Wl,.*|-c")
# `-f` options that load code or write files (gcc, clang)
_F_UNSAFE = re.compile(r"-f(?:no-)?(?:[\w-]*plugin|dump|opt-info|callgraph-info|stack-usage|"
                       r"save-optimization-record|time-trace|proc-stat-report|crash-diagnostics|"
                       r"compare-debug|module|deps-|diagnostics-(?:format|add-output|set-output|"
                       r"log)|use-ld|ld-path)")

# a host compiler's program name: gcc, g++-12, x86_64-linux-gnu-g++, clang++-17, cl.exe, an MPI
# wrapper (mpicxx -> mpicxx.openmpi -> opal_wrapper), a compiler cache, ...
_HOST_COMPILER = re.compile(r"(?:[\w.+]+-)*(?:g\+\+|gcc|c\+\+|cc|clang\+\+|clang|clang-cl|cl|icpx|icpc|"
                            r"icx|icc|nvc\+\+|nvc|pgc\+\+|pgcc|xlc\+\+|xlC|xlc|armclang\+\+|armclang|"
                            r"mpicxx|mpic\+\+|mpiCC|mpicc|mpiicpc|mpiicpx|opal_wrapper|ccache|sccache|"
                            r"distcc)(?:_r)?(?:-[\d.]+)?(?:\.(?:openmpi|mpich|exe))?", re.I)


def option_words(value: str | None) -> list[str]:
    """The words of a tool option's value (`-Xcompiler=-O3,-Wall`, `-Xptxas "-v -O3"`)."""
    return [w for w in re.split(r"[,\s]+", value or "") if w]


def vet(flags: list[str], cwd: str) -> tuple[list[str], list[str]]:
    """(`flags` without anything that runs a program or writes a file, one warning per
    dropped flag). `cwd` is where nvcc runs (the database entry's `directory`): a relative
    `-ccbin` is found from there, as nvcc finds it."""
    out: list[str] = []
    warnings: list[str] = []
    i = 0
    while i < len(flags):
        arg = flags[i]
        i += 1
        if not arg.startswith("-"):
            out.append(arg)                    # an input nvcc reads
            continue
        name, value, joined = _nvcc_option(arg)
        if name is None:                        # not nvcc's: nvcc forwards it to the host compiler
            kept, dropped, i = _host_words([arg], flags, i)
            out += kept
            warnings += [_warning(w) for w in dropped]
            continue
        if name in _NVCC_VALUE and not joined:
            if i >= len(flags):
                break
            value, i = flags[i], i + 1
        if name in _NVCC_IRRELEVANT:
            continue
        if name in _NVCC_UNSAFE:
            warnings.append(_warning(arg if joined or name not in _NVCC_VALUE else f"{arg} {value}"))
            continue
        words = option_words(value)
        if name in ("compiler-options", "Xcompiler"):
            kept, dropped, _ = _host_words(words)
            warnings += [_warning(f"{arg.split('=')[0]} {w}") for w in dropped]
        elif name in ("ptxas-options", "Xptxas"):
            kept, dropped = _tool_words(words, _ptxas_ok)
            warnings += [_warning(f"{arg.split('=')[0]} {w}") for w in dropped]
        elif name in ("Xcudafe", "cudafe-options", "Xcicc", "cicc-options"):
            kept, dropped = _tool_words(words, _cudafe_ok)
            warnings += [_warning(f"{arg.split('=')[0]} {w}") for w in dropped]
        elif name in ("compiler-bindir", "ccbin"):
            why = host_compiler(value or "", cwd)
            if why:
                warnings.append(f"dropped `{arg.split('=')[0]} {value}`: {why}")
                continue
            out += [arg] if joined else [arg, value]
            continue
        else:
            out += [arg] if joined or name not in _NVCC_VALUE else [arg, value]
            continue
        if kept == words:
            out += [arg] if joined else [arg, value]          # as the build wrote it
        elif kept:
            out += [arg.split("=")[0], ",".join(kept)]
    return out, warnings


# NVRTC's options that write a file (a CSV of times, a trace, a precompiled header)
_NVRTC_UNSAFE = {"time", "fdevice-time-trace", "create-pch", "pch", "pch-dir"}


def vet_nvrtc(options: list[str]) -> tuple[list[str], list[str]]:
    """(NVRTC `options` from a Python file without those that write files, one warning per
    dropped option). NVRTC runs no program; its `-Xptxas` words are vetted as ptxas's."""
    out: list[str] = []
    warnings: list[str] = []
    i = 0
    while i < len(options):
        opt = options[i]
        i += 1
        name, eq, value = opt.lstrip("-").partition("=")
        if name in ("Xptxas", "ptxas-options"):
            if not eq and i < len(options):
                value, i = options[i], i + 1
            kept, dropped = _tool_words(option_words(value), _ptxas_ok)
            warnings += [_warning(f"{opt.partition('=')[0]} {w}") for w in dropped]
            out += [f"{opt.partition('=')[0]}={','.join(kept)}"] if kept else []
        elif name in _NVRTC_UNSAFE:
            warnings.append(_warning(opt))
        else:
            out.append(opt)
    return out, warnings


def _warning(flag: str) -> str:
    return (f"dropped `{flag}` from the build flags: occlint passes on only options known not "
            "to run a program or write a file")


def _nvcc_option(arg: str) -> tuple[str | None, str | None, bool]:
    """(nvcc's name for `arg`, its joined value, whether the value is joined); (None, ...)
    when `arg` is not one of nvcc's options."""
    bare = arg.lstrip("-")
    if arg.startswith("--") and bare not in _NVCC_VALUE | _NVCC_FLAG and "=" not in bare:
        return None, None, False
    if bare in _NVCC_FLAG or bare in _NVCC_VALUE:
        return bare, None, False
    name, eq, value = bare.partition("=")
    if eq and name in _NVCC_VALUE:
        return name, value, True
    if not arg.startswith("--") and bare[:1] in _NVCC_JOINED and len(bare) > 1:
        return bare[0], bare[1:], True
    return None, None, False


def _host_words(words: list[str], rest: list[str] | None = None,
                i: int = 0) -> tuple[list[str], list[str], int]:
    """(kept, dropped, next index) for host compiler words; an option's separate value comes
    from `words` itself or, for a forwarded option, from `rest` at `i`."""
    kept: list[str] = []
    dropped: list[str] = []
    j = 0
    while j < len(words):
        w = words[j]
        j += 1
        takes = w in _HOST_VALUE or w in _HOST_IRRELEVANT_VALUE or w in _HOST_UNSAFE_VALUE
        value = None
        if takes:
            if j < len(words):
                value, j = words[j], j + 1
            elif rest is not None and i < len(rest):
                value, i = rest[i], i + 1
        if w in _HOST_VALUE:
            kept += [w] if value is None else [w, value]
        elif w in _HOST_IRRELEVANT_VALUE or _HOST_IRRELEVANT.fullmatch(w):
            continue
        elif w in _HOST_UNSAFE_VALUE or not _host_safe(w):
            dropped.append(w if value is None else f"{w} {value}")
        else:
            kept.append(w)
    return kept, dropped, i


# host words whose value is a program, a file to write, or more options
_HOST_UNSAFE_VALUE = {"-o", "-B", "-specs", "-wrapper", "-aux-info", "-dumpdir", "-dumpbase",
                      "-dumpbase-ext", "-Xclang", "-mllvm", "-Xpreprocessor", "-Xassembler",
                      "-load", "--config", "-working-directory", "-ccc-install-dir",
                      "-ccc-gcc-name", "--gcc-toolchain", "--gcc-install-dir"}


def _host_safe(word: str) -> bool:
    return bool(_HOST_SAFE.fullmatch(word)) and not _F_UNSAFE.match(word)


def _ptxas_ok(word: str) -> tuple[bool, bool]:
    """(whether ptxas may get the option `word`, whether it takes the next word as its value)."""
    name = word.lstrip("-").partition("=")[0]
    if name in _PTXAS_VALUE:
        return True, "=" not in word
    if name in ("o", "output-file", "optf", "options-file", "ias", "input-as-string"):
        return False, "=" not in word          # an output file, or options or PTX from a file
    return name in _PTXAS_FLAG or re.fullmatch(r"O\d", name) is not None, False


def _cudafe_ok(word: str) -> tuple[bool, bool]:
    return _CUDAFE_SAFE.fullmatch(word) is not None, False


def _tool_words(words: list[str], ok) -> tuple[list[str], list[str]]:
    """(kept, dropped) for ptxas's or cicc's words: options as `ok` says, with their separate
    values; any other word would be read as an input file."""
    kept: list[str] = []
    dropped: list[str] = []
    j = 0
    while j < len(words):
        w = words[j]
        j += 1
        good, takes = ok(w) if w.startswith("-") else (False, False)   # a lone word: an input
        if takes and j < len(words):
            w, j = f"{w} {words[j]}", j + 1
        (kept if good else dropped).append(w)
    return [p for w in kept for p in w.split(" ")], dropped


def host_compiler(value: str, cwd: str) -> str | None:
    """Why nvcc must not run the host compiler `value` (a `-ccbin` from a database entry whose
    `directory` is `cwd`), or None when it may. It must be a C++ compiler's name (as given
    and after symlinks) and no file on its way may be one the checkout ships."""
    from occlint.toolchain.discover import shipped_by_repository

    if not value:
        return "no host compiler named"
    path = program_path(value, cwd)
    programs = [os.path.join(path, n) for n in ("gcc", "g++")] if os.path.isdir(path) else [path]
    for prog in programs:
        names = {os.path.basename(prog), os.path.basename(os.path.realpath(prog))}
        if not all(_HOST_COMPILER.fullmatch(n) for n in names):
            return "not the name of a C++ compiler"
        if shipped_by_repository(prog):
            return "a host compiler the repository tracks is never run"
    return None


def program_path(value: str, cwd: str) -> str:
    """The program a `-ccbin`/nvcc path names when run in `cwd`: relative paths from `cwd`, a
    bare name from PATH (the one home for resolving a program named in a database)."""
    if os.sep in value or "/" in value:
        return os.path.join(cwd, value)
    return shutil.which(value) or os.path.join(cwd, value)
