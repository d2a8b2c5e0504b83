"""Parsing of the DNS records the checker reads (pure: no I/O): TXT strings, SPF (RFC 7208), DMARC (RFC 7489),
DKIM keys (RFC 6376, RFC 8463) and MX answers.

`checkdmarc` was looked at for SPF and DMARC and not used (docs/deliverability.md): it makes its own
synchronous DNS queries inside its parsers, so it cannot share our port, cache, per-query timeouts and
`OUTREACH_DNS_NAMESERVERS` (with a port), nor run the lookups of one check concurrently.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(\d{3}|.)")


def txt_text(answer: str) -> str:
    """A TXT record as dnspython writes it (`"v=spf1 " "-all"`: quoted strings, escapes) as one string:
    the strings joined without a separator (RFC 7208 section 3.3)."""
    parts = _QUOTED.findall(answer)
    if not parts:
        return answer

    def unescape(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code)) if code.isdigit() else code

    return "".join(_ESCAPE.sub(unescape, p) for p in parts)


# --- MX -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MxHost:
    preference: int
    host: str  # without the final dot, lower case; "" for a null MX ("0 .")


def parse_mx(answers: list[str]) -> list[MxHost]:
    """MX answers (`"10 mx.example.com."`) by preference; unreadable answers are left out."""
    hosts = []
    for answer in answers:
        parts = answer.split()
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        hosts.append(MxHost(int(parts[0]), parts[1].rstrip(".").lower()))
    return sorted(hosts, key=lambda h: (h.preference, h.host))


# --- SPF ----------------------------------------------------------------------------------------------------

LOOKUP_MECHANISMS = ("include", "a", "mx", "ptr", "exists")
_MECHANISMS = ("all", "include", "a", "mx", "ptr", "ip4", "ip6", "exists")


@dataclass(frozen=True)
class SpfTerm:
    qualifier: str  # + - ~ ?
    name: str  # mechanism or modifier name, lower case
    value: str  # after ":" or "=" (or "/" for a / mx with only a prefix length), "" when none
    modifier: bool = False


@dataclass(frozen=True)
class SpfRecord:
    terms: list[SpfTerm] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def all_qualifier(self) -> str | None:
        for t in self.terms:
            if t.name == "all" and not t.modifier:
                return t.qualifier
        return None

    @property
    def redirect(self) -> str | None:
        for t in self.terms:
            if t.modifier and t.name == "redirect":
                return t.value
        return None

    @property
    def includes(self) -> list[str]:
        return [t.value for t in self.terms if not t.modifier and t.name == "include"]


def is_spf(text: str) -> bool:
    """RFC 7208 section 4.5: a record that starts with `v=spf1` followed by a space or nothing."""
    lowered = text.lower()
    return lowered == "v=spf1" or lowered.startswith("v=spf1 ")


def parse_spf(text: str) -> SpfRecord:
    """The terms of an SPF record and its syntax errors (unknown mechanisms, a mechanism that needs a value
    without one, a repeated redirect or exp modifier)."""
    terms: list[SpfTerm] = []
    errors: list[str] = []
    seen_modifiers: set[str] = set()
    for raw in text.split()[1:]:
        qualifier = "+"
        word = raw
        if word[:1] in "+-~?":
            qualifier, word = word[0], word[1:]
        m = re.match(r"^([A-Za-z][A-Za-z0-9_.-]*)=(.*)$", word)
        if m and qualifier == "+" and raw[:1] not in "+-~?":
            name = m.group(1).lower()
            if name in seen_modifiers and name in ("redirect", "exp"):
                errors.append(f"the {name}= modifier appears more than once")
            seen_modifiers.add(name)
            terms.append(SpfTerm("+", name, m.group(2), modifier=True))
            continue
        name, sep, value = word.partition(":")
        if not sep and "/" in word:
            name, _, value = word.partition("/")
            value = "/" + value
        name = name.lower()
        if name not in _MECHANISMS:
            errors.append(f"unknown mechanism {raw!r}")
            continue
        if name in ("include", "exists", "ip4", "ip6") and not value:
            errors.append(f"{name} needs a value ({raw!r})")
            continue
        if name == "all" and value:
            errors.append(f"all takes no value ({raw!r})")
            continue
        terms.append(SpfTerm(qualifier, name, value))
    return SpfRecord(terms, errors)


def spf_records(txts: list[str]) -> list[str]:
    """The SPF records among a name's TXT records (joined strings)."""
    return [t for t in (txt_text(a) for a in txts) if is_spf(t)]


def has_macro(value: str) -> bool:
    return "%" in value


# --- DMARC --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DmarcRecord:
    tags: dict[str, str]
    errors: list[str]

    @property
    def policy(self) -> str | None:
        return self.tags.get("p")

    @property
    def pct(self) -> int:
        try:
            return int(self.tags.get("pct", "100"))
        except ValueError:
            return 100

    @property
    def rua(self) -> list[str]:
        value = self.tags.get("rua", "")
        return [u.strip() for u in value.split(",") if u.strip()]


def is_dmarc(text: str) -> bool:
    return re.match(r"^v\s*=\s*DMARC1\s*(;|$)", text, re.IGNORECASE) is not None


def parse_dmarc(text: str) -> DmarcRecord:
    """Tags of a DMARC record (names lower case) and what is wrong with it (RFC 7489 section 6.3)."""
    tags: dict[str, str] = {}
    errors: list[str] = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep:
            errors.append(f"{part!r} is not a tag=value pair")
            continue
        tags[name] = value.strip()
    policy = tags.get("p")
    if policy is None:
        errors.append("the p= tag (policy) is missing")
    elif policy.lower() not in ("none", "quarantine", "reject"):
        errors.append(f"p={policy} is not none, quarantine or reject")
    else:
        tags["p"] = policy.lower()
    if "sp" in tags and tags["sp"].lower() not in ("none", "quarantine", "reject"):
        errors.append(f"sp={tags['sp']} is not none, quarantine or reject")
    if "pct" in tags and not (tags["pct"].isdigit() and 0 <= int(tags["pct"]) <= 100):
        errors.append(f"pct={tags['pct']} is not a number from 0 to 100")
    for align in ("adkim", "aspf"):
        if align in tags and tags[align].lower() not in ("r", "s"):
            errors.append(f"{align}={tags[align]} is not r or s")
    for uri in DmarcRecord(tags, []).rua:
        if not uri.lower().startswith("mailto:"):
            errors.append(f"rua {uri!r} is not a mailto: address")
    return DmarcRecord(tags, errors)


# --- DKIM ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DkimKey:
    key_type: str  # rsa or ed25519
    bits: int | None  # RSA modulus size; 256 for ed25519; None when revoked
    revoked: bool = False
    error: str | None = None  # malformed: why


def parse_dkim(text: str) -> DkimKey | None:
    """A DKIM key record (`v=DKIM1; k=rsa; p=...`); None when the text is not one (no p= tag)."""
    tags: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            tags[name.strip().lower()] = re.sub(r"\s+", "", value)
    if "p" not in tags:
        return None
    if "v" in tags and tags["v"] != "DKIM1":
        return DkimKey("rsa", None, error=f"v={tags['v']} is not DKIM1")
    key_type = tags.get("k", "rsa").lower()
    if key_type not in ("rsa", "ed25519"):
        return DkimKey(key_type, None, error=f"k={key_type} is not a known key type (rsa or ed25519)")
    if not tags["p"]:
        return DkimKey(key_type, None, revoked=True)
    try:
        raw = base64.b64decode(tags["p"], validate=True)
    except (binascii.Error, ValueError):
        return DkimKey(key_type, None, error="the key (p=) is not valid base64")
    if key_type == "ed25519":
        if len(raw) != 32:
            return DkimKey(key_type, None, error=f"an ed25519 key is 32 bytes, this one is {len(raw)}")
        return DkimKey(key_type, 256)
    bits = _rsa_bits(raw)
    if bits is None:
        return DkimKey(key_type, None, error="the key (p=) is not a readable RSA public key")
    return DkimKey(key_type, bits)


def _rsa_bits(der: bytes) -> int | None:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_der_public_key, load_pem_public_key

    try:
        key = load_der_public_key(der)
    except (ValueError, TypeError):
        # some publish the bare PKCS#1 RSAPublicKey instead of a SubjectPublicKeyInfo
        pem = (
            b"-----BEGIN RSA PUBLIC KEY-----\n" + base64.encodebytes(der) + b"-----END RSA PUBLIC KEY-----\n"
        )
        try:
            key = load_pem_public_key(pem)
        except (ValueError, TypeError):
            return None
    if not isinstance(key, rsa.RSAPublicKey):
        return None
    return int(key.key_size)
