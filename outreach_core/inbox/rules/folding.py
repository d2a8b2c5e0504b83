"""Text folded for matching words in several languages: lower case, accents removed, ß as ss."""

from __future__ import annotations

import unicodedata

__all__ = ["fold"]


def fold(text: str) -> str:
    """`text` lower-cased without accents ("Désinscrire" -> "desinscrire", "März" -> "marz"), typographic
    apostrophes as `'`; one character in, one character out except for ß and ligatures."""
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("\u2019", "'").replace("ß", "ss"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
