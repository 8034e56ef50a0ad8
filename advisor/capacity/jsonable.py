"""Turn result dataclasses into plain JSON values.

Every field goes out under its own name; numpy scalars become Python numbers
and non-finite floats become null, so `json.dumps` never sees anything it
cannot write and a consumer never sees NaN.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        extra = getattr(value, "json_extra", None)
        if callable(extra):
            out.update({k: to_jsonable(v) for k, v in extra().items()})
        return out
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "item") and not isinstance(value, (list, dict)):
        value = value.item()  # numpy scalar
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value
