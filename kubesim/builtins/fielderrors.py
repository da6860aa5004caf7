"""The API server's field errors (apimachinery `field.Required`, `Invalid`, `NotFound`…) as `Cause`s, worded
as `field.Error.ErrorBody` words them, and the string checks of apimachinery's `util/validation` with
their messages. Pure; the built-in kinds' validation builds on them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from kubesim.errors import Cause


def shown(value: Any) -> str:
    """A bad value as Go prints it: strings quoted (`%q`), numbers and booleans bare, the rest as JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def required(path: str, detail: str = "") -> Cause:
    return Cause(path, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired")


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {shown(value)}: {detail}", "FieldValueInvalid")


def not_found(path: str, value: Any) -> Cause:
    return Cause(path, f"Not found: {shown(value)}", "FieldValueNotFound")


def invalids(path: str, value: Any, problems: Iterable[str]) -> list[Cause]:
    """One Invalid cause for each problem a check found with `value` (none when it found none)."""
    return [invalid(path, value, problem) for problem in problems]


def duplicate(path: str, value: Any) -> Cause:
    return Cause(path, f"Duplicate value: {shown(value)}", "FieldValueDuplicate")


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}", "FieldValueForbidden")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(shown(choice) for choice in supported)
    return Cause(
        path, f"Unsupported value: {shown(value)}: supported values: {listed}", "FieldValueNotSupported"
    )


def choice(path: str, value: Any, supported: Sequence[str]) -> list[Cause]:
    """A field that must hold one of `supported`: Required while empty, Unsupported when anything else."""
    if value in supported:
        return []
    return [not_supported(path, value, supported) if value else required(path)]


def inclusive_range(low: int, high: int) -> str:
    return f"must be between {low} and {high}, inclusive"


def max_length(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(message: str, pattern: str, *examples: str) -> str:
    shown_examples = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown_examples}regex used for validation is '{pattern}')"


_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(f"^{_DNS_LABEL}$")
_DNS_SUBDOMAIN = _DNS_LABEL + "(\\." + _DNS_LABEL + ")*"
_DNS_SUBDOMAIN_RE = re.compile(f"^{_DNS_SUBDOMAIN}$")
_DNS_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character"
)
_DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)


def dns_label_problems(value: str) -> list[str]:
    """IsDNS1123Label."""
    problems = []
    if len(value) > 63:
        problems.append(max_length(63))
    if not _DNS_LABEL_RE.match(value):
        if _DNS_SUBDOMAIN_RE.match(value):
            problems.append("must not contain dots")
        else:
            problems.append(regex_error(_DNS_LABEL_MESSAGE, _DNS_LABEL, "my-name", "123-abc"))
    return problems


def dns_subdomain_problems(value: str) -> list[str]:
    """IsDNS1123Subdomain (what NameIsDNSSubdomain checks for the names of ConfigMaps, Secrets, nodes…)."""
    problems = []
    if len(value) > 253:
        problems.append(max_length(253))
    if not _DNS_SUBDOMAIN_RE.match(value):
        problems.append(regex_error(_DNS_SUBDOMAIN_MESSAGE, _DNS_SUBDOMAIN, "example.com"))
    return problems


_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_QUALIFIED_NAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)


def qualified_name_problems(value: str) -> list[str]:
    """IsQualifiedName: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        problems = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems = ["prefix part must be non-empty"]
        else:
            problems = [f"prefix part {problem}" for problem in dns_subdomain_problems(prefix)]
    else:
        return [
            "a valid label key "
            + regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part " + max_length(63))
    if not _QUALIFIED_NAME_RE.match(name):
        problems.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME, "MyName", "my.name", "123-abc")
        )
    return problems


_CONFIG_KEY = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(f"^{_CONFIG_KEY}$")


def chdir_prefix_problems(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def config_key_problems(value: str) -> list[str]:
    """IsConfigMapKey."""
    problems = []
    if len(value) > 253:
        problems.append(max_length(253))
    if not _CONFIG_KEY_RE.match(value):
        message = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        problems.append(regex_error(message, _CONFIG_KEY, "key.name", "KEY_NAME", "key-name"))
    return problems + chdir_prefix_problems(value)


def env_var_name_problems(value: str) -> list[str]:
    """IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, GA and always on since 1.34)."""
    problems = []
    if not value:
        problems.append("environment variable name must be non-empty")
    if any(ord(char) > 127 or not char.isprintable() or char == "=" for char in value):
        problems.append(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
        )
    return problems


_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")


def port_name_problems(value: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME, at most 15 characters of [-a-z0-9] with a letter."""
    problems = []
    if len(value) > 15:
        problems.append(max_length(15))
    if not _PORT_NAME_CHARS.match(value):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        problems.append("must contain at least one letter (a-z)")
    if "--" in value:
        problems.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def port_number_problems(value: object) -> list[str]:
    """IsValidPortNum."""
    return [] if isinstance(value, int) and 1 <= value <= 65535 else [inclusive_range(1, 65535)]
