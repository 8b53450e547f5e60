"""A JSON Schema (draft 2020-12) document as an OpenAPI 3.0 Schema Object, for the API's documentation.

OpenAPI 3.0 knows neither ``$defs`` (ReDoc stops at "Invalid reference token: $defs") nor the
null type, ``const``, numeric ``exclusiveMinimum`` or the conditional keywords. The projection
inlines every ``#/$defs/...`` reference, turns a ``{"type": "null"}`` alternative into
``nullable``, ``const`` into a one-value ``enum`` and drops what 3.0 cannot say (``if``/``then``/
``else``, ``propertyNames``, ``contains``). The server validates against the full JSON Schema, so
the documentation may accept a little more than the server does, never less.
"""

from __future__ import annotations

from typing import Any

_DROPPED = frozenset({"$schema", "$id", "$defs", "if", "then", "else", "propertyNames", "contains"})
_NULL = {"type": "null"}


def openapi_schema_from_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as an OpenAPI 3.0 Schema Object; raises ValueError on a reference it cannot resolve."""
    definitions: dict[str, Any] = schema.get("$defs", {})

    def project(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [project(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        node = dict(node)
        ref = node.pop("$ref", None)
        if ref is not None:
            name = ref.removeprefix("#/$defs/")
            if name == ref or name not in definitions or name in seen:
                raise ValueError(f"cannot inline the reference {ref!r}")
            # A description beside the reference is the more specific one.
            node = {**definitions[name], **node}
            return project(node, (*seen, name))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "const":
                out["enum"] = [value]
            elif key in {"exclusiveMinimum", "exclusiveMaximum"} and not isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                out[bound] = value
                out[key] = True
            elif key in {"properties", "patternProperties"}:
                out[key] = {name: project(child, seen) for name, child in value.items()}
            elif key in {"oneOf", "anyOf"} and _NULL in value:
                rest = [alternative for alternative in value if alternative != _NULL]
                out["nullable"] = True
                if len(rest) == 1:
                    out.update(project(rest[0], seen))
                else:
                    out[key] = project(rest, seen)
            else:
                out[key] = project(value, seen)
        return out

    return project(schema, ())
