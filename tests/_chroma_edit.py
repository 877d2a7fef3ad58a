"""An edit behind a dense index's back: text replaced in the documents Chroma keeps in its SQLite file, as someone
with write access to the folder would (for the tests that such an index is refused, not served)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def edit_chroma_text(folder: Path, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` in the stored texts of the dense index at ``folder``; the number of rows changed
    (asserted to be some)."""
    con = sqlite3.connect(folder / "chroma" / "chroma.sqlite3")
    try:
        n = con.execute(
            "UPDATE embedding_metadata SET string_value = replace(string_value, ?, ?) WHERE string_value LIKE ?",
            (old, new, f"%{old}%"),
        ).rowcount
        con.commit()
    finally:
        con.close()
    assert n > 0, f"no stored text holds {old!r}"
    return n
