"""The names of `finq eval`'s question splits, in one place for the evaluations and the
command line (which lists them without importing the evaluations).

The golden questions have three splits; the document questions have those three and the
outside splits helpers wrote one after another, each while the one before it was being read
for its failures."""

from __future__ import annotations

from typing import Literal, get_args

DocumentSplit = Literal[
    "dev", "heldout", "outside", "fresh", "final", "last", "next", "sixth", "seventh"
]
DOCUMENT_SPLITS: tuple[DocumentSplit, ...] = get_args(DocumentSplit)
GOLDEN_SPLITS: tuple[DocumentSplit, ...] = ("dev", "heldout", "outside")
# Splits only the document questions have: `finq eval golden` refuses them.
DOCUMENT_ONLY_SPLITS: tuple[DocumentSplit, ...] = tuple(
    split for split in DOCUMENT_SPLITS if split not in GOLDEN_SPLITS
)
