"""English the stages share when they write about companies."""

from __future__ import annotations


def possessive(name: str) -> str:
    """ "NVIDIA's", "Apple's", "Meta Platforms'"; only a lowercase final s takes the bare
    apostrophe, since acronyms ending in S ("AWS's") keep the full form."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"
