"""Frozen facts that flow between occlint's parts.

Positions are 1-based lines and columns (columns count characters, not bytes); `start` and `end`
are offsets into the decoded text (a Python `str`), end exclusive, so a fix can slice the text.
Only the language server converts to 0-based positions.
"""

from __future__ import annotations

from occlint.record import dataclass, field


@dataclass(frozen=True)
class Span:
    """A range of the text: 1-based line and column at each end, and `start`/`end` offsets."""

    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0
    end: int = 0


# --- what the source declares (occlint.source) ------------------------------------------------


@dataclass(frozen=True)
class LaunchBounds:
    """`__launch_bounds__(max_threads[, min_blocks[, max_blocks_per_cluster]])`; None = not constant."""

    max_threads: int | None
    min_blocks: int | None = None
    max_blocks_per_cluster: int | None = None
    text: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class Kernel:
    """A `__global__` function as the source declares it."""

    name: str                       # plain name: "reduce"
    qualname: str                   # with scopes: "ns::Cls::reduce"
    path: str
    span: Span                      # the name
    decl_span: Span                 # where `__launch_bounds__(...) ` goes: empty, just before the name
    scopes: tuple[str, ...] = ()
    template_params: tuple[str, ...] = ()   # parameter names in order: ("T", "BLOCK")
    params: tuple[str, ...] = ()            # parameter declarations as written
    launch_bounds: LaunchBounds | None = None
    maxnreg: int | None = None
    cluster_dims: tuple[int | None, ...] | None = None
    extern_c: bool = False
    is_definition: bool = True
    # the body spreads work over the grid (a grid-stride or block-stride loop, a share of the work
    # computed from gridDim, a cooperative grid group): its grid size is a tuning knob
    grid_stride: bool = False
    # a thread can tell itself from its block's others (it reads threadIdx or blockDim, or calls
    # a function occlint does not read): else every thread of a block does the same work
    thread_indexed: bool = True
    # the function-like macro whose use defines it (NCCL's `DEFINE_ncclDevKernel(...)`): its
    # span is the use, and no fix edits it (the text is the macro's, shared by every use)
    in_macro: str | None = None


@dataclass(frozen=True)
class Index:
    """One subscript used on a shared array.

    `thread_derived` is True only when the subscript is provably in [0, n) for n threads along
    `axis` of the block ("x", "y", "z"; "xyz" = the block's total thread count): `threadIdx.x`,
    aliases such as `tid = threadIdx.x`, `tid % 32`, `tid / 2`, `tid >> k`, `tid & m`, the flat
    `threadIdx.x + threadIdx.y * blockDim.x` ("xyz"), and `tid + s` under `if (tid < s)` with
    `s <= blockDim.x / 2` (s starts at `blockDim.x / 2` and is only halved, or a loop condition
    keeps `s < blockDim.x / 2`).
    So a 256-thread launch touches elements 0..255 of that dimension. `dim` is which subscript
    of the array it is (0 = leftmost: `s[dim0][dim1]`).
    """

    text: str
    span: Span
    thread_derived: bool            # threadIdx-based (aliases, offsets bounded by blockDim)
    axis: str | None = None         # "x" | "y" | "z" | "xyz" when thread_derived, else None
    dim: int = 0                    # which subscript of the array (0 = leftmost)
    constant: int | None = None     # the value of a constant subscript (`smem[0]`), else None
    bound: int | None = None        # an exclusive upper bound the source proves without the block
                                    # size: `k` in `for (k = ..; k < 256; k++)`, `255 - threadIdx.x`


@dataclass(frozen=True)
class SharedDecl:
    """A `__shared__` declaration (static or `extern`) and how it is used."""

    name: str
    path: str
    span: Span
    kernel: str | None              # owning kernel's qualname; None at file/namespace scope
    element_type: str
    dims: tuple[int | None, ...] = ()      # evaluated dimensions; () for a scalar or `extern []`
    element_size: int | None = None
    size_bytes: int | None = None          # None when unknown
    extern: bool = False                   # `extern __shared__` (dynamic)
    indices: tuple[Index, ...] = ()
    template_dependent: bool = False       # size depends on a template parameter of the kernel
    other_uses: int = 0                    # uses not as `name[...]` (pointer taken, passed on):
                                           # when > 0, `indices` are not all the accesses
    name_span: Span | None = None          # the declared name (`span` is the whole declaration)
    dim_spans: tuple[Span, ...] = ()       # each size expression as written: `4096` in `[4096]`


@dataclass(frozen=True)
class Dim3:
    """A grid or block shape as written (`text`) and evaluated (None = not constant)."""

    x: int | None
    y: int | None = 1
    z: int | None = 1
    text: str = ""

    @property
    def total(self) -> int | None:
        if self.x is None or self.y is None or self.z is None:
            return None
        return self.x * self.y * self.z


@dataclass(frozen=True)
class Launch:
    """A kernel launch: `<<<...>>>` or a launch API call."""

    callee: str                      # as written, without template arguments: "ns::k"
    path: str
    span: Span                       # the whole launch (`<<<...>>>` or the call)
    grid: Dim3
    block: Dim3
    kind: str = "chevron"            # chevron | cudaLaunchKernel | cudaLaunchKernelEx | cooperative
    template_args: tuple[str, ...] = ()            # as written
    template_values: tuple[int | None, ...] = ()   # evaluated non-type arguments
    dynamic_smem: int | None = 0     # 0 when absent, None when unknown
    dynamic_smem_text: str = ""
    stream_text: str = ""
    config_span: Span | None = None  # the `<<<...>>>` part
    arg_spans: tuple[Span, ...] = ()  # grid, block[, smem[, stream]] as written
    function: str | None = None      # the enclosing function
    runtime_block: bool = False      # block size chosen at run time (cudaOccupancyMaxPotentialBlockSize)
    # when the block size or dynamic shared memory is one of a few values (source.values):
    # every (block total, dynamic smem bytes) pair the launch may take; () otherwise
    choices: tuple[tuple[int, int], ...] = ()
    sweep: bool = False       # the choices walk a constant array of 3+ block sizes (a benchmark)
    # a launch in a template function whose calls in the file bind its block size, one value
    # per instantiation of the kernel (`k<W><<<g, W * 32>>>` in `launch<W>`, called with 4 and
    # 8): (the kernel's template values, block total, dynamic smem or None) per binding. The
    # launch a Site evaluates for one binding keeps them: its text is shared, so no edits
    bindings: tuple[tuple[tuple[int | None, ...], int, int | None], ...] = ()
    dispatch: bool = False    # the block is one `case` of a `switch` on it (a size dispatch)
    computed: bool = False    # the block comes from a call of a function of the file (iDivUp(w, 16))
    argc: int | None = None   # the kernel's arguments (a chevron launch): picks an overload
    # each kernel argument's type where the source shows it (a cast, `static_cast<float *>(p)`,
    # a local or parameter of the launching function), else None: deduces a template kernel's
    # type arguments when the launch writes none (link.deduced)
    arg_types: tuple[str | None, ...] = ()
    # an unknown block written with template parameters of the launching function
    # (`Ktraits::kNThreads`): the parameter names, for saying why it is unknown
    block_template: tuple[str, ...] = ()
    smem_template: tuple[str, ...] = ()     # the same for an unknown dynamic shared memory
    block_parameter: bool = False   # an unknown block that is a parameter of the launching function


@dataclass(frozen=True)
class AttributeCall:
    """A `cudaFuncSetAttribute` or `cudaFuncSetCacheConfig` call on a kernel."""

    kernel: str                      # callee as written
    attribute: str                   # "MaxDynamicSharedMemorySize", "PreferredSharedMemoryCarveout", "CacheConfig", ...
    value: int | str | None          # evaluated int, an enum name for cache configs, or None
    value_text: str
    path: str
    span: Span
    function: str | None = None
    template_args: tuple[str, ...] = ()            # `cudaFuncSetAttribute(k<256>, ...)`: ("256",)
    template_values: tuple[int | None, ...] = ()   # evaluated non-type arguments


@dataclass(frozen=True)
class SourceFile:
    """Everything occlint.source extracts from one file."""

    path: str
    text: str
    kernels: tuple[Kernel, ...] = ()
    shared: tuple[SharedDecl, ...] = ()
    launches: tuple[Launch, ...] = ()
    attributes: tuple[AttributeCall, ...] = ()
    # the syntax tree and scopes behind these (occlint.source.build.Parsed), kept with them so
    # that `specialize` never parses a file again; not part of the value
    parsed: object = field(default=None, compare=False, repr=False, hash=False)


# --- what the compiler reports (occlint.toolchain) ---------------------------------------------


@dataclass(frozen=True)
class Usage:
    """ptxas's figures for one entry function on one arch, and the cubin's launch attributes."""

    kernel: str                      # demangled qualified name without template args: "ns::k"
    arch: str                        # "sm_90"
    registers: int
    static_smem: int = 0
    barriers: int = 0
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    cmem: int | None = None
    mangled: str = ""
    template_args: tuple[str, ...] = ()   # demangled template arguments: ("256", "float")
    source: str = "ptxas"            # ptxas | cubin | recorded
    unit: str = ""                   # the .cu compiled (the kernel may be defined in a header it includes)
    # what ptxas decided about launches, from the cubin's per-kernel attributes (None: not known)
    max_threads: int | None = None   # EIATTR_MAX_THREADS: the effective `__launch_bounds__` max threads
    max_registers: int | None = None     # EIATTR_MAXREG_COUNT: the register cap honoured (255: none)
    cluster_dims: tuple[int, int, int] | None = None   # EIATTR_CTA_PER_CLUSTER
    max_cluster_blocks: int | None = None              # EIATTR_MAX_CLUSTER_RANK
    # spills in the functions it calls that ptxas did not inline (each reported on its own
    # "Function properties" line; the cubin says which kernel calls which), and the demangled
    # name of the one that spills most
    callee_spill_stores: int = 0
    callee_spill_loads: int = 0
    spilling_callee: str = ""

    @property
    def all_spill_stores(self) -> int:
        return self.spill_stores + self.callee_spill_stores

    @property
    def all_spill_loads(self) -> int:
        return self.spill_loads + self.callee_spill_loads


@dataclass(frozen=True)
class CompileError:
    """One diagnostic from compiling a file for one arch (becomes an OCC900 finding)."""

    path: str                        # the file the compiler names (may be a header)
    line: int | None                 # None: no line (ptxas); the engine uses the kernel's line
    column: int | None
    message: str
    arch: str | None = None
    kind: str = "error"              # error | fatal | ptxas | timeout | nvcc
    kernel: str | None = None        # demangled qualified name, when ptxas names an entry
    unit: str = ""                   # the .cu compiled
    compiler: str = "nvcc"           # who reported it: nvcc, or NVRTC for a Python file's string
    # the outermost `#include` that led to `path` (the host compiler's "In file included from
    # ... from app/a.cu:4"): (file, line), or None
    included_from: tuple[str, int] | None = None


# --- what occlint reports ------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """Replace `span` with `content`; an empty span inserts."""

    content: str
    span: Span


@dataclass(frozen=True)
class Fix:
    """Edits that resolve a finding, and whether applying them is safe."""

    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"      # safe | unsafe | display


@dataclass(frozen=True)
class Finding:
    """One rule's report at one place (and arch)."""

    code: str                        # "OCC010"
    name: str                        # "register-cliff"
    message: str
    path: str
    span: Span
    severity: str = "warning"        # error | warning | info
    fix: Fix | None = None
    arch: str | None = None
    kernel: str | None = None
    url: str = ""
    data: dict = field(default_factory=dict, compare=False, hash=False)
    # the causes this finding stands for (template instantiations, archs): dicts with `kernel`,
    # `arch`, `message` and the figures; one entry unless occlint.aggregate merged several
    instances: tuple = field(default=(), compare=False, hash=False)
