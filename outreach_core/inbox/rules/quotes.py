"""The reply's own words: the text without the quoted original, forwarded headers and signature.

A reply usually carries our own email below it, which contains our unsubscribe line ("Reply "stop" to
unsubscribe"), so rules that look for what the person wrote must only read this part. Line by line, in
linear time (mail bodies are untrusted input):

- the text ends at the first quote header: an attribution line ("On ... wrote:", "Am ... schrieb ...:",
  "Le ... a écrit :", "El ... escribió:", possibly wrapped over up to three lines), an Outlook header block
  ("From:"/"Von:"/"De :" followed by "Sent:"/"Gesendet:"/"Envoyé :"/"Enviado:", "To:", "Subject:" ...), a
  separator ("-----Original Message-----", "Ursprüngliche Nachricht", "Message d'origine",
  "Mensaje original", forwarded-message markers, a line of underscores), or the signature marker "-- ";
- lines quoted with `>` are dropped wherever they are (bottom-posted replies keep their own lines).
"""

from __future__ import annotations

import re

__all__ = ["own_text"]

SCAN_LIMIT = 64 * 1024
"""Only the first 64 KB of a body are read for the person's own words."""

_ATTRIBUTION_WORD = re.compile(
    r"\b(?:wrote|writes|schrieb|geschrieben|a\s+[ée]crit|[ée]crit|escribi[óo]|ha\s+escrito|scrive|scritto)\b",
    re.IGNORECASE,
)
_ATTRIBUTION_START = re.compile(r"^\s*(?:On|Am|Le|El|Il|Op|Em)\s", re.IGNORECASE)
_HEADER_FROM = re.compile(r"^\s*\*?\s*(?:From|Von|De|Da|Van|Från)\s*\*?\s*:\s*\S", re.IGNORECASE)
_HEADER_NEXT = re.compile(
    r"^\s*\*?\s*(?:Sent|Date|To|Subject|Cc|Gesendet|Datum|An|Betreff|Envoy[ée]|[ÀA]|Objet|Enviado|Fecha|Para"
    r"|Asunto|Inviato|Oggetto)\s*\*?\s*:",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(
    r"^\s*(?:[-=_*]{2,}\s*(?:original message|urspr[üu]ngliche nachricht|message d'origine|mensaje original"
    r"|forwarded message|weitergeleitete nachricht|message transf[ée]r[ée]|mensaje reenviado"
    r"|messaggio originale)"
    r"\s*[-=_*]*|_{10,}|-{10,}|begin forwarded message:|anfang der weitergeleiteten nachricht:"
    r"|d[ée]but du message r[ée]exp[ée]di[ée]\s*:|inicio del mensaje reenviado:)\s*$",
    re.IGNORECASE,
)
_SIGNATURE = re.compile(r"^--\s?$")
_QUOTED = re.compile(r"^\s*>")


def _quote_starts(lines: list[str], i: int) -> int | None:
    """If a quote header ends or starts on line `i`, the index of its first line; else None."""
    line = lines[i]
    if _SEPARATOR.match(line) or _SIGNATURE.match(line):
        return i
    if _HEADER_FROM.match(line):
        following = [x for x in lines[i + 1 : i + 5] if x.strip()]
        if following and _HEADER_NEXT.match(following[0]):
            return i
    stripped = line.rstrip()
    if len(stripped) <= 400 and stripped.endswith(":"):
        window = [i]
        for back in range(i - 1, max(-1, i - 3), -1):
            if not lines[back].strip():
                break
            window.insert(0, back)
        if _ATTRIBUTION_WORD.search(" ".join(lines[j] for j in window)):
            for j in window:
                if _ATTRIBUTION_START.match(lines[j]):
                    return j
            below = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
            if "@" in line or _QUOTED.match(below):  # "Jane Doe <jane@x> wrote:" above a quote
                return i
    return None


def own_text(text: str) -> str:
    """What the sender wrote themselves: `text` up to the first quote header or signature, without `>`
    lines."""
    lines = text[:SCAN_LIMIT].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        start = _quote_starts(lines, i)
        if start is not None:  # a wrapped attribution ("On ... <x@y>" / "wrote:") began on an earlier line
            kept = [(j, x) for j, x in kept if j < start]
            break
        if not _QUOTED.match(line):
            kept.append((i, line))
    return "\n".join(x for _, x in kept).strip()
