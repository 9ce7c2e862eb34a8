"""Small helpers shared by the adapters that read HTML pricing pages."""

from __future__ import annotations

from selectolax.lexbor import LexborNode


def node_text(node: LexborNode) -> str:
    """The node's text with runs of whitespace collapsed, &nbsp; included (str.split knows
    Unicode spaces), so a price cell reads "$1.90" whatever the page's formatting."""
    return " ".join(node.text(separator=" ").split())
