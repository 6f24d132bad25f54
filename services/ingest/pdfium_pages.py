"""A PDF page's characters and rules read by PDFium, in the shapes pdfplumber computes them.

pdfplumber reads a page through pdfminer, an interpreter written in Python: a 10-K took
0.4 to 0.8 s a page on this two-core machine, most of it in pdfminer's interpreter and in
pdfplumber's conversion of every object's attributes. PDFium (the C++ engine Chromium
renders PDFs with, bound by pypdfium2, which pdfplumber already depends on) reads the same
page in a few milliseconds. So the characters (with their boxes) and the rules (lines,
rectangles and the segments of other paths) come from PDFium, and pdfplumber's own word
grouping (`extract_words`) and table finder (`TableFinder`, "lines" strategy) run on them
unchanged: `PdfiumPage` offers the attributes those two read (`chars`, `edges`, `bbox`).

Where PDFium's reading is brought to pdfminer's:
- A character's box is one em tall from the font's descent, as pdfminer builds it (PDFium's
  loose box reaches the font's ascent instead); its width is PDFium's.
- Characters PDFium generates (the spaces and line breaks it infers) are not characters:
  one parts two words only across about a space's width, as a drawn space would. A hyphen
  PDFium marks at a line's end is a hyphen.
- Paths inside form XObjects are read in the form's space through the form's matrix.
"""

from __future__ import annotations

import ctypes
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfplumber.table import TableFinder, TableSettings
from pdfplumber.utils import extract_words

_Point = tuple[float, float]
# [a b c d e f], as PDF writes a transformation.
_Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: _Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SPACE = ord(" ")
_BREAKS = frozenset((ord("\r"), ord("\n")))
# The pen movement, in points and in ems, that parts two words where PDFium inferred a
# break between them.
_WORD_GAP = 1.0
_SPACE_EMS = 0.5


@dataclass
class PdfiumPage:
    """One page: `page_number` from 1, `chars` and `edges` as pdfplumber's dicts (top-left
    origin, y growing down), `bbox` the page's box."""

    page_number: int
    width: float
    height: float
    chars: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        return (0.0, 0.0, self.width, self.height)

    def extract_words(self, **settings: Any) -> list[dict[str, Any]]:
        return extract_words(self.chars, **settings)

    def find_tables(self) -> list[Any]:
        return TableFinder(self, TableSettings.resolve(None)).tables  # type: ignore[arg-type]


@dataclass
class PdfiumDocument:
    """An open PDF: its `pages` read one at a time, and its metadata."""

    path: Path
    _pdf: pdfium.PdfDocument = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pdf = pdfium.PdfDocument(self.path)

    def __enter__(self) -> PdfiumDocument:
        return self

    def __exit__(self, *_: object) -> None:
        self._pdf.close()

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self._pdf.get_metadata_dict(skip_empty=True))

    def __len__(self) -> int:
        return len(self._pdf)

    @property
    def pages(self) -> Iterator[PdfiumPage]:
        for index in range(len(self._pdf)):
            page = self._pdf[index]
            try:
                yield read_page(page, index + 1)
            finally:
                page.close()


def read_page(page: pdfium.PdfPage, page_number: int) -> PdfiumPage:
    left, bottom, right, top = page.get_bbox()
    read = PdfiumPage(page_number, float(right - left), float(top - bottom))
    textpage = page.get_textpage()
    try:
        read.chars = _chars(textpage, left, top)
    finally:
        textpage.close()
    read.edges = _edges(page, left, top)
    return read


def _chars(textpage: pdfium.PdfTextPage, left: float, top: float) -> list[dict[str, Any]]:
    handle = textpage.raw
    box = pdfium_c.FS_RECTF()
    matrix = pdfium_c.FS_MATRIX()
    chars: list[dict[str, Any]] = []
    pending_break = False
    for index in range(pdfium_c.FPDFText_CountChars(handle)):
        code = pdfium_c.FPDFText_GetUnicode(handle, index)
        generated = pdfium_c.FPDFText_IsGenerated(handle, index) == 1
        if code in _BREAKS or (generated and code == _SPACE):
            # A space or line break PDFium infers between two characters. It parts them
            # when the pen moved on by about a space's width, which pdfminer reads as a
            # space: not where only the baseline moved (a footnote mark set as
            # superscript), nor across a wider gap, which parts words by itself unless a
            # mark drawn later fills it ("AirPods" and its "®").
            pending_break = bool(chars)
            continue
        if generated or not code:
            continue
        text = "-" if pdfium_c.FPDFText_IsHyphen(handle, index) == 1 else chr(code)
        if not pdfium_c.FPDFText_GetLooseCharBox(handle, index, ctypes.byref(box)):
            continue
        # pdfminer's box of a character is one em tall, from the font's descent below the
        # baseline; PDFium's loose box starts at the same descent but reaches the font's
        # ascent. The em in page space is the font size scaled by the text's matrix.
        size = pdfium_c.FPDFText_GetFontSize(handle, index)
        if pdfium_c.FPDFText_GetMatrix(handle, index, ctypes.byref(matrix)):
            size *= math.hypot(matrix.c, matrix.d)
        x0, x1 = box.left - left, box.right - left
        if pending_break:
            before = chars[-1]
            gap = x0 - before["x1"]
            if _WORD_GAP <= gap < _SPACE_EMS * before["size"]:
                chars.append({**before, "text": " ", "x0": before["x1"], "width": 0.0})
            pending_break = False
        char_bottom = top - box.bottom
        char_top = char_bottom - size if size > 0 else top - box.top
        chars.append(
            {
                "text": text,
                "x0": x0,
                "x1": x1,
                "top": char_top,
                "bottom": char_bottom,
                "doctop": char_top,
                "width": x1 - x0,
                "height": char_bottom - char_top,
                "size": size,
                "upright": abs(pdfium_c.FPDFText_GetCharAngle(handle, index)) < 1e-3,
            }
        )
    return chars


def _edges(page: pdfium.PdfPage, left: float, top: float) -> list[dict[str, Any]]:
    """pdfminer reads each path's subpaths as lines, rectangles or curves; pdfplumber's
    edges of them are what its "lines" strategy joins into table grids."""
    edges: list[dict[str, Any]] = []
    for subpath in _subpaths(page.raw):
        points = [(x - left, top - y) for x, y in subpath]
        edges.extend(_subpath_edges(points))
    return edges


def _subpaths(page: Any) -> Iterator[list[_Point]]:
    """Every path object's subpaths on the page (forms' too), in page space, each closed
    one ending where it began."""
    for index in range(pdfium_c.FPDFPage_CountObjects(page)):
        yield from _object_subpaths(pdfium_c.FPDFPage_GetObject(page, index), _IDENTITY)


def _compose(inner: _Matrix, outer: _Matrix) -> _Matrix:
    """`inner` then `outer`, as PDF matrices [a b c d e f] compose."""
    a, b, c, d, e, f = inner
    oa, ob, oc, od, oe, of = outer
    return (
        a * oa + b * oc,
        a * ob + b * od,
        c * oa + d * oc,
        c * ob + d * od,
        e * oa + f * oc + oe,
        e * ob + f * od + of,
    )


def _object_subpaths(obj: Any, outer: _Matrix) -> Iterator[list[_Point]]:
    kind = pdfium_c.FPDFPageObj_GetType(obj)
    if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
        matrix = _compose(_matrix(obj), outer)
        for index in range(pdfium_c.FPDFFormObj_CountObjects(obj)):
            yield from _object_subpaths(pdfium_c.FPDFFormObj_GetObject(obj, index), matrix)
        return
    if kind != pdfium_c.FPDF_PAGEOBJ_PATH:
        return
    a, b, c, d, e, f = _compose(_matrix(obj), outer)
    x, y = ctypes.c_float(), ctypes.c_float()
    current: list[_Point] = []
    for index in range(pdfium_c.FPDFPath_CountSegments(obj)):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, index)
        pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y))
        point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        if pdfium_c.FPDFPathSegment_GetType(segment) == pdfium_c.FPDF_SEGMENT_MOVETO:
            if len(current) > 1:
                yield current
            current = [point]
        else:
            current.append(point)
        if pdfium_c.FPDFPathSegment_GetClose(segment) and current and current[-1] != current[0]:
            current.append(current[0])
    if len(current) > 1:
        yield current


def _matrix(obj: Any) -> _Matrix:
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix)):
        return _IDENTITY
    return (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)


def _subpath_edges(points: list[_Point]) -> list[dict[str, Any]]:
    """pdfminer's reading of a subpath, then pdfplumber's edges of it: an axis-aligned
    rectangle gives its four sides, a two-point path its line, any other path one edge per
    segment (an edge neither horizontal nor vertical takes no part in a table grid)."""
    if _is_rectangle(points):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        return [
            _edge(x0, x1, y0, y0, "h", "rect_edge"),
            _edge(x0, x1, y1, y1, "h", "rect_edge"),
            _edge(x0, x0, y0, y1, "v", "rect_edge"),
            _edge(x1, x1, y0, y1, "v", "rect_edge"),
        ]
    kind = "line" if len(points) == 2 else "curve_edge"
    edges = []
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        orientation = "h" if ay == by else "v" if ax == bx else None
        if orientation is not None:
            edges.append(
                _edge(min(ax, bx), max(ax, bx), min(ay, by), max(ay, by), orientation, kind)
            )
    return edges


def _is_rectangle(points: list[_Point]) -> bool:
    corners = points[:-1] if len(points) == 5 and points[0] == points[-1] else points
    if len(corners) != 4:
        return False
    sides = zip(corners, corners[1:] + corners[:1], strict=True)
    return all(ax == bx or ay == by for (ax, ay), (bx, by) in sides)


def _edge(
    x0: float, x1: float, top: float, bottom: float, orientation: str, kind: str
) -> dict[str, Any]:
    return {
        "object_type": kind,
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": x1 - x0,
        "height": bottom - top,
        "orientation": orientation,
    }
