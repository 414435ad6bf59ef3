"""The JetStream wire API: the ``$JS.API.*`` handlers (``router`` routes a message sent
into JetStream to ``streams``, ``consumers``, ``direct``, ``snapshot`` or a capturing
stream), every request body's Go type (``requests``) and the response types (``schemas``).

The API errors are ``jsstore.wire.apierrors``, generated from ``apierrors.json`` (see
``tools/gen_api_errors.py``); ``ApiError`` and ``ERRORS_BY_CODE`` are here too.
"""

from jsstore.wire.apierrors import ERRORS_BY_CODE, ApiError

__all__ = ["ApiError", "ERRORS_BY_CODE"]
