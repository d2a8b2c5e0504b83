"""Unsubscribe requests written in a reply, in English, German, French and Spanish.

Only the person's own words count (`quotes.own_text`): the quoted original holds our own unsubscribe line.
Two rules, on the text lower-cased with accents removed:

1. **A phrase** in the first 1,000 characters: "unsubscribe me", "please unsubscribe", "remove me
   from your list", "take me off your list", "stop emailing me", "do not contact me", "abmelden", "bitte
   aus dem Verteiler nehmen", "keine weiteren E-Mails", "désinscrire", "retirez-moi de votre liste", "ne
   plus recevoir", "darme de baja", "no me envíen más correos", ... (the patterns below).
2. **A short reply that is a keyword** ("STOP", "Unsubscribe!", "remove please", "Abmelden", "baja"): at
   most six words, a keyword and only polite filler beside it. "Stop by our booth" or a longer text with
   "stop" in it ("I can't stop thinking about it") is not a request.
"""

from __future__ import annotations

import re

from outreach_core.inbox.rules.folding import fold

__all__ = ["find_unsubscribe_request"]

SCAN_LIMIT = 1000
"""Only the start of the reply is read: requests come first, company footers ("unsubscribe from our
newsletter") come last."""
_SHORT_WORDS = 6

_PHRASES = re.compile(
    "|".join(
        (
            # English
            r"\b(?:please |pls |kindly |just |can you |could you |would you )unsubscribe\b",
            r"\bunsubscribe (?:me|us|this|my)\b",
            r"\b(?:want|wish|like|need) to (?:be )?unsubscribe",
            r"\bhow (?:do|can) i unsubscribe",
            r"^\W*unsubscribe\b",
            r"\bremove (?:me|us|my (?:e-?mail|address|name|details|contact)|this (?:e-?mail|address))\b",
            r"\b(?:take|get|drop|strike) (?:me|us|my (?:e-?mail|address|name)) (?:off|from|out of)\b",
            r"\bopt(?:ing)?[ -]?(?:me |us )?out\b",
            r"\bstop (?:e-?mailing|mailing|contacting|sending|writing|messaging|spamming|bothering"
            r"|emailing)\b",
            r"\b(?:do not|don't|dont|never|please don't|pls don't) (?:e-?mail|contact|write|message|mail"
            r"|send)"
            r" (?:me|us|to me|to us|this address|any more|anymore|again)",
            r"\bno (?:more|further) (?:e-?mails|emails|mails|messages|contact|communication)",
            r"\bleave me alone\b",
            r"\bdelete (?:me|my (?:e-?mail|address|data|details)) from\b",
            # German
            r"\babmelden\b",
            r"\bmelden sie mich (?:bitte )?ab\b",
            r"\babbestellen\b",
            r"\baustragen\b",
            r"\btragen sie mich (?:bitte )?aus\b",
            r"\b(?:entfernen|streichen|loschen|nehmen) sie mich\b",
            r"\bmich (?:bitte )?(?:aus|von) (?:ihrem|ihrer|dem|der|eurem|eurer|diesem|dieser|ihren|allen) "
            r"(?:verteiler|liste|mailingliste|newsletter|datenbank|e-?mail-?liste|kontaktliste)",
            r"\b(?:aus|von) (?:ihrem|ihrer|dem|der|eurem|eurer) (?:verteiler|liste|mailingliste"
            r"|datenbank)\w* "
            r"(?:entfernen|streichen|nehmen|loschen|austragen)",
            r"\bkeine (?:weiteren |weitere )?(?:e-?mails|mails|nachrichten|zusendungen|werbung"
            r"|kontaktaufnahme)",
            r"\b(?:nicht mehr|nie wieder) (?:kontaktieren|anschreiben|schreiben|mailen|anmailen|zuschicken"
            r"|zusenden)",
            r"\b(?:kontaktieren|schreiben|mailen) sie mich (?:bitte )?(?:nicht|nie)",
            # French
            r"\bdesinscri(?:re|vez|ption|vez-moi|s-moi|bez)",
            r"\bdesabonn",
            r"\b(?:retirez|supprimez|enlevez|effacez|rayez|sortez)[- ]moi\b",
            r"\bme (?:retirer|supprimer|desinscrire|desabonner|rayer|enlever|sortir) de\b",
            r"\bne (?:me |m')?(?:contactez|ecrivez|envoyez|sollicitez|relancez) plus\b",
            r"\bne (?:\w+ )?plus (?:recevoir|etre (?:contacte|sollicite))",
            r"\barret(?:ez|er) (?:de m'ecrire|de me contacter|de m'envoyer|les (?:mails|e-?mails|envois))",
            # Spanish
            r"\bdar(?:me|nos)? de baja\b",
            r"\bden(?:me)? de baja\b",
            r"\bdarse de baja\b",
            r"\b(?:elimin|borr|quit|sac|retir)\w* de (?:su|la|tu|sus|tus|vuestra|vuestras|esta|las) (?:lista"
            r"|base)",
            r"\bno (?:me )?(?:envien|envies|escriban|escribas|contacten|contactes|manden|mandes) mas\b",
            r"\bno (?:me )?(?:vuelvan|vuelvas) a (?:escribir|contactar|enviar)",
            r"\bno (?:quiero|deseo) (?:recibir|que me) mas\b",
            r"\bno (?:quiero|deseo) recibir (?:mas )?(?:correos|mensajes|emails|e-?mails)",
            r"\bcancelar (?:la |mi )?suscripcion\b",
            r"\bdesuscribir(?:me)?\b",
            r"\bdesinscribir(?:me)?\b",
        )
    )
)
_KEYWORDS = frozenset(
    {
        "stop", "unsubscribe", "remove", "stopp", "abmelden", "austragen", "baja", "arret", "arreter",
        "stoppen", "desabonner", "desinscrire", "desinscribir", "desuscribir", "unsub", "optout", "opt-out",
    }
)  # fmt: skip
# Words that may stand beside a keyword in a short request ("STOP please", "remove me, thanks").
_FILLERS = frozenset(
    {
        "please", "pls", "plz", "thanks", "thank", "you", "thx", "me", "us", "now", "it", "asap", "right",
        "immediately",
        "this", "all", "emails", "email", "e-mails", "mails", "mail", "messages", "sending", "from", "list",
        "the", "my", "address", "ok", "okay", "and", "no", "more", "bitte", "danke", "sofort", "mich", "uns",
        "merci", "svp", "s'il", "vous", "plait", "moi", "por", "favor", "gracias", "de", "la", "lista", "mas",
        "je", "veux", "quiero", "darme", "und", "et", "y", "hi", "hello", "hallo", "bonjour", "hola", "yes",
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z][a-z'-]*")


def find_unsubscribe_request(own: str) -> str | None:
    """The words that make `own` (the reply's own text, quotes removed) an unsubscribe request, or None."""
    folded = fold(own[:SCAN_LIMIT])
    match = _PHRASES.search(folded)
    if match is not None:
        return match.group(0)
    words: list[str] = [w.strip("'-") for w in _WORD.findall(folded)]
    if 0 < len(words) <= _SHORT_WORDS:
        keywords = [w for w in words if w in _KEYWORDS]
        if keywords and all(w in _KEYWORDS or w in _FILLERS for w in words):
            return keywords[0]
    return None
