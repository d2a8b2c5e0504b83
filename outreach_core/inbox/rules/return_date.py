"""The return date an out-of-office reply names, in English, German, French or Spanish.

`return_date(text, arrived_at)` finds dates written as `2025-03-14`, `14.03.2025`, `14.3.`, `3/14`,
`14/03/25`, `March 14th`, `14 March`, `14. März`, `14 mars`, `14 de marzo`, or a weekday ("Monday",
"Montag", "lundi", "lunes"), and keeps those a phrase marks as the end of the absence:

- "until", "till", "through", "bis (einschließlich)", "jusqu'au", "hasta (el)" before it;
- "back", "returning", "in the office again", "zurück", "wieder (im Büro, erreichbar) ab", "de retour
  le", "regreso el", "vuelvo el", "de vuelta el" shortly before it, in the same sentence;
- the end of a range: "from 3 to 14 March", "3.-14.3.", "vom 3. bis 14. März", "du 3 au 14 mars",
  "del 3 al 14 de marzo".

The latest such date wins (a text saying "until the 14th, back on the 17th" gives the 17th): the caller
schedules the next email the working day after it, so it never lands before the person is back. A date
without a year takes the year that puts it between a week before the message arrived and 300 days
after; a weekday is the next such day after arrival ("until Friday" may be the arrival day itself).
`3/4` is read as month/day after English words and as day/month otherwise; when both readings are
plausible after English words, the date is left out. Dates before the arrival or more than a year after
it are left out. No date, or none marked as a return date: None (unsure).
"""

from __future__ import annotations

import datetime as dt
import re

from outreach_core.inbox.rules.folding import fold

__all__ = ["return_date"]

SCAN_LIMIT = 4000
_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "january jan januar janner janvier janv enero ene",
        "february feb februar fevrier fevr fev febrero",
        "march mar marz maerz mrz mars marzo",
        "april apr avril avr abril abr",
        "may mai mayo",
        "june jun juni juin junio",
        "july jul juli juillet juil julio",
        "august aug aout agosto ago",
        "september sept sep septembre septiembre setiembre",
        "october oct oktober okt octobre octubre",
        "november nov novembre noviembre",
        "december dec dezember dez decembre diciembre dic",
    ),
    start=1,
):
    for _name in _names.split():
        _MONTHS[_name] = _number
_WEEKDAYS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "monday montag lundi lunes",
        "tuesday dienstag mardi martes",
        "wednesday mittwoch mercredi miercoles",
        "thursday donnerstag jeudi jueves",
        "friday freitag vendredi viernes",
        "saturday samstag sonnabend samedi sabado",
        "sunday sonntag dimanche domingo",
    )
):
    for _name in _names.split():
        _WEEKDAYS[_name] = _number

_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"\b(?:" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\b"
_ORD = r"(?:st|nd|rd|th|er|e|eme|o|a|º|°|\.)?"
_DATES = re.compile(
    r"\b(?P<iy>20\d\d)-(?P<im>\d{1,2})-(?P<id>\d{1,2})\b"
    r"|\b(?P<na>\d{1,2})(?P<sep>[./-])(?P<nb>\d{1,2})(?:(?P=sep)(?P<ny>\d{4}|\d{2}))?\b\.?(?![.:/]?\d)"
    rf"|\b(?P<dd>\d{{1,2}}){_ORD}\s+(?:de\s+)?(?P<dm>{_MONTH})(?:\s+(?:de\s+)?(?P<dy>\d{{4}}))?\b"
    rf"|\b(?P<mm>{_MONTH})\s+(?P<md>\d{{1,2}}){_ORD}(?:,?\s+(?P<my>\d{{4}}))?\b"
    rf"|(?P<wd>{_WEEKDAY})"
)
_UNTIL = re.compile(
    r"(?:\buntil|\btill|\btil|\bthrough|\bthru|\bup to and including|\bbis(?: einschliesslich| inklusive"
    r"| inkl\.?)?"
    r"(?: zum| zur| am| ende)?|\bjusqu'? ?(?:au|a|a le)|\bhasta(?: el)?(?: dia)?)\s*(?:[\w.]+,?\s+){0,2}$"
)
_BACK = re.compile(
    r"(?:\bback\b|\breturn\w*|\bin the office|\bagain\b|\bzuruck|\bwieder\b|\bde retour|\bretour\b"
    r"|\brentre\w*"
    r"|\bregres\w*|\bvolver\w*|\bvuelv\w*|\bde vuelta|\breincorpor\w*|\bde nouveau|\bde nuevo)[^.!?\n]{0,40}$"
)
# "ab dem 17. März ... wieder", "à partir du 17 mars ... de retour", "from March 17 ... back"
_FROM = re.compile(
    r"(?:\bab(?: dem| den)?|\ba partir d(?:u|e|el)|\bdes le|\bstarting(?: on)?"
    r"|\bfrom)\s*(?:[\w.]+,?\s+){0,1}$"
)
_BACK_AFTER = re.compile(
    r"^[^.!?\n]{0,60}(?:\bwieder\b|\bzuruck|\bagain\b|\bback\b|\bde retour|\bde nouveau|\bde nuevo"
    r"|\bde vuelta)"
)
# A day-only range start before a full date: "du 3 au 14 mars", "3.-14. März", "from 3rd to 14th March"
_DAY_RANGE = re.compile(r"\b\d{1,2}(?:st|nd|rd|th|er|\.)?\s*(?:-|\u2013|au|al|bis|to|through)\s*$")
_RANGE_GAP = re.compile(r"^\s*(?:to|till|until|-|\u2013|\u2014|bis|au|al|through|thru)\s*(?:[\w.]+,?\s+)?$")
_ENGLISH = re.compile(r"\b(?:until|till|through|back|return\w*|again|to|and|office|the)\b")


def return_date(text: str, arrived_at: dt.datetime | dt.date) -> dt.date | None:
    """The date an out-of-office text names as the end of the absence or the day back, or None."""
    arrived = arrived_at.date() if isinstance(arrived_at, dt.datetime) else arrived_at
    folded = fold(text[:SCAN_LIMIT])
    matches = list(_DATES.finditer(folded))
    best: dt.date | None = None
    previous_end = -100
    for i, match in enumerate(matches):
        before = folded[max(0, match.start() - 80) : match.start()]
        following = matches[i + 1] if i + 1 < len(matches) else None
        gap = folded[previous_end : match.start()] if previous_end >= 0 else ""
        range_end = match.start() - previous_end <= 25 and bool(_RANGE_GAP.match(gap))
        previous_end = match.end()
        if match.group("wd") and following is not None and following.start() - match.end() <= 6:
            continue  # "Monday, March 10": the date says it
        until = bool(_UNTIL.search(before))
        range_end = range_end or bool(_DAY_RANGE.search(before))
        back_from = bool(_FROM.search(before)) and bool(
            _BACK_AFTER.match(folded[match.end() : match.end() + 80])
        )
        if not (until or range_end or back_from or _BACK.search(before)):
            continue
        day = _date(match, arrived, english=bool(_ENGLISH.search(before)), until=until or range_end)
        if day is not None and arrived - dt.timedelta(days=1) <= day <= arrived + dt.timedelta(days=366):
            best = day if best is None or day > best else best
    return best


def _year_for(month: int, day: int, arrived: dt.date) -> dt.date | None:
    for year in (arrived.year, arrived.year + 1, arrived.year - 1):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            continue
        if arrived - dt.timedelta(days=7) <= candidate <= arrived + dt.timedelta(days=300):
            return candidate
    return None


def _make(year: int | None, month: int, day: int, arrived: dt.date) -> dt.date | None:
    if year is None:
        return _year_for(month, day, arrived)
    if year < 100:
        year += 2000
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _date(match: re.Match[str], arrived: dt.date, english: bool, until: bool) -> dt.date | None:
    g = match.groupdict()
    if g["iy"]:
        return _make(int(g["iy"]), int(g["im"]), int(g["id"]), arrived)
    if g["na"]:
        a, b = int(g["na"]), int(g["nb"])
        year = int(g["ny"]) if g["ny"] else None
        if g["sep"] == "/" and english:  # month/day in English, unless only day/month is possible
            readings = {_make(year, m, d, arrived) for m, d in ((a, b), (b, a)) if 1 <= m <= 12}
            plausible = {r for r in readings if r is not None and arrived - dt.timedelta(days=1) <= r}
            if len(plausible) != 1:
                return None
            return plausible.pop()
        return _make(year, b, a, arrived) if 1 <= b <= 12 else None
    if g["dd"]:
        month = _MONTHS.get(g["dm"].rstrip("."))
        return _make(int(g["dy"]) if g["dy"] else None, month, int(g["dd"]), arrived) if month else None
    if g["mm"]:
        month = _MONTHS.get(g["mm"].rstrip("."))
        return _make(int(g["my"]) if g["my"] else None, month, int(g["md"]), arrived) if month else None
    weekday = _WEEKDAYS[g["wd"]]
    ahead = (weekday - arrived.weekday()) % 7
    if ahead == 0 and not until:
        ahead = 7
    return arrived + dt.timedelta(days=ahead)
