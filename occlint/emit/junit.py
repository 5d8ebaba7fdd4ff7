"""`junit`: JUnit XML, one test suite per file and one failing test case per finding.

Files checked without findings (the keys of `sources`) get one passing test case, so CI
dashboards count them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping

from occlint.emit.encode import xml_text
from occlint.emit.json_lines import relative_path
from occlint.model import Finding


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    by_file: dict[str, list[Finding]] = {xml_text(relative_path(p, root)): [] for p in (sources or {})}
    for f in findings:
        by_file.setdefault(xml_text(relative_path(f.path, root)), []).append(f)
    total = sum(max(1, len(v)) for v in by_file.values())
    failures = sum(len(v) for v in by_file.values())
    suites = ET.Element("testsuites", name="occlint", tests=str(total), failures=str(failures),
                        errors="0")
    for path in sorted(by_file):
        items = by_file[path]
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(max(1, len(items))),
                              failures=str(len(items)), errors="0", skipped="0")
        if not items:
            ET.SubElement(suite, "testcase", name="occlint", classname=path)
        for f in items:
            where = f"{path}:{f.span.line}:{f.span.column}"
            name = f"{f.code} at {where}" + (f" ({f.arch})" if f.arch else "")
            case = ET.SubElement(suite, "testcase", name=name, classname=path,
                                 file=path, line=str(f.span.line))
            failure = ET.SubElement(case, "failure", message=xml_text(f.message), type=f.code)
            failure.text = xml_text(f"{where}: {f.code} [{f.severity}] {f.message}")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
