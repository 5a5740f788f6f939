"""Keeping variable values (secrets) out of text bound for a model, a log, a file or an error.

One redaction for every channel: :func:`redact_text` turns a value, and the echoes a page can
make of it, back into its ``%name%`` placeholder. The rules are in its docstring. The model
client's logs, errors and cassettes go through :class:`Redactor` (values without names, as
``%secret%``): secrets reach the model (it may need a value to type it), but never a log file,
an error message or a log record, which outlive the run and get pasted into bug reports.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import re
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyotp
from pydantic import BaseModel

from ._errors import InvalidArgumentError

if TYPE_CHECKING:  # _types reaches the LLM layer, whose tracing imports this module
    from ._types import VariableValue

__all__ = ["REDACTED", "SECRET_PLACEHOLDER", "SHORT_VALUE", "Redactor", "Secret", "VariableSet", "redact_secrets",
           "redact_text", "secret_forms", "variable_value"]


#: Variable values shorter than this are redacted from page text only as whole tokens (and
#: anywhere inside an input's ``value="..."``): see :func:`redact_text`.
SHORT_VALUE = 4
#: An input's value on an outline line (``_quote`` in the snapshot: ``"`` escaped as ``\\"``).
_VALUE_ATTR = re.compile(r'value="(?:[^"\\]|\\.)*"')
#: While redacting, value number ``n`` stands as ``U+FDD0, chr(_MARK_BASE + n), U+FDD1``:
#: Unicode noncharacters around a plane-15 private-use character, so no later token match
#: (no letter or digit in it) and no page text can touch it.
_MARK_OPEN, _MARK_CLOSE, _MARK_BASE = "\ufdd0", "\ufdd1", 0xF0000
_MARK = re.compile(f"{_MARK_OPEN}(.){_MARK_CLOSE}")
#: The name a value with no variable name (an API key, a secret message part) is redacted as:
#: the same ``%name%`` style as every variable, so a log, a cassette and a prompt read alike.
SECRET_PLACEHOLDER = "%secret%"


@dataclass(frozen=True, repr=False)
class Secret:
    """A variable value with rules about where it may go: ``variables={"pw": Secret("...",
    origins=["https://login.example.com"])}``.

    - ``origins``: the only origins (``scheme://host[:port]``) of the frame whose field may
      receive it; an act that would type it anywhere else is refused with
      :class:`SecretPlacementError`, whatever the model chose. Empty: anywhere (as a plain value).
    - ``field``: a selector the receiving element must match in its own document (CSS, or
      ``xpath=...``; ``css=`` may be written), checked from Playwright's utility world before any
      key is sent; any other element is refused with :class:`SecretPlacementError`. Empty: any
      field (of the allowed origins).
    - ``totp=True``: ``value`` is a base32 TOTP seed (RFC 6238, 30 s, 6 digits, as
      authenticator apps use); what gets typed is the code current at the moment of typing.
      The seed and the codes around now are redacted wherever a value would be.
    - ``description``: what the model is told about the variable (never the value).

    Its ``repr`` and ``str`` never show the value.
    """

    value: str
    origins: Sequence[str] = field(default=(), kw_only=True)
    totp: bool = field(default=False, kw_only=True)
    description: str = field(default="", kw_only=True)
    field: str = field(default="", kw_only=True)  # last: from here on, `field` in this body is this attribute

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value:
            raise InvalidArgumentError("Secret(value) must be a non-empty string.")
        if not isinstance(self.field, str) or (self.field and not self.field.strip()):
            raise InvalidArgumentError(
                f"Secret(field=...) must be a CSS selector or 'xpath=...' naming the one field the value may be typed "
                f"into (e.g. field='#password'), not {type(self.field).__name__} {self.field!r}.")
        if isinstance(self.origins, str):
            object.__setattr__(self, "origins", (self.origins,))
        object.__setattr__(self, "origins", tuple(self.origins))
        if self.totp:
            try:
                pyotp.TOTP(self.value).now()
            except Exception:  # binascii.Error, TypeError: a seed that is not base32
                raise InvalidArgumentError(
                    "Secret(totp=True) needs the base32 seed an authenticator app is given (e.g. 'JBSWY3DPEHPK3PXP')."
                ) from None

    def __repr__(self) -> str:
        return f"Secret(origins={list(self.origins)!r}, totp={self.totp}" + (f", field={self.field!r})" if self.field else ")")

    __str__ = __repr__

    def typed_value(self) -> str:
        """What is typed now: the value, or for a TOTP seed the current code."""
        return pyotp.TOTP(self.value).now() if self.totp else self.value


def secret_forms(spec: object) -> list[str]:
    """Every string of a variable that must be redacted: its value, and for a TOTP seed the
    seed and the codes of the previous, current and next 30-second steps."""
    if isinstance(spec, Secret) and spec.totp:
        totp, now = pyotp.TOTP(spec.value), time.time()
        return [spec.value, *(totp.at(now + step * 30) for step in (-1, 0, 1))]
    return [variable_value("", spec)]


def variable_value(name: str, spec: object) -> str:
    """The string a variable stands for (a TOTP :class:`Secret`: the current code); raises
    (naming only ``name``) for unusable values."""
    if isinstance(spec, Secret):
        return spec.typed_value()
    if isinstance(spec, Mapping):
        if "value" not in spec:
            raise InvalidArgumentError(
                f"variable {name!r} is a mapping without a 'value' key; pass "
                f"{{'value': ..., 'description': ...}} or the plain value."
            )
        spec = spec["value"]
    if isinstance(spec, bool) or not isinstance(spec, (str, int, float)):
        raise InvalidArgumentError(
            f"variable {name!r} must be a str, int, float or Secret (or {{'value': ..., 'description': ...}}); "
            f"got a {type(spec).__name__}."
        )
    return str(spec)


def redact_text(text: str, variables: Mapping[str, VariableValue]) -> str:
    """``text`` (page text bound for a model) with variable values replaced by ``%name%``.

    The rule, secrecy first:

    - a value of :data:`SHORT_VALUE` (4) characters or more is replaced wherever it occurs, and
      so are the echoes a page can make of it: upper/lower case, URL-encoded, HTML-escaped,
      base64, or split by invisible (zero-width) characters, which page text loses first;
    - a shorter value (``"1"``, ``"a"``) is replaced only as a whole token, i.e. where no
      letter, digit or underscore touches it on either side (``Step 1 of 3`` -> ``Step %pin%
      of 3``, but ``101`` and ``Plan`` stay), and anywhere inside an input's ``value="..."``
      on an outline line, where a typed value shows (``value="x1y"`` -> ``value="x%pin%y"``).
      Replacing every ``a`` of a page would garble the prompt and hide nothing: a one-letter
      value cannot be recognised inside other words anyway.

    Values are also matched as the outline writes them inside ``value="..."`` (white space
    folded, ``"`` escaped). Longer values go first, and text already replaced is never looked
    at again, so one value inside another, or a value equal to a variable's name, cannot
    produce a broken or doubled placeholder.
    """
    if not variables or not text:
        return text
    names: dict[str, str] = {}
    for name, spec in variables.items():
        variable_value(name, spec)  # an unusable value raises, naming the variable
        for value in secret_forms(spec):
            if value:
                names.setdefault(value, name)
    return _redact(text, names)


def redact_secrets(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` (secrets without a variable name: API keys, secret
    message parts, values the LLM layer was handed) replaced by :data:`SECRET_PLACEHOLDER`,
    under the same rules as :func:`redact_text`."""
    names = {str(v): SECRET_PLACEHOLDER.strip("%") for v in values if str(v)}
    return _redact(text, names) if names and text else text


#: What a secret becomes in logs, errors and cassettes: ``%secret%``, the library's one
#: placeholder style (a variable's own value shows as ``%name%``).
REDACTED = SECRET_PLACEHOLDER


class Redactor:
    """Replaces every secret value, and the echoes :mod:`stagehand_py._secrets` matches (case,
    URL/HTML encoding, base64, Unicode forms, zero-width characters), by :data:`REDACTED`.

    Longer secrets are replaced first so that a secret containing another is not left half
    visible. Empty strings are ignored (they would match everywhere).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {str(s) for s in secrets if str(s)}
        self._secrets: tuple[str, ...] = tuple(sorted(values, key=len, reverse=True))

    @property
    def active(self) -> bool:
        return bool(self._secrets)

    def with_extra(self, secrets: Iterable[str]) -> Redactor:
        return Redactor((*self._secrets, *secrets))

    def text(self, value: str) -> str:
        return redact_secrets(value, self._secrets) if self._secrets else value

    def data(self, value: Any) -> Any:
        """Redact a JSON-like structure (and pydantic models, dumped first)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, BaseModel):
            return self.data(value.model_dump(mode="json"))
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def exception(self, exc: BaseException) -> None:
        """Redact an exception and its whole cause chain in place.

        Provider SDK errors often echo the offending input; mutating ``args`` (and the
        ``message``/``body``/``last_output`` attributes our and the SDKs' errors carry) keeps
        secrets out of ``str(exc)`` and out of printed tracebacks.
        """
        if not self._secrets:
            return
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            current.args = tuple(self.data(a) if isinstance(a, str | dict | list | tuple) else a for a in current.args)
            for attr in ("message", "body", "details", "last_output"):  # details: google-genai's APIError
                if hasattr(current, attr):
                    try:
                        setattr(current, attr, self.data(getattr(current, attr)))
                    except AttributeError:  # read-only property
                        pass
            current = current.__cause__ or current.__context__


#: A variable name: what ``%name%`` can refer to.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class VariableSet:
    """The variables of one call, built once where the call comes in (:meth:`of`) and the only
    form the layers below read:

    - the values a ``%name%`` placeholder may name (:meth:`value`: a TOTP seed gives the code of
      the moment), and what the model may know of each (:attr:`descriptions`, never a value);
    - where each may be typed (:meth:`placement`: a :class:`Secret` bound to origins or a field);
    - every value to hide (:meth:`redact`, :meth:`secret_values`): every variable's value is
      secret, this call's and, for a :class:`~stagehand_py.Stagehand`, those of its earlier calls
      (:meth:`remembering`), since a page may still show a value typed minutes ago;
    - which values may be typed while a Playwright trace the user started records
      (:meth:`may_enter_trace`: only those the user named, :meth:`allowing_in_trace`).

    Its ``repr`` shows names only.
    """

    __slots__ = ("_given", "_hidden", "_traceable")

    def __init__(self, given: Mapping[str, object], hidden: Mapping[str, object],
                 traceable: frozenset[str] = frozenset()) -> None:
        # Private: use VariableSet.of(), which checks what it is given.
        self._given: dict[str, object] = dict(given)
        self._hidden: dict[str, object] = dict(hidden)
        self._traceable = traceable

    @classmethod
    def of(cls, variables: object, *, what: str = "variables") -> VariableSet:
        """The set of ``variables`` (None: none; a set: itself), after the check every entry point
        makes: a mapping of placeholder names to a str, int, float, ``{"value": ..., "description":
        ...}`` or :class:`Secret`. Raises :class:`InvalidArgumentError` naming ``what`` and the
        variable, never a value."""
        if variables is None:
            return _EMPTY
        if isinstance(variables, VariableSet):
            return variables
        if not isinstance(variables, Mapping):
            # A list or a string here used to fail deep inside with AttributeError or ValueError.
            raise InvalidArgumentError(
                f"{what}: variables must be a mapping of name -> value (or -> {{'value': ..., 'description': ...}}), "
                f"not a {type(variables).__name__}: e.g. variables={{'username': 'ada'}}.")
        for name, spec in variables.items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise InvalidArgumentError(
                    f"{what}: variable name {name!r} cannot be used as a placeholder; names must match "
                    "[A-Za-z_][A-Za-z0-9_]* so that %name% can refer to them.")
            try:
                variable_value(name, spec)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"{what}: {exc}") from None
        return cls(variables, variables)

    def remembering(self, earlier: VariableSet) -> VariableSet:
        """This set, hiding also every value ``earlier`` hides. A name given again with another
        value keeps the earlier value hidden as ``<name>_was<n>``: the page may still show it."""
        hidden = dict(earlier._hidden)
        for name, spec in self._given.items():
            before = hidden.get(name)
            if before is not None and variable_value(name, before) != variable_value(name, spec):
                n = 1
                while f"{name}_was{n}" in hidden:
                    n += 1
                hidden[f"{name}_was{n}"] = before
            hidden[name] = spec
        return VariableSet(self._given, hidden, self._traceable | earlier._traceable)

    def only(self, names: Iterable[str]) -> VariableSet:
        """The variables named in ``names`` (unknown names skipped), hiding only their values."""
        given = {name: self._given[name] for name in names if name in self._given}
        return VariableSet(given, given, self._traceable)

    def allowing_in_trace(self, names: Iterable[str]) -> VariableSet:
        """This set, whose variables named in ``names`` may be typed while a trace the user
        started records (``Stagehand(allow_secrets_in_trace=...)``)."""
        if isinstance(names, str) or not all(isinstance(name, str) for name in names):
            raise InvalidArgumentError(f"allow_secrets_in_trace takes a list of variable names, e.g. ['password'], not {names!r}.")
        return VariableSet(self._given, self._hidden, self._traceable | frozenset(names))

    def may_enter_trace(self, name: str) -> bool:
        """Whether the value of ``name`` may be typed into a page while a Playwright trace the
        user started (and stagehand_py cannot scrub) records it: only when the user said so by name."""
        return name in self._traceable

    @property
    def given(self) -> dict[str, VariableValue]:
        """This call's variables as the caller wrote them (to hand on to a public verb)."""
        return dict(self._given)  # type: ignore[arg-type]  # checked by of()

    @property
    def names(self) -> list[str]:
        return sorted(self._given)

    def __contains__(self, name: object) -> bool:
        return name in self._given

    def __bool__(self) -> bool:
        return bool(self._given)

    def __repr__(self) -> str:
        return f"VariableSet(names={self.names!r}, hidden={len(self._hidden)})"

    @property
    def descriptions(self) -> dict[str, str]:
        """``{name: description}``: all the model may know of each variable (``""`` for a plain value)."""
        described: dict[str, str] = {}
        for name, spec in self._given.items():
            text = spec.get("description", "") if isinstance(spec, Mapping) else getattr(spec, "description", "")
            described[name] = str(text or "")
        return described

    def value(self, name: str) -> str:
        """The string ``%name%`` stands for now (a TOTP secret: the current code)."""
        return variable_value(name, self._given[name])

    def placement(self, name: str) -> Secret | None:
        """The :class:`Secret` of ``name`` when it is bound to origins or a field, else None."""
        spec = self._given.get(name)
        return spec if isinstance(spec, Secret) and (spec.origins or spec.field) else None

    def redact(self, text: str) -> str:
        """``text`` with every hidden value and its echoes as ``%name%`` (:func:`redact_text`)."""
        return redact_text(text, self._hidden) if self.hides_anything else text  # type: ignore[arg-type]  # checked by of()

    def redact_data(self, value: Any) -> Any:
        """``value`` (JSON-like: strings, mappings, lists) with every string redacted, keys too;
        anything else as it is."""
        if not self.hides_anything:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.redact(str(k)): self.redact_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_data(v) for v in value]
        return value

    @property
    def hides_anything(self) -> bool:
        """False when there is no value to hide (none given, or only empty ones): no redaction pass needed."""
        return any(variable_value(name, spec) for name, spec in self._hidden.items())

    def secret_values(self) -> list[str]:
        """Every string to hide (values, TOTP seeds and codes around now): unique, longest first,
        for the layers that redact without names (the model client's logs, Playwright's text)."""
        values = {form for spec in self._hidden.values() for form in secret_forms(spec)}
        return sorted((v for v in values if v), key=lambda v: (-len(v), v))


_EMPTY = VariableSet({}, {})


def _redact(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each value in ``names`` (value -> variable name) and its echoes redacted."""
    order = sorted(names, key=lambda v: (-len(v), v))
    if _MARK_OPEN in text or _MARK_CLOSE in text:
        text = text.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "")  # noncharacters: never meaningful text
    # Element ids ("[0-1] ") are ours, not the page's: a PIN "1" must not turn "[0-1]" into
    # "[0-%pin%]" (the model could no longer name the element). Odd parts are ids, kept as is.
    parts = _ID_PREFIX.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _mark_values(parts[i], order)
    text = "".join(parts)
    return _MARK.sub(lambda m: f"%{names[order[ord(m.group(1)) - _MARK_BASE]]}%", text)


#: The id at the start of an outline line.
_ID_PREFIX = re.compile(r"(?m)^( *\[\d+-\d+\])")


#: Invisible characters a page can put inside an echo of a value to dodge an exact match; they
#: carry nothing a model needs, so page text loses them before values are looked for.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]")


@functools.lru_cache(maxsize=256)
def _echo_pattern(value: str) -> re.Pattern[str]:
    """Every common transformation of ``value`` a page may echo: Unicode normal forms (composed,
    decomposed, compatibility: a full-width copy), any letter case, every URL form (see
    :func:`_url_form`), JSON string escaping, HTML escaping, base64 (standard and URL-safe, with
    or without padding), and the outline's own quoting."""
    encoded = base64.b64encode(value.encode()).decode()
    forms = {
        *(unicodedata.normalize(form, value) for form in ("NFC", "NFD", "NFKC", "NFKD")),
        value, " ".join(value.split()).replace('"', '\\"'), html.escape(value), encoded, encoded.rstrip("="),
        json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
        encoded.replace("+", "-").replace("/", "_"), encoded.replace("+", "-").replace("/", "_").rstrip("="),
    }
    alternatives = [re.escape(f) for f in sorted((f for f in forms if f), key=len, reverse=True)]
    return re.compile("|".join([_url_form(value), *alternatives]), re.IGNORECASE)


def _url_form(value: str) -> str:
    """A pattern for ``value`` as any URL writer leaves it: each character raw or percent-encoded
    (UTF-8, either hex case), also twice (``%2540``: a URL inside another URL's query), and a space
    also as ``+``, a line break also as ``%0D%0A``. That one pattern covers what differs between
    writers: Chromium's GET form (``application/x-www-form-urlencoded``: ``+`` for space, ``*``
    raw, ``~`` and ``!`` encoded), ``encodeURIComponent`` (``%20``, ``!'()*~`` raw),
    ``encodeURI`` and the URL parser (``@ ! $ & ' ( ) * + , ; = : /`` raw), and
    ``history.replaceState`` (whatever the page wrote), without listing each writer's table."""
    parts = []
    for char in value:
        encoded = "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
        options = [re.escape(char), re.escape(encoded), re.escape(encoded.replace("%", "%25"))]
        if char == " ":
            options.append(r"\+")
        elif char == "\n":
            options += ["%0D%0A", "%250D%250A"]
        parts.append(f"(?:{'|'.join(options)})")
    return "".join(parts)


def _mark_values(text: str, order: list[str]) -> str:
    text = _INVISIBLE.sub("", text)
    for n, value in enumerate(order):
        mark = f"{_MARK_OPEN}{chr(_MARK_BASE + n)}{_MARK_CLOSE}"
        quoted = " ".join(value.split()).replace('"', '\\"')
        if len(value) >= SHORT_VALUE:
            pattern = _echo_pattern(value)
            text = pattern.sub(mark, text)
            # A look-alike echo (full-width letters, ligatures): only where one hides a value does
            # the text get folded to its compatibility form, so other page text stays as written.
            folded = unicodedata.normalize("NFKC", text)
            if folded != text and pattern.search(folded):
                text = pattern.sub(mark, folded)
            continue

        def in_value(m: re.Match[str], value: str = value, quoted: str = quoted, mark: str = mark) -> str:
            inner = m.group(0)[len('value="') : -1].replace(value, mark)
            return f'value="{inner.replace(quoted, mark) if quoted else inner}"'

        text = _VALUE_ATTR.sub(in_value, text)
        text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", mark, text)
    return text
