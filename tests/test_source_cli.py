"""`occlint kernels`: text and JSON output, directories, missing paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli, run_main

CASES = Path(__file__).parent / "source_cases"


def test_json_records(tmp_path):
    r = run_cli("kernels", "--json", str(CASES / "launches.cu"))
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    kinds = {rec["kind"] for rec in records}
    assert kinds == {"kernel", "launch", "attribute"}
    for rec in records:
        assert {"kind", "path", "line", "name"} <= set(rec)
        assert rec["path"].endswith("launches.cu") and rec["line"] >= 1
    launches = [rec for rec in records if rec["kind"] == "launch"]
    first = launches[0]
    assert (first["name"], first["grid"], first["block"], first["dynamic_smem"]) == \
        ("k", 16, 256, 0)
    runtime = [rec for rec in launches if rec["runtime_block"]]
    assert len(runtime) == 1 and runtime[0]["block"] is None
    assert any(rec["grid"] is None for rec in launches)


def test_text_output_and_directory_recursion(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(CASES / "shared.cu", tmp_path / "sub" / "a.cu")
    shutil.copy(CASES / "kernels.cu", tmp_path / "b.cuh")
    (tmp_path / "notes.txt").write_text("__global__ void not_cuda() {}")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.cu").write_text("__global__ void hidden_dir() {}")
    r = run_cli("kernels", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "kernel block_reduce_naive" in out and "kernel outer::inner::nested" in out
    assert "shared float smem[4096]: 16 KiB in block_reduce_naive; " \
        "3/4 subscripts thread-derived" in out
    assert "__launch_bounds__(BLOCK, MIN_BLOCKS) = (256, 2)" in out
    assert "not_cuda" not in out and "hidden_dir" not in out
    assert out.index("b.cuh") < out.index("a.cu")          # files in sorted path order


def test_missing_path_is_one_line_and_others_still_listed(tmp_path):
    r = run_cli("kernels", str(tmp_path / "nope.cu"), str(CASES / "kernels.cu"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"occlint: error: no such file or directory: {tmp_path / 'nope.cu'}"]
    assert "kernel plain" in r.stdout
    assert "Traceback" not in r.stderr


def test_binary_garbage_file_is_listed_without_error(tmp_path):
    (tmp_path / "junk.cu").write_bytes(b"\xff\x00\xfe__global__ void k() {}\x00")
    r = run_cli("kernels", "--json", str(tmp_path / "junk.cu"))
    assert r.returncode == 0, r.stderr
    assert [rec["name"] for rec in json.loads(r.stdout)] == ["k"]


def _big_listing(root: Path) -> None:
    """~40 files over MIN_SHARE_BYTES x 2, with headers their units include, so `kernels`
    shares them among two processes."""
    (root / "inc").mkdir()
    (root / "inc" / "cfg.cuh").write_text("#pragma once\nconstexpr int kBlock = 128;\n"
                                          "#define TILE 32\nstruct Pair { int a, b; };\n")
    filler = "// " + "x" * 200 + "\n"
    for i in range(40):
        (root / f"k{i:02}.cu").write_text(
            '#include "inc/cfg.cuh"\n'
            f"__global__ void __launch_bounds__(256) k{i}(float* x) {{\n"
            f"    __shared__ float tile[TILE][TILE + {i % 3}];\n"
            "    tile[threadIdx.y][threadIdx.x] = x[threadIdx.x];\n    x[0] = tile[0][0];\n}\n"
            + filler * 70
            + f"void run{i}(float* x) {{ k{i}<<<{i + 1}, kBlock>>>(x); "
            f"k{i}<<<dim3(4, 4), dim3(TILE, {i % 4 + 1})>>>(x); }}\n")


def test_a_shared_listing_is_the_listing_of_one_process(tmp_path):
    # two processes (--jobs 2, past MIN_SHARE_BYTES) print exactly what one does, in order
    from occlint.commands.kernels import MIN_SHARE_BYTES, PIECES_PER_JOB, _shares

    _big_listing(tmp_path)
    files = sorted(str(p) for p in tmp_path.glob("*.cu"))
    shares, workers, regions = _shares(files, [Path(f).stat().st_size for f in files], 2)
    assert workers == 2 and len(shares) == 2 * PIECES_PER_JOB and sum(shares, []) == files
    # a region of consecutive files per process, each cut into runs that shrink
    assert regions == [list(range(PIECES_PER_JOB)), list(range(PIECES_PER_JOB, 2 * PIECES_PER_JOB))]
    assert len(shares[0]) > len(shares[PIECES_PER_JOB - 1])
    assert sum(Path(f).stat().st_size for f in files) > 2 * MIN_SHARE_BYTES
    # one process in this one (no fork), two in a child process (forking a pytest worker is not
    # what a user runs)
    one = run_main("kernels", ".", "--no-compile", "--json", "--jobs", "1", cwd=tmp_path)
    two = run_cli("kernels", ".", "--no-compile", "--json", "--jobs", "2", cwd=tmp_path)
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout
    recs = json.loads(two.stdout)
    assert [r["name"] for r in recs if r["kind"] == "kernel"] == [f"k{i}" for i in range(40)]
    assert {r["block"] for r in recs if r["kind"] == "launch"} >= {128, 32, 64, 96}
    text_one = run_main("kernels", ".", "--no-compile", "--jobs", "1", cwd=tmp_path).stdout
    assert text_one == run_cli("kernels", ".", "--no-compile", "--jobs", "2", cwd=tmp_path).stdout


def test_fork_map_is_map_and_redoes_what_a_copy_could_not(tmp_path):
    import os

    from occlint.process import fork_map

    parent = os.getpid()
    assert fork_map(lambda n: [n, n * n], [1, 2, 3]) == [[1, 1], [2, 4], [3, 9]]

    def only_here(n):
        if os.getpid() != parent:
            raise RuntimeError("fails in the copy")
        return {"n": n}

    assert fork_map(only_here, [5, 6]) == [{"n": 5}, {"n": 6}]
    assert fork_map(lambda n: n, []) == [] and fork_map(lambda n: n, [7]) == [7]


FORK_MAP = """
import os, sys, tempfile, time
from occlint.process import fork_map

parent = os.getpid()
folder = tempfile.mkdtemp()

def slow(n):    # an item waits (10 s at most) until the other process has taken one too: a
    me, other = ("parent", "copy") if os.getpid() == parent else ("copy", "parent")
    open(os.path.join(folder, me), "a").close()     # loaded host may start either late (CI:
    end = time.monotonic() + 10                     # all 8 here; here: all 8 in the copy)
    while not os.path.exists(os.path.join(folder, other)) and time.monotonic() < end:
        time.sleep(0.01)
    return [n, os.getpid()]

got = fork_map(slow, list(range(8)), 2)
assert [n for n, _ in got] == list(range(8)), got
assert len({pid for _, pid in got}) == 2, got

def fails_in_copy_at_three(n):
    time.sleep(0.02 if os.getpid() == parent else 0)
    if n == 3 and os.getpid() != parent:
        raise RuntimeError("the copy dies holding item 3")
    return n * 10

assert fork_map(fails_in_copy_at_three, list(range(8)), 2) == [n * 10 for n in range(8)]

taken = []
def in_step(n):     # the k-th item a process takes waits until the other has taken its k-th:
    me, other = ("parent", "copy") if os.getpid() == parent else ("copy", "parent")
    taken.append(n)                     # neither runs out of its own region first
    open(os.path.join(folder, f"{me}{len(taken)}"), "a").close()
    end = time.monotonic() + 10
    while not os.path.exists(os.path.join(folder, f"{other}{len(taken)}")) and \
            time.monotonic() < end:
        time.sleep(0.01)
    return [n, os.getpid()]

got = fork_map(in_step, list(range(8)), 2, [[4, 5, 6, 7], [0, 1, 2, 3]])
assert [n for n, _ in got] == list(range(8)), got
assert {pid for _, pid in got[4:]} == {parent} and parent not in {pid for _, pid in got[:4]}, got
assert fork_map(lambda n: n + 1, [1, 2, 3], 1) == [2, 3, 4]
for name in os.listdir(folder):
    os.remove(os.path.join(folder, name))
os.rmdir(folder)
import atexit                   # the copies are reaped by occlint's exit at the latest: none is
atexit._run_exitfuncs()         # left a zombie for init, and their CPU time is occlint's
try:
    os.waitpid(-1, os.WNOHANG)
    raise AssertionError("a copy was not reaped")
except ChildProcessError:
    pass
print("ok")
"""


def test_fork_map_hands_items_out_one_by_one():
    # two processes over eight slow items: each takes the next when done, so both work, the
    # results keep the items' order, and a copy that fails midway has its items redone here;
    # with regions, each process takes its own region's items (the first is this process's).
    # In a fresh interpreter: fork_map works in-process where a thread runs (a test worker may
    # hold one from another test)
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", FORK_MAP], capture_output=True, text=True)
    assert proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_the_listing_encoder_writes_what_json_writes():
    # kernels --json formats records with its own indented encoder: the same text as
    # json.dumps(indent=1), checked on random nested values of every JSON type
    import random

    from occlint.commands.kernels import _indented

    rng = random.Random(7)

    def value(depth: int):
        kind = rng.randrange(9 if depth < 4 else 6)
        if kind == 0:
            return None
        if kind == 1:
            return rng.random() < 0.5
        if kind == 2:
            return rng.randrange(-10**20, 10**20)
        if kind == 3:
            return rng.choice([0.5, -1e300, float("inf"), float("nan"), 3.0])
        if kind in (4, 5):
            return "".join(rng.choice('ab"\\\n\té\u2603\x00/') for _ in range(rng.randrange(6)))
        if kind == 6:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 7:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        return {f"k{i}\"": value(depth + 1) for i in range(rng.randrange(4))}

    for v in [*(value(0) for _ in range(500)), {1: [2, {None: 3}]}, {"a": {True: "b"}}]:
        assert _indented(v, " ") == json.dumps(v, indent=1).replace("\n", "\n "), v


def _launches(root, source: str) -> list[dict]:
    """The launch records of `occlint kernels --no-compile --json d.cu`, d.cu holding `source`."""
    (root / "d.cu").write_text(source)
    r = run_main("kernels", "--no-compile", "--json", "d.cu", cwd=root)
    return [x for x in json.loads(r.stdout) if x["kind"] == "launch"]


def test_a_launch_through_a_function_pointer_says_so(tmp_path):
    # GPU MODE's lecture_008 (and ggml's ggml_cuda_kernel_launch): `kernel<<<...>>>` on a
    # parameter said "nvcc reported no figures for `kernel` (defined in a file not listed...)";
    # a call of it in the file is a launch of the kernel it passes (source.forwarded)
    source = (
        "__global__ void a(int* d) { d[threadIdx.x] *= 2; }\n"
        "void bench(void (*kernel)(int*), int* d) { kernel<<<4, 256>>>(d); }\n"
        "void lone(void (*kernel)(int*), int* d) { kernel<<<4, 256>>>(d); }\n"
        "void run(int* d) { bench(a, d); a<<<4, 256>>>(d); }\n")
    got = [(x["name"], x["line"], x["block"], x["no_occupancy"]) for x in _launches(tmp_path, source)]
    assert got[0] == ("kernel", 3, 256, "`kernel` is a variable of `lone` (a function pointer), "
                      "which occlint does not follow to a kernel")
    assert [g[:3] for g in got[1:]] == [("a", 4, 256), ("a", 4, 256)]
    assert all(g[3].startswith("not compiled") for g in got[1:])


def test_a_launch_of_a_template_parameter_says_so(tmp_path):
    # ThunderKittens' pyutils.cuh: `template <auto kernel, ...> void bind_kernel(...) { ...
    # kernel<<<g.grid(), g.block()>>>(g); }` said "`kernel` is a variable of `bind_kernel` (a
    # function pointer)"
    source = ("__global__ void a(int* d) { d[threadIdx.x] *= 2; }\n"
              "template <auto kernel, typename T> void bind_kernel(T m, int* d) {\n"
              "  auto run = [=]() { kernel<<<4, 256>>>(d); };\n  run();\n}\n")
    [r] = _launches(tmp_path, source)
    assert r["no_occupancy"] == ("`kernel` is a template parameter of `bind_kernel` (the kernel "
                                 "each instantiation names), which occlint does not follow to "
                                 "a kernel")


LAUNCHER = """\
#pragma once
namespace dh {
class LaunchKernel {
  dim3 grids_, blocks_;
  size_t shmem_size_;
 public:
  LaunchKernel(unsigned g, unsigned b, size_t shmem = 0, cudaStream_t s = nullptr)
      : grids_{g, 1, 1}, blocks_{b, 1, 1}, shmem_size_{shmem} {}
  LaunchKernel(dim3 g, dim3 b, size_t shmem = 0, cudaStream_t s = nullptr)
      : grids_{g}, blocks_{b}, shmem_size_{shmem} {}
  template <typename K, typename... Args>
  void operator()(K kernel, Args... args) {
    kernel<<<grids_, blocks_, shmem_size_, nullptr>>>(args...);
  }
};
}  // namespace dh
"""


def test_launches_through_a_launcher_object_of_a_header_are_read_at_each_call(tmp_path):
    # xgboost's `dh::LaunchKernel{grid, block, smem, stream}(kernel, ...)` (17 launches, the
    # class in device_helpers.cuh): the only launch listed was the header's `kernel<<<grids_,
    # blocks_, ...>>>`, "a variable of `operator()`". Each construction the file calls is a
    # launch of the kernel it passes, with the members the chosen constructor makes of its
    # arguments (a `dim3` argument picks the `dim3` constructor).
    (tmp_path / "launcher.cuh").write_text(LAUNCHER)
    (tmp_path / "use.cu").write_text(
        '#include "launcher.cuh"\n'
        "__global__ void clear(float* x, int n) { x[threadIdx.x] = 0.f; }\n"
        "template <int B> __global__ void restore(float* x, int n) { x[threadIdx.y] = 1.f; }\n"
        "void run(float* x, int n) {\n"
        "  unsigned constexpr kBlockThreads = 256;\n"
        "  dh::LaunchKernel launch{(n + 255) / 256, kBlockThreads};\n"
        "  launch(clear, x, n);\n"
        "  dh::LaunchKernel{1u, 1u, 0, nullptr}(clear, x, n);\n"
        "  dim3 const block3(16, 64, 1);\n"
        "  dh::LaunchKernel{dim3(4, 4, 1), block3}(restore<16>, x, n);\n"
        "  dh::LaunchKernel(dim3(4), dim3(32, 8), 1024)(restore<8>, x, n);\n"
        "  auto kernel = clear;\n"
        "  dh::LaunchKernel{2u, 96u}(kernel, x, n);\n"
        "}\n")
    r = run_main("kernels", "--no-compile", "--json", "use.cu", "launcher.cuh", cwd=tmp_path)
    got = [(x["path"], x["line"], x["name"], x["template_args"], x["grid"], x["block"],
            x["dynamic_smem"], x["block_text"])
           for x in json.loads(r.stdout) if x["kind"] == "launch"]
    assert got == [
        ("use.cu", 7, "clear", [], None, 256, 0, "dim3(kBlockThreads, 1, 1)"),
        ("use.cu", 8, "clear", [], 1, 1, 0, "dim3(1u, 1, 1)"),
        ("use.cu", 10, "restore", ["16"], 16, 1024, 0, "block3"),
        ("use.cu", 11, "restore", ["8"], 4, 256, 1024, "dim3(32, 8)"),
        ("use.cu", 13, "clear", [], 2, 96, 0, "dim3(96u, 1, 1)"),
        ("launcher.cuh", 13, "kernel", [], None, None, None, "blocks_")]


def test_a_launch_through_an_array_of_function_pointers_is_listed_and_says_so(tmp_path):
    # NVIDIA-developer-blog's finite-difference.cu: `fpDeriv[fp]<<<grid[fp], block[fp]>>>` was
    # missing from the listing, with no reason given
    source = (
        "__global__ void a(float* d) {}\n__global__ void b(float* d) {}\n"
        "void run(float* d) {\n  void (*fp[2])(float*);\n  fp[0] = a; fp[1] = b;\n"
        "  for (int i = 0; i < 2; i++)\n    fp[ i ]<<<4, 100>>>(d);\n}\n")
    launch = _launches(tmp_path, source)[0]
    assert (launch["name"], launch["line"], launch["block"]) == ("fp[ i ]", 7, 100)
    assert launch["no_occupancy"] == ("`fp[ i ]` is an element of `fp`, an array of function "
                                      "pointers, which occlint does not follow to a kernel")


def test_kernels_says_a_compile_error_once(tmp_path, nvcc_path):
    # apex: `kernels .` printed one nvcc error 784 times (per arch, per unit including it)
    (tmp_path / "bad.cuh").write_text("__device__ int f() { return undefined_name; }\n")
    for n in ("a", "b"):
        (tmp_path / f"{n}.cu").write_text('#include "bad.cuh"\n__global__ void k_%s() {}\n' % n)
    r = run_main("kernels", "--arch", "sm_80,sm_90", "--no-cache", "--config", f"nvcc = {nvcc_path!r}",
                 "a.cu", "b.cu", "bad.cuh", cwd=tmp_path)
    warnings = [ln for ln in r.stderr.splitlines() if "undefined_name" in ln]
    assert len(warnings) == len(set(warnings)) >= 1, r.stderr


def test_kernels_lists_a_file_that_launches_only_through_a_headers_macro(tmp_path):
    # CloverLeaf: its units have no `<<<` of their own (cuda_common.hpp's
    # `CUDALAUNCH(kernel, ...)`), and the listing's word filter skipped them: 4 of 34 launches
    (tmp_path / "common.hpp").write_text(
        "#define BLOCK_SZ 256\n"
        "#define CUDALAUNCH(funcname, ...) \\\\\n    funcname<<<num_blocks, BLOCK_SZ>>>(__VA_ARGS__)\n"
        "#define CHECK(x) (x)\n")
    (tmp_path / "k.cuh").write_text("__global__ void ideal_gas(double *d) {}\n")
    (tmp_path / "ideal.cu").write_text('#include "common.hpp"\n#include "k.cuh"\n'
                                       "void run(double *d, int num_blocks) {\n"
                                       "  CUDALAUNCH(ideal_gas, d);\n}\n")
    (tmp_path / "other.cu").write_text('#include "common.hpp"\nint f(int x) { return CHECK(x); }\n')
    r = run_cli("kernels", "--no-compile", "ideal.cu", "other.cu", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ideal.cu:4:3: launch ideal_gas<<<num_blocks, BLOCK_SZ>>> grid=? block=256" in r.stdout
    assert "other.cu" not in r.stdout


def test_kernels_lists_a_header_written_with_a_headers_kernel_macro(tmp_path):
    # pytorch3d's pulsar: `GLOBAL void fill(...)` (`#define GLOBAL __global__` in global.h)
    # has none of the words the listing's filter looked for
    (tmp_path / "global.h").write_text("#define GLOBAL __global__\n")
    (tmp_path / "fill.device.h").write_text(
        '#include "global.h"\ntemplate <bool D> GLOBAL void fill(float* x) { x[0] = 1; }\n')
    r = run_cli("kernels", "--no-compile", "fill.device.h", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "fill.device.h:2:31: kernel fill<D>\n"


def test_a_launch_api_call_on_a_function_pointer_parameter_says_so(tmp_path):
    # CUTLASS's launch_kernel_on_cluster: `cudaLaunchKernelExC(&cfg, kernel, kargs)` in a generic
    # wrapper said "the block size `` is not a compile-time constant" (an empty name)
    source = ("__global__ void k(float* x) {}\n"
              "cudaError_t wrap(const void* kernel, cudaLaunchConfig_t cfg, void** args) {\n"
              "  return cudaLaunchKernelExC(&cfg, kernel, args);\n}\n")
    [r] = _launches(tmp_path, source)
    assert r["no_occupancy"] == ("`kernel` is a variable of `wrap` (a function pointer), which "
                                 "occlint does not follow to a kernel")
    from occlint.commands.kernels import launch_text, why_no_occupancy
    assert launch_text(r) == "cudaLaunchKernelEx(kernel)"
    assert why_no_occupancy({**r, "name": "k"}, False, set()) == (
        "the block size is not a compile-time constant (its launch configuration is not read)")
    # a failed compile is said for every launch, whatever its words (not read off the message)
    assert why_no_occupancy({**r, "name": "k"}, False, set(), None, "the unit did not build",
                            failed=True) == "the unit did not build"
    assert why_no_occupancy({**r, "name": "k"}, False, set(), None, "nvcc failed on it") == (
        "the block size is not a compile-time constant (its launch configuration is not read)")


def test_a_block_named_nowhere_through_a_local_or_beside_a_comment_says_so(tmp_path):
    # cudpp: `unsigned nThreads = CTA_THREADS;` and `dim3 threads(CTA_THREADS, 1, 1)` of a header
    # occlint did not find, or the name in a comment, gave "not a compile-time constant" (38
    # launches that all had their block once include-dirs was set); a call or a declared
    # variable stays as it was
    source = ('// block size: CTA_THREADS\n#include "globals.h"\n__global__ void k(float* p) {}\n'
              "int declared;\n"
              "void run(float* p, int n) {\n  unsigned int nThreads = CTA_THREADS;\n"
              "  dim3 threads(CTA_THREADS, 1, 1);\n  int fromcall = getThreads();\n"
              "  int fromvar = declared;\n"
              "  k<<<n / CTA_THREADS, CTA_THREADS>>>(p);\n  k<<<n / nThreads, nThreads>>>(p);\n"
              "  k<<<n, threads>>>(p);\n  k<<<n, fromcall>>>(p);\n  k<<<n, fromvar>>>(p);\n}\n")
    why = [x["no_occupancy"] for x in _launches(tmp_path, source)]
    nowhere = ("defined nowhere occlint looked (this file, the project headers it includes, the "
               "compile flags): if a header defines it, add that header's folder to `include-dirs`")
    assert why == [f"the block size `CTA_THREADS` is {nowhere}",
                   f"the block size `nThreads` is `CTA_THREADS`, which is {nowhere}",
                   f"the block size `threads` is `CTA_THREADS`, which is {nowhere}",
                   "the block size `fromcall` is not a compile-time constant",
                   "the block size `fromvar` is not a compile-time constant"]


def test_a_local_of_a_headers_launch_macro_is_not_named_nowhere(tmp_path):
    # pytorch3d's pulsar: `unsigned num_threads = min(N, TN);` in LAUNCH_PARALLEL_1D's body
    # (a header): "defined nowhere occlint looked ... add that header's folder" was false
    (tmp_path / "launch.h").write_text(
        "#define LAUNCH_1D(F, N, TN, ...) { \\\n  unsigned num_threads = min((int)(N), (int)(TN)); \\\n"
        "  F<<<((N) + num_threads - 1) / num_threads, num_threads>>>(__VA_ARGS__); }\n")
    source = ('#include "launch.h"\n__global__ void k(float* x, int n) {}\n'
              "void run(float* x, int n) { LAUNCH_1D(k, n, 256, x, n); }\n")
    [why] = [x["no_occupancy"] for x in _launches(tmp_path, source)]
    assert why == "the block size `num_threads` is not a compile-time constant"


def test_a_block_parameter_of_a_function_the_file_never_calls_says_so(tmp_path):
    # pytorch3d's knn: the launch is in a functor's `run(blocks, threads, ...)`, called only
    # from dispatch.cuh; "not every call of it in this file passes a constant" named no call
    source = ("template <int D> __global__ void k(float* x) {}\n"
              "template <int D> struct F { static void run(int blocks, int threads, float* x) {\n"
              "  k<D><<<blocks, threads>>>(x); } };\n"
              "void g(float* x, int b) { h(b, x); }\nvoid h(int b, float* x) { k<1><<<1, b>>>(x); }\n")
    why = [x["no_occupancy"] for x in _launches(tmp_path, source)]
    assert why == ["the block size `threads` is a parameter of `run`, which this file does not "
                   "call (another file's call is read only for a dim3 block, in a file beside "
                   "this one that includes the header of its name)",
                   "the block size `b` is a parameter of `h`, and not every call of it in this "
                   "file passes a constant (a call from another file is not read)"]


def test_kernels_lists_a_launch_through_a_headers_launch_api_macro(tmp_path):
    # NCCL's nccl_ep: macros.cuh's `LAUNCH_KERNEL(config, kernel, ...)` is cudaLaunchKernelEx;
    # its uses in low_latency.cu were not listed
    (tmp_path / "macros.cuh").write_text(
        "#define LAUNCH_KERNEL(config, kernel, ...) cudaLaunchKernelEx(config, kernel, ##__VA_ARGS__)\n")
    source = ('#include "macros.cuh"\ntemplate <int N> __global__ void clean(int* p) {}\n'
              "void run(int* p, cudaLaunchConfig_t cfg) {\n  LAUNCH_KERNEL(&cfg, clean<128>, p);\n}\n")
    [r] = _launches(tmp_path, source)
    assert (r["name"], r["line"], r["template_args"], r["launch_kind"]) == (
        "clean", 4, ["128"], "cudaLaunchKernelEx")


def test_a_block_named_nowhere_says_where_occlint_looked(tmp_path):
    # DeepSpeed: a block macro from a header occlint did not find was only "not a compile-time
    # constant"; a local or a parameter says what it is
    source = (
        '#include "missing_config.h"\n__global__ void k(float* x) {}\n'
        "void run(float* x, int n) {\n  int b = n;\n  k<<<10, BLOCK_SIZE>>>(x);\n"
        "  k<<<10, b>>>(x);\n}\n")
    why = [x["no_occupancy"] for x in _launches(tmp_path, source)]
    assert why == ["the block size `BLOCK_SIZE` is defined nowhere occlint looked (this file, the "
                   "project headers it includes, the compile flags): if a header defines it, add "
                   "that header's folder to `include-dirs`",
                   "the block size `b` is not a compile-time constant"]


def test_a_constant_in_the_seventieth_included_header_is_read(tmp_path):
    # gsplat with glm on the include path: `<glm/glm.hpp>` pulls in dozens of headers before
    # the project's IntersectMTConfig.h, and constants from the 65th included header on were
    # "defined nowhere occlint looked" (block sizes 256/256/32/256/768 lost)
    for i in range(70):
        (tmp_path / f"pad{i}.h").write_text(f"#pragma once\nconstexpr int PAD{i} = {i};\n")
    (tmp_path / "common.h").write_text("".join(f'#include "pad{i}.h"\n' for i in range(70)))
    (tmp_path / "cfg.h").write_text("#pragma once\nconstexpr int WORDS = 24;\n")
    source = ('#include "common.h"\n#include "cfg.h"\nstatic constexpr int THREADS = 8 * WORDS;\n'
              "__global__ void k(int *p) { p[threadIdx.x] = WORDS; }\n"
              "void run(int *p) { k<<<4096, WORDS>>>(p); k<<<4096, THREADS>>>(p); }\n")
    assert [x["block"] for x in _launches(tmp_path, source)] == [24, 192]


def test_a_file_that_only_calls_a_headers_launcher_is_read(tmp_path):
    # tiny-cuda-nn's network.h calls `linear_kernel(kernel_activation<T>, 0, stream, n, ...)`
    # (common_host.h's launcher) and writes neither `__global__` nor `<<<`: not discovered,
    # and named alone, nothing listed (a raw string with `__global__` made src/network.cu seen)
    (tmp_path / "helpers.h").write_text(
        "#pragma once\nconstexpr unsigned N_THREADS_LINEAR = 128;\n"
        "template <typename K, typename... T>\n"
        "void linear_kernel(K kernel, unsigned shmem, cudaStream_t stream, unsigned n, T... args) {\n"
        "  kernel<<<(n + 127) / 128, N_THREADS_LINEAR, shmem, stream>>>(n, args...);\n}\n")
    (tmp_path / "kernels.h").write_text(
        '#pragma once\ntemplate <typename T, int N> __global__ void act(unsigned n, T* x) {}\n')
    (tmp_path / "act.h").write_text(
        '#pragma once\n#include "helpers.h"\n#include "kernels.h"\n'
        "template <typename T> void run_act(T* x, unsigned n, cudaStream_t s) {\n"
        "  linear_kernel(act<T, 4>, 0, s, n, x);\n}\n")
    (tmp_path / "use.cu").write_text(
        '#include "helpers.h"\n#include "kernels.h"\n'
        "void use(float* x, unsigned n, cudaStream_t s) { linear_kernel(act<float, 4>, 0, s, n, x); }\n")
    (tmp_path / "plain.h").write_text('#pragma once\n#include "helpers.h"\nint f();\n')
    r = run_main("check", "--show-files", "--no-cache", ".", cwd=tmp_path)
    assert sorted(p.rsplit("/", 1)[-1] for p in r.stdout.split()) == [
        "act.h", "helpers.h", "kernels.h", "use.cu"]
    for name in ("act.h", "use.cu"):
        recs = json.loads(run_main("kernels", "--no-compile", "--json", name, cwd=tmp_path).stdout)
        assert [(x["name"], x["block"], x["dynamic_smem"]) for x in recs
                if x["kind"] == "launch"] == [("act", 128, 0)], name


def test_a_headers_launcher_takes_the_block_its_callers_template_arguments_give(tmp_path):
    # kaolin's packed_base.cuh: `template <int block_size, ..., typename F> void
    # packed_simple_cuda_launcher(..., F cuda_kernel, ...) { cuda_kernel<<<n, block_size>>>(...); }`
    # called as `packed_simple_cuda_launcher<BLOCK_SIZE, ...>(..., kernel<T>, ...)`: the block
    # was "`block_size` defined nowhere occlint looked". A call that writes no template
    # argument keeps the launcher's own reading (a template parameter: unknown)
    (tmp_path / "launch.cuh").write_text(
        "#pragma once\n"
        "template <int block_size, typename T, typename F>\n"
        "void launch_packed(T* x, F cuda_kernel, int n) { cuda_kernel<<<n, block_size>>>(x); }\n"
        "template <typename F, int B = 64>\n"
        "void launch_default(F k, int n) { k<<<n, B>>>(n); }\n")
    source = (
        '#include "launch.cuh"\n#define BLOCK_SIZE 1024\n'
        "template <typename T> __global__ void k(T* x) {}\n"
        "__global__ void d(int n) {}\n"
        "void run(float* x, int n) {\n"
        "  launch_packed<BLOCK_SIZE, float>(x, k<float>, n);\n"
        "  launch_packed<BLOCK_SIZE / 4>(x, k<float>, n);\n"
        "  launch_default(d, n);\n}\n")
    got = [(x["name"], x["block"]) for x in _launches(tmp_path, source)]
    assert got == [("k", 1024), ("k", 256), ("d", None)], got


def test_with_no_path_kernels_and_check_take_the_working_directory_as_ruff(tmp_path):
    # tiny-cuda-nn's triage: `occlint kernels` required a path while `check` had a default; the
    # default is the working directory, as ruff's (`check` in a subfolder checked the whole
    # project); a baseline stays the project's
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.cu").write_text("__global__ void a(int* p) {}\n")
    (tmp_path / "sub" / "b.cu").write_text("__global__ void b(int* p) {}\n")
    r = run_main("kernels", "--no-compile", "--json", cwd=tmp_path / "sub")
    assert r.returncode == 0, r.stderr
    assert [x["path"] for x in json.loads(r.stdout)] == ["b.cu"]
    r = run_main("kernels", "--no-compile", "--json", cwd=tmp_path)
    assert sorted(x["path"] for x in json.loads(r.stdout)) == ["a.cu", "sub/b.cu"]
    r = run_main("check", "--show-files", cwd=tmp_path / "sub")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / "sub" / "b.cu")]
    r = run_main("check", "--show-files", cwd=tmp_path)
    assert r.stdout.split() == [str(tmp_path / "a.cu"), str(tmp_path / "sub" / "b.cu")]


def test_kernels_lists_a_file_once_when_two_paths_name_it(tmp_path):
    # `kernels src src/a.cu` (or a folder and its parent, as the speed bench gave): each file
    # once, as `check` lists it; a missing path is still an error line
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text("__global__ void a(int* p) {}\n")
    r = run_main("kernels", "src", ".", "src/a.cu", "nope", "--no-compile", "--json", cwd=tmp_path)
    assert r.returncode == 2 and "no such file or directory: nope" in r.stderr
    assert [x["path"] for x in json.loads(r.stdout)] == ["src/a.cu"]


def test_folders_discovered_in_processes_list_what_one_process_lists(tmp_path):
    """Two or more folders are discovered in `--jobs` processes: the same files, in path
    order, a file two paths name listed once at the first (its Python files too), and a
    missing path still one error line."""
    for folder in ("a", "b/c", "b/d"):
        (tmp_path / folder).mkdir(parents=True)
        for n in range(3):
            (tmp_path / folder / f"k{n}.cu").write_text(
                f"__global__ void k{n}(float* p) {{ p[threadIdx.x] = {n}; }}\n")
    (tmp_path / "b" / "d" / "host.py").write_text(
        "import cupy\nk = cupy.RawKernel('extern \"C\" __global__ void r() {}', 'r')\n"
        "k((1,), (64,), ())\n")
    args = ["kernels", "b/d", "a", "nope", "b", "a/k1.cu", "--no-compile", "--json"]
    one = run_main(*args, "-j", "1", cwd=tmp_path)
    many = run_main(*args, "-j", "3", cwd=tmp_path)
    assert one.returncode == many.returncode == 2
    assert one.stdout == many.stdout and one.stderr == many.stderr
    assert "no such file or directory: nope" in many.stderr
    paths = list(dict.fromkeys(r["path"] for r in json.loads(many.stdout)))
    assert paths == ["b/d/k0.cu", "b/d/k1.cu", "b/d/k2.cu", "b/d/host.py", "a/k0.cu", "a/k1.cu",
                     "a/k2.cu", "b/c/k0.cu", "b/c/k1.cu", "b/c/k2.cu"], paths


def test_a_unit_without_a_database_reads_the_one_project_header_its_include_names(tmp_path):
    """A Makefile's `-I$(ROOT)/include` is not read, so `#include "lib.cuh"` is found neither
    beside the unit nor in a flag's folder: the project's one folder with such a file is where
    the real build finds it, and the unit's source is read with it (ThunderKittens'
    `kittens.cuh`: 14 -> 42 of 79 launches with a block, without a config). Two candidate
    folders decide nothing, and a compile database's flags are the build's own."""
    def blocks(name: str, vendor: bool = False, database: bool = False) -> list:
        root = tmp_path / name
        (root / "src").mkdir(parents=True)
        (root / "include").mkdir()
        (root / "occlint.toml").write_text("")
        (root / "include" / "lib.cuh").write_text("constexpr int kBlock = 256;\n")
        (root / "src" / "k.cu").write_text(
            '#include "lib.cuh"\n__global__ void k(float* p) { p[threadIdx.x] = 0; }\n'
            "void go(float* p) { k<<<4, kBlock>>>(p); }\n")
        if vendor:
            (root / "vendor").mkdir()
            (root / "vendor" / "lib.cuh").write_text("constexpr int kBlock = 64;\n")
        if database:
            (root / "compile_commands.json").write_text(json.dumps([{
                "directory": str(root), "file": str(root / "src" / "k.cu"),
                "arguments": ["nvcc", "-c", "src/k.cu", "-o", "k.o"]}]))
        r = run_main("kernels", "src", "--no-compile", "--json", cwd=root)
        assert r.returncode == 0, r.stderr
        return [x["block"] for x in json.loads(r.stdout) if x["kind"] == "launch"]

    assert blocks("one") == [256]
    assert blocks("two", vendor=True) == [None]             # which one? neither
    assert blocks("built", database=True) == [None]         # the build's flags: its own to fix
    # the project's files are listed once per run, not per process: a language server's next
    # request sees a header added since (here a second candidate)
    (tmp_path / "one" / "vendor").mkdir()
    (tmp_path / "one" / "vendor" / "lib.cuh").write_text("constexpr int kBlock = 64;\n")
    r = run_main("kernels", "src", "--no-compile", "--json", cwd=tmp_path / "one")
    assert [x["block"] for x in json.loads(r.stdout) if x["kind"] == "launch"] == [None]
