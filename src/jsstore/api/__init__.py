"""The JetStream wire API: request and response types and the API errors.

``jsstore.api.errors`` is generated from ``errors.json`` (see ``tools/gen_api_errors.py``).
"""

from jsstore.wire.apierrors import ERRORS_BY_CODE, ApiError

__all__ = ["ApiError", "ERRORS_BY_CODE"]
