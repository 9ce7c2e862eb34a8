"""Edits of recorded pages for tests: how an upstream format change would look.

(Imported by basename from any test folder, as `offer_factory` is; not a test module.)
"""

from __future__ import annotations

import re

from gpuscout.adapters.archive import Capture


def without_members(capture: Capture, *keys: str) -> Capture:
    """The capture with each escaped JSON member `,\\"<key>\\":<value>` removed, as inside a
    page's flight string (values: a number, null, a string or a list of strings). Every key
    must occur, so a test never removes nothing and passes for the wrong reason."""
    text = capture.body.decode()
    for key in keys:
        text, n = re.subn(rf',\\"{key}\\":(?:-?[\d.]+|null|\\"[^\\]*\\"|\[[^\]]*\])', "", text)
        assert n > 0, key
    return capture.model_copy(update={"body": text.encode()})
