"""Tool catalogues on the Django side: importing a server's tools, their pins, the import's
state, and trying a tool from the admin.

- ``imports``: the import itself (``import_catalogue``);
- ``pins``: the pinned definitions and their review (``review``, ``accept_definition``),
  enabling and disabling tools;
- ``import_state``: queued / running / idle for the admin, a stalled run read as stalled;
- ``trial``: the admin's "Try tool" (through ``tools.execute``, so the ledger records it).

The tasks that run imports off the request stay in ``nr_llm.tasks``: a queued task is named
by its dotted path, and the operator guide tells sites to use those names.

This module is the package's face: what the rest of the app and the docs import is named here.
"""

from .features import (
    FeatureReport,
    accept_feature_definition,
    disable_features,
    enable_features,
    import_features,
)
from .imports import (
    MAX_DESCRIPTION,
    MAX_RAW_PART_BYTES,
    MAX_TITLE,
    MAX_TOOLS,
    CatalogueClient,
    ChangedDefinition,
    ImportProgress,
    ImportReport,
    import_catalogue,
    raw_definition,
)
from .pins import (
    PARTS,
    Switched,
    accept_definition,
    changed_parts,
    disable_tools,
    enable_tools,
    fingerprint,
    review,
)

__all__ = [
    "FeatureReport",
    "accept_feature_definition",
    "disable_features",
    "enable_features",
    "import_features",
    "MAX_DESCRIPTION",
    "MAX_RAW_PART_BYTES",
    "MAX_TITLE",
    "MAX_TOOLS",
    "PARTS",
    "CatalogueClient",
    "ChangedDefinition",
    "ImportProgress",
    "ImportReport",
    "Switched",
    "accept_definition",
    "changed_parts",
    "disable_tools",
    "enable_tools",
    "fingerprint",
    "import_catalogue",
    "raw_definition",
    "review",
]
