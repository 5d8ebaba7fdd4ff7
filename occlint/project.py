"""The files of one run, each parsed once.

`Project.read(texts)` parses every file a single time; everything after that (facts, template
specialization, which kernel a launch in another file calls) reads these SourceFiles, which carry
their own syntax tree. The name indexes answer "which files define or launch `k`" without a scan.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping

from occlint.model import Launch, SourceFile


class Project:
    def __init__(self, files: Iterable[SourceFile] = ()):
        self.files: dict[str, SourceFile] = {}
        for sf in files:
            self.files.setdefault(sf.path, sf)

    @classmethod
    def read(cls, texts: Mapping[str, str], views: Mapping | None = None) -> Project:
        """Parse each (path, text) once; `views`: path -> its preprocessor View (-D/-U/-I)."""
        from occlint.source import parse
        views = views or {}
        return cls(parse(text, path, views.get(path)) for path, text in texts.items())

    def __iter__(self) -> Iterator[SourceFile]:
        return iter(self.files.values())

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, path: str) -> SourceFile:
        return self.files[path]

    @functools.cached_property
    def definitions(self) -> dict[str, list[SourceFile]]:
        """Kernel name (last `::` part) -> the files that define a kernel of that name."""
        out: dict[str, list[SourceFile]] = {}
        for sf in self:
            for name in dict.fromkeys(k.name for k in sf.kernels if k.is_definition):
                out.setdefault(name, []).append(sf)
        return out

    @functools.cached_property
    def launches(self) -> dict[str, list[tuple[SourceFile, Launch]]]:
        """Callee name (last `::` part) -> (file, launch) for every launch of the run."""
        out: dict[str, list[tuple[SourceFile, Launch]]] = {}
        for sf in self:
            for ln in sf.launches:
                out.setdefault(ln.callee.split("::")[-1], []).append((sf, ln))
        return out
